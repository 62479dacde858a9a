"""The loop commands: ``eval`` (roll out and score), ``reverify`` (recheck stored rewards), ``report``."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from rlhub.cli.common import (
    JsonOpt,
    console,
    emit_json,
    enforce_lock,
    fail,
    get_registry,
    handle_errors,
    json_object,
    render_run_report,
)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)
    app.command("reverify")(reverify_cmd)
    app.command("report")(report_cmd)


class RichProgress:
    """One rich progress bar per domain plus a total, on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
        from rich.progress import TimeElapsedColumn

        self.bars = Progress(TextColumn("{task.description:<28}"), BarColumn(),
                             MofNCompleteColumn(), TimeElapsedColumn(),
                             console=Console(stderr=True), transient=False)
        self.ids: dict[str, Any] = {}
        self.started = False

    def start(self, totals: dict[str, tuple[int, int]]) -> None:
        self.bars.start()
        self.started = True
        all_total = sum(t for t, _ in totals.values())
        self.ids["*"] = self.bars.add_task("all domains", total=all_total,
                                           completed=sum(d for _, d in totals.values()))
        for domain, (total, done) in totals.items():
            self.ids[domain] = self.bars.add_task(domain, total=total, completed=done)

    def advance(self, traj: Any) -> None:
        self.bars.advance(self.ids[traj.domain])
        self.bars.advance(self.ids["*"])

    def stop(self) -> None:
        if self.started:
            self.bars.stop()


@handle_errors
def eval_cmd(
    mixture: str = typer.Option(..., "--mixture", help="Mixture file (YAML or JSON)."),
    policy: str = typer.Option(..., "--policy", help="builtin:tiny, hf:PATH or openai:URL#MODEL."),
    n: int = typer.Option(8, "-n", min=1, help="Tasks per domain."),
    out: str = typer.Option(..., "--out", help="Run directory or URL (memory://, s3://...)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out."),
    k: int = typer.Option(1, "--k", min=1, help="Samples per task (pass@k)."),
    concurrency: int = typer.Option(32, "--concurrency", min=1, help="Rollouts in flight."),
    split: str = typer.Option("test", "--split", help="Task split."),
    seed: int = typer.Option(0, "--seed", help="Task sampling seed."),
    temperature: float = typer.Option(None, "--temperature", help="Sampling temperature."),
    max_tokens: int = typer.Option(None, "--max-tokens", help="Most tokens per completion."),
    flush_every: int = typer.Option(16, "--flush-every", min=1,
                                    help="Trajectories per committed part."),
    policy_options: str = typer.Option("{}", "--policy-options", help="Policy options as JSON."),
    locked: str = typer.Option(None, "--locked", help="Refuse to run unless this lock matches."),
    json_out: bool = JsonOpt,
) -> None:
    """Roll a policy out over a mixture; write trajectories and metrics.json to --out."""
    from rlhub.errors import StoreError
    from rlhub.evaluate import EvalConfig, run_eval

    registry = get_registry()
    lock_hash = enforce_lock(locked, registry, mixture) if locked else None
    cfg = EvalConfig(mixture=mixture, policy=policy, out=out, n=n, k=k, split=split, seed=seed,
                     concurrency=concurrency, temperature=temperature, max_tokens=max_tokens,
                     resume=resume, flush_every=flush_every, locked=locked, lock_hash=lock_hash,
                     policy_options=json_object(policy_options, "--policy-options"))
    bars = RichProgress()
    try:
        metrics = run_eval(cfg, registry=registry, progress=bars)
    except StoreError as exc:
        fail(str(exc), code=1)
    finally:
        bars.stop()
    if json_out:
        emit_json(metrics)
    else:
        _print_summary(metrics)


def _print_summary(metrics: dict[str, Any]) -> None:
    from rich.table import Column, Table

    k = metrics["overall"]["k"]
    table = Table("tasks", "samples", "pass@1", *([f"pass@{k}"] if k > 1 else []), "first try",
                  "repair gain", "reward", "infra failures")
    table.columns.insert(0, Column("domain", overflow="fold", min_width=24))
    for domain, m in metrics["domains"].items():
        passk = [f"{m['pass@k']:.3f}"] if k > 1 else []
        table.add_row(domain, str(m["n_tasks"]), str(m["n_samples"]), f"{m['pass@1']:.3f}",
                      *passk, f"{m['first_try_pass@1']:.3f}", f"{m['repair_gain']:+.3f}",
                      f"{m['reward_mean']:.3f}", str(m["infra_failures"]))
    out = console(stderr=True)
    out.print(table)
    out.print(f"metrics: {metrics['run']['out']}/metrics.json")


@handle_errors
def reverify_cmd(run_dir: str = typer.Argument(..., help="Run directory or URL."),
                 json_out: bool = JsonOpt) -> None:
    """Recompute every stored reward from its completions; exit 1 on any mismatch."""
    from rlhub.evaluate import reverify

    result = reverify(run_dir, registry=get_registry())
    if json_out:
        emit_json(result)
    else:
        for m in result["mismatches"]:
            typer.echo(f"MISMATCH {json.dumps(m, default=str)}", err=True)
        typer.echo(f"checked {result['checked']} trajectories, "
                   f"{len(result['mismatches'])} mismatches", err=True)
    if result["mismatches"]:
        raise typer.Exit(1)


@handle_errors
def report_cmd(run_dir: str = typer.Argument(..., help="Run directory or URL."),
               out: str = typer.Option(None, "--out", help="Report directory "
                                       "(default RUN_DIR/report)."),
               json_out: bool = JsonOpt) -> None:
    """Render RUN_DIR's HTML report with PNG plots; prints the path of index.html.

    A training run (`rlhub train`) gets held-out before and after, rewards, zero-variance groups
    and the scheduler's weights over steps; an eval run (`rlhub eval`) pass rates, latency and
    example trajectories."""
    kind, path = render_run_report(run_dir, out)
    if json_out:
        emit_json({"run": run_dir, "kind": kind, "index": str(path)})
    else:
        sys.stdout.write(f"{path}\n")
