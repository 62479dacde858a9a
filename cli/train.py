"""``rlhub train CONFIG --backend openrlhf|local``: dispatch a training config to a trainer.

The trainer comes from the ``rlhub_make_trainer(backend, config)`` hook: rlhub answers last for
``openrlhf`` (:mod:`rlhub.integrations.openrlhf.job`) and for ``local`` (the single-machine trainer), and any
plugin can add or take over a backend. The hook receives the config file's mapping plus ``out``,
``submit``, ``locked`` (the lock path, already checked; ``lock_hash`` then holds its hash),
``config_path`` and ``base_dir`` (the config's folder, against which relative paths resolve).

A run that leaves a training run folder (the local trainer's) ends with its report rendered
(``RUN_DIR/report/index.html``, as ``rlhub report RUN_DIR`` would) and a summary for a person
on stdout: held-out reward per domain before and after with the change and its interval, the
time of each phase, trajectories written, guards hit, faults, and where the report and the run
are. ``--json`` prints the summary as JSON instead, alone on stdout (with ``run_dir`` and
``report`` added); progress goes to stderr either way.
"""

from __future__ import annotations

from pathlib import Path
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
    render_run_report,
)
from rlhub.errors import TrainerError, boundary


def register(app: typer.Typer) -> None:
    app.command("train")(train)


def read_config(path: Path) -> dict[str, Any]:
    """The training config at ``path`` as a mapping (YAML or JSON)."""
    import yaml

    try:
        config = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        fail(f"training config {path}: expected a readable YAML file, found {exc}")
    if not isinstance(config, dict):
        fail(f"training config {path}: expected a mapping, found {type(config).__name__}")
    return config


def check_lock(lock: Path, config: dict[str, Any], config_path: Path) -> str:
    """``--locked LOCK``: refuse to run unless rlhub, the installed domains and the config's
    mixture match; the lock's hash."""
    return enforce_lock(str(lock), get_registry(), locked_mixture(config, config_path))


def locked_mixture(config: dict[str, Any], config_path: Path) -> Any:
    """The mixture a training config runs: its ``mixture`` (a path relative to the config, or
    inline), else the config's own mixture fields (the local trainer's configs are mixtures with
    a ``train`` section)."""
    from rlhub.manifest import schema

    mixture = config.get("mixture")
    if isinstance(mixture, dict):
        return mixture
    if isinstance(mixture, str):
        return config_path.resolve().parent / mixture
    return {k: v for k, v in config.items() if k in schema("mixture")["properties"]}


@handle_errors
def train(
    config_path: Path = typer.Argument(..., help="Training config (YAML)."),
    backend: str = typer.Option(None, "--backend", help="Trainer backend: local (single "
                                "machine) or openrlhf [the config's backend, else local]."),
    submit: bool = typer.Option(False, "--submit", help="openrlhf: submit the Ray job instead of "
                                "printing the command."),
    out: Path = typer.Option(None, "--out", help="Run folder [the config's out]."),
    locked: Path = typer.Option(None, "--locked", help="Refuse to run unless the installed "
                                "domains match this lock (`rlhub lock`)."),
    json_out: bool = JsonOpt,
) -> None:
    """Train on a mixture with a trainer backend (see `--backend`)."""
    config = read_config(config_path)
    config.update(config_path=str(config_path.resolve()),
                  base_dir=str(config_path.resolve().parent), submit=submit,
                  locked=str(locked) if locked else None)
    if out is not None:
        config["out"] = str(out)
    if locked:
        config["lock_hash"] = check_lock(locked, config, config_path)
    backend = backend or str(config.get("backend", "local"))
    registry = get_registry()
    with boundary(TrainerError, f"rlhub_make_trainer(backend={backend!r})"):
        trainer = registry.pm.hook.rlhub_make_trainer(backend=backend, config=config,
                                                      registry=registry)
    if trainer is None:
        from rlhub.cli.trainers import BACKENDS
        from rlhub.errors import did_you_mean

        fail(did_you_mean(backend, BACKENDS, what="trainer backend",
                          listing="rlhub train --help"))
    result = trainer.run()
    run_dir = config.get("out")
    if run_dir and _finished_training_run(run_dir):
        _end_of_training(result, run_dir, json_out)
    elif json_out:
        emit_json(result)
    else:
        _print(result)


def _finished_training_run(run_dir: str) -> bool:
    from rlhub.integrations.trainer.runfolder import SUMMARY, is_training_run

    return is_training_run(run_dir) and (Path(run_dir) / SUMMARY).is_file()


def _end_of_training(summary: dict[str, Any], run_dir: str, json_out: bool) -> None:
    """Render the run's report, then print the summary; a report that fails to render is an
    error (exit 1) that still leaves the summary printed and the run as it is."""
    try:
        report, problem = render_run_report(run_dir)[1], None
    except Exception as exc:  # noqa: BLE001 - the run is done and saved: report, then fail
        report, problem = None, f"{type(exc).__name__}: {exc}"
    summary = {**summary, "run_dir": run_dir, "report": report}
    emit_json(summary) if json_out else print_training_summary(summary)
    if problem:
        fail(f"the training finished and is saved in {run_dir}, but its report could not be "
             f"rendered: {problem}; `rlhub report {run_dir}` tries again", code=1)


def _print(result: dict[str, Any]) -> None:
    if result.get("serve_command"):
        import shlex

        typer.echo("# 1. start the server where the Ray workers can reach it:", err=True)
        typer.echo(shlex.join(result["serve_command"]))
    if result.get("shell"):
        typer.echo("# 2. submit the OpenRLHF job:" if result.get("serve_command")
                   else "# submit the OpenRLHF job:", err=True)
        typer.echo(result["shell"])
    for key in ("dataset", "eval_dataset", "returncode"):
        if result.get(key) is not None:
            typer.echo(f"{key}: {result[key]}", err=True)
    if not result.get("shell"):
        emit_json(result)


def print_training_summary(summary: dict[str, Any]) -> None:
    """The local trainer's summary for a person (see the module docstring)."""
    out = console()
    steps = summary["steps"]
    out.print(f"rlhub train: {steps} GRPO steps on {len(summary['domains'])} domains, policy "
              f"{summary['policy']}, run {summary['run_id']}", highlight=False)
    out.print(_heldout_table(summary))
    out.print(f"held-out: {summary['metric']}", highlight=False)
    out.print(_phase_table(summary))
    for line in _facts(summary):
        out.print(line, highlight=False)


def _heldout_table(summary: dict[str, Any]) -> Any:
    from rich.table import Column, Table

    delta = summary["delta"]
    table = Table("held-out domain", *(Column(h, justify="right") for h in (
        "before", "after", "delta", "95% CI", "items")), "change",
        title="held-out reward, before and after training", title_justify="left")
    for d in summary["domains"]:
        row = delta["domains"][d]
        table.add_row(d, _num(summary["before"][d]), _num(summary["after"][d]),
                      _num(row["delta"], "+.3f"), _ci(row["ci95"]), str(row["items"]),
                      _verdict(row["ci95"]))
    mean = summary["mean"]
    table.add_row("mean", _num(mean["before"]), _num(mean["after"]),
                  _num(delta["mean"]["delta"], "+.3f"), _ci(delta["mean"]["ci95"]), "",
                  _verdict(delta["mean"]["ci95"]), style="bold")
    return table


def _verdict(ci: list[float] | None) -> str:
    """What the change's 95% interval says: ``up``, ``regressed`` or ``within noise``."""
    if not ci:
        return "not scored"
    return "up" if ci[0] > 0 else "regressed" if ci[1] < 0 else "within noise"


def _phase_table(summary: dict[str, Any]) -> Any:
    from rich.table import Column, Table

    table = Table("phase", Column("seconds", justify="right"), title="time per phase",
                  title_justify="left")
    for phase, seconds in summary["timings_s"].items():
        table.add_row(phase, f"{seconds:.1f}", style="bold" if phase == "total" else None)
    return table


def _facts(summary: dict[str, Any]) -> list[str]:
    guards = summary["guards"]
    failures = summary["failures"]
    faults = sum(n for counts in failures["counts"].values() for n in counts.values())
    held = sum(n for side in failures["heldout"].values() for n in side.values())
    adjustments = ", ".join(f"{k} {n}" for k, n in sorted(summary["adjustments"].items()))
    run_dir = summary["run_dir"]
    return [
        f"trajectories written: {summary['trajectories']} ({run_dir}/trajectories)",
        "guards hit: " + ("; ".join(f"{p} stopped after {g['steps']} of {g['planned']} steps "
                                    f"(its {g['max_seconds']:g} s guard): not comparable with a "
                                    "full run" for p, g in guards.items()) or "none"),
        f"faults that were not the model's: {faults} in training, {held} in held-out scoring, "
        f"{sum(failures['retries'].values())} retries",
        f"control adjustments: {adjustments or 'none'}",
        f"report: {summary['report'] or 'not rendered (see the error below)'}",
        f"run folder: {run_dir} (summary.json, events.jsonl, scheduler.jsonl, tb/; the model: "
        f"--policy hf:{run_dir}/model)",
    ]


def _num(value: float | None, fmt: str = ".3f") -> str:
    return "n/a" if value is None else f"{value:{fmt}}"


def _ci(ci: list[float] | None) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "n/a"
