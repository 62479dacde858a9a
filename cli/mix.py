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
        from rlhub.pages import weight_series

        steps, lines = weight_series(rows, top)
        emit_json({"png": str(target), "decisions": len(steps), "lines": list(lines)})
    else:
        typer.echo(str(target))


def render(rows: list[dict[str, Any]], target: Path, top: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from rlhub.pages import plot_weights

    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(plot_weights(rows, top))
