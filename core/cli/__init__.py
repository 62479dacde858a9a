"""The ``rlhub`` command line (typer + rich).

Every listing command takes ``--json``, which prints only JSON on stdout; human output and progress
go to stderr. Commands of other areas (sandbox, mixtures, loop, serving, hub) live in their own
modules exposing ``register(app)``; heavy imports stay inside command functions so that
``rlhub list`` stays fast.
"""

from __future__ import annotations

import importlib

import typer

from rlhub.cli import domains

# Area modules, each exposing register(app). Listed explicitly; order is the --help order.
AREAS = ("sandbox", "loop", "policy", "mix", "serve", "hubcmd", "train")

app = typer.Typer(
    name="rlhub",
    help="Environments and rewards for RL post-training of LLMs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
domains.register(app)
for _area in AREAS:
    try:
        _module = importlib.import_module(f"rlhub.cli.{_area}")
    except ModuleNotFoundError as _exc:  # an area not built yet
        if _exc.name != f"rlhub.cli.{_area}":
            raise
        continue
    _module.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
