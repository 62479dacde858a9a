"""Mixture commands: ``rlhub mix show MIXTURE`` and ``rlhub mix plot RUN_DIR``.

``plot`` reads ``RUN_DIR/scheduler.jsonl`` (one ``{step, weights}`` line per mixture decision,
written by :func:`rlhub.scheduler.log_weights`) and writes a PNG of every domain's weight over time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from rlhub.cli.common import JsonOpt, emit_json, get_registry, handle_errors

mix_app = typer.Typer(help="Domain mixtures: inspect a mixture config, plot a run's weights.",
                      no_args_is_help=True)


def register(app: typer.Typer) -> None:
    mix_app.command("show")(show)
    mix_app.command("plot")(plot)
    app.add_typer(mix_app, name="mix")


@handle_errors
def show(mixture: Path = typer.Argument(..., help="Mixture YAML or JSON file."),
         json_out: bool = JsonOpt) -> None:
    """Validate a mixture against the installed domains and print its starting weights."""
    from rlhub.scheduler import Scheduler, load_mixture

    registry = get_registry()
    config = load_mixture(mixture, registry)
    weights = Scheduler.from_config(config, registry).weights()
    if json_out:
        emit_json({"config": config, "weights": weights})
        return
    typer.echo(f"strategy {config['strategy']}, {len(weights)} domains", err=True)
    for domain, weight in weights.items():
        typer.echo(f"{weight:8.4f}  {domain}")


@handle_errors
def plot(run_dir: Path = typer.Argument(..., help="Run folder holding scheduler.jsonl."),
         out: Path = typer.Option(None, "--out", help="PNG path [RUN_DIR/scheduler_weights.png]."),
         top: int = typer.Option(12, "--top", min=1,
                                 help="Draw this many domains (highest peak weight); sum the rest."),
         json_out: bool = JsonOpt) -> None:
    """Write a PNG of each domain's weight over training steps."""
    from rlhub.scheduler import read_weights

    rows = read_weights(run_dir)
    target = out or Path(run_dir) / "scheduler_weights.png"
    render(rows, target, top)
    if json_out:
        steps, lines = series(rows, top)
        emit_json({"png": str(target), "decisions": len(steps), "lines": list(lines)})
    else:
        typer.echo(str(target))


def series(rows: list[dict[str, Any]], top: int) -> tuple[list[int], dict[str, list[float]]]:
    """Steps and per-domain weight lines; beyond ``top`` domains the rest become one line."""
    steps = [row["step"] for row in rows]
    domains = list(dict.fromkeys(d for row in rows for d in row["weights"]))
    lines = {d: [float(row["weights"].get(d, 0.0)) for row in rows] for d in domains}
    if len(lines) <= top:
        return steps, lines
    ranked = sorted(lines, key=lambda d: max(lines[d]), reverse=True)
    kept = {d: lines[d] for d in ranked[:top]}
    rest = ranked[top:]
    kept[f"other ({len(rest)} domains)"] = [sum(lines[d][i] for d in rest) for i in range(len(steps))]
    return steps, kept


def render(rows: list[dict[str, Any]], target: Path, top: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, lines = series(rows, top)
    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    for name, values in lines.items():
        ax.plot(steps, values, label=name, linewidth=1.4, drawstyle="steps-post")
    ax.set_xlabel("step")
    ax.set_ylabel("weight")
    ax.set_ylim(bottom=0)
    ax.set_title(f"domain weights ({len(rows)} decisions)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target)
    plt.close(fig)
