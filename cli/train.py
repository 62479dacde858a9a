"""``rlhub train CONFIG --backend openrlhf|local``: dispatch a training config to a trainer.

The trainer comes from the ``rlhub_make_trainer(backend, config)`` hook: rlhub answers last for
``openrlhf`` (:mod:`rlhub.hub.openrlhf.job`) and for ``local`` (the single-machine trainer), and any
plugin can add or take over a backend. The hook receives the config file's mapping plus ``out``,
``submit``, ``locked`` (the lock path, already checked; ``lock_hash`` then holds its hash),
``config_path`` and ``base_dir`` (the config's folder, against which relative paths resolve).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from rlhub.cli.common import (
    JsonOpt,
    emit_json,
    enforce_lock,
    fail,
    get_registry,
    handle_errors,
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
    if json_out:
        emit_json(result)
        return
    _print(result)


def _print(result: dict[str, Any]) -> None:
    if result.get("serve_command"):
        import shlex

        typer.echo("# 1. start the hub where the Ray workers can reach it:", err=True)
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
