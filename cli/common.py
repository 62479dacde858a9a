"""Shared CLI plumbing: the registry options, JSON and human output, and error reporting."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from rlhub.errors import RlhubError

if TYPE_CHECKING:
    from rlhub.plugins import Registry

F = TypeVar("F", bound=Callable[..., Any])
REGISTRY_OPTIONS: dict[str, Any] = {}

JsonOpt = typer.Option(False, "--json", help="Print only JSON on stdout.")


def get_registry() -> Registry:
    """The process registry, built with the root command's --domains-file/--block options."""
    from rlhub.plugins import registry

    return registry(**REGISTRY_OPTIONS) if REGISTRY_OPTIONS else registry()


def enforce_lock(path: str, registry: Registry, mixture: Any = None, *, mixed: Any = None) -> str:
    """``--locked LOCK``: refuse to run unless rlhub, the installed domains and ``mixture`` (or
    ``mixed``, the mixture already read) match the lock; return its hash."""
    from rlhub.integrations.hub.lock import check_lock, read_lock

    problems = check_lock(path, registry, mixture, mixed=mixed)
    if problems:
        raise RlhubError(f"refusing to run: the environment differs from the lock {path}:\n  "
                         + "\n  ".join(problems))
    return str(read_lock(path)["lock_hash"])


def set_registry_options(domains_file: list[Path] | None, block: list[str] | None) -> None:
    REGISTRY_OPTIONS.clear()
    if domains_file:
        REGISTRY_OPTIONS["domain_files"] = list(domains_file)
    if block:
        REGISTRY_OPTIONS["block"] = list(block)


# A console writing to a file or a pipe is this wide: rich would otherwise take 80 columns and cut
# every table to fit; no line of ours comes near it, and nothing is padded to the width.
UNBOUNDED_WIDTH = 100_000


def console(stderr: bool = False) -> Any:
    """The rich console every command prints human output through (stdout, or stderr).

    On a terminal it wraps to the terminal's width, as rich does. Written to a file or a pipe it
    never wraps or cuts: a table keeps every column and every cell whole, where rich would fit it
    into 80 columns and cut the widest cells.
    """
    from rich.console import Console

    out = Console(stderr=stderr)
    if not out.is_terminal:
        out.width = UNBOUNDED_WIDTH
    return out


def versions() -> dict[str, Any]:
    """rlhub's version and every installed plugin's name, distribution and version.

    Read from the ``rlhub.plugins`` entry points' distribution metadata: no plugin is imported
    and no domain is built, so this costs what reading the installed metadata costs.
    """
    import platform
    from importlib import metadata

    from rlhub import __version__
    from rlhub.plugins import ENTRY_POINT_GROUP

    plugins = [{"name": ep.name, "distribution": ep.dist.name if ep.dist else None,
                "version": ep.dist.version if ep.dist else None, "module": ep.value}
               for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)]
    return {"rlhub": __version__, "python": platform.python_version(),
            "plugins": sorted(plugins, key=lambda p: p["name"])}


def print_versions(json_out: bool) -> None:
    """``rlhub --version [--json]``."""
    info = versions()
    if json_out:
        emit_json(info)
        return
    from rich.table import Table

    table = Table("plugin", "distribution", "version", box=None, pad_edge=False)
    for p in info["plugins"]:
        table.add_row(p["name"], p["distribution"] or "-", p["version"] or "-")
    out = console()
    out.print(f"rlhub {info['rlhub']} (Python {info['python']})", highlight=False)
    out.print(table if info["plugins"] else "no plugins installed", highlight=False)


def render_run_report(run_dir: str, out: str | None = None) -> tuple[str, str]:
    """Render ``run_dir``'s HTML report; ``(kind, path of index.html)``.

    The folder says which kind of run it is: the trainer's event log or summary make it a
    training run (:mod:`rlhub.integrations.trainer.report`), anything else is read as an eval run
    (:mod:`rlhub.report`: its trajectories and ``metrics.json``).
    """
    from rlhub.integrations.trainer.runfolder import is_training_run

    if is_training_run(run_dir):
        from rlhub.integrations.trainer.report import render_training_report

        return "train", render_training_report(run_dir, out)
    from rlhub.report import render_report

    return "eval", render_report(run_dir, out)


def emit_json(value: Any) -> None:
    """Write one JSON document to stdout."""
    sys.stdout.write(json.dumps(value, default=str) + "\n")


def emit_jsonl(value: Any) -> None:
    """Write one JSON line to stdout and flush it, so a reader sees each record at once."""
    emit_json(value)
    sys.stdout.flush()


def json_object(text: str, option: str) -> dict[str, Any]:
    """Parse an option's JSON-object value, or fail naming ``option``."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        fail(f"{option}: expected a JSON object, found {text!r} ({exc})")
    if not isinstance(value, dict):
        fail(f"{option}: expected a JSON object, found {type(value).__name__}")
    return value


def fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def handle_errors(fn: F) -> F:
    """Turn an :class:`RlhubError` into ``error: <message>`` on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RlhubError as exc:
            fail(str(exc))

    return wrapper  # type: ignore[return-value]
