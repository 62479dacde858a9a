"""The ``rlhub`` command line (typer + rich).

Every listing command takes ``--json``, which prints only JSON on stdout; human output and progress
go to stderr. Commands of other areas (sandbox, mixtures, loop, serving, hub) live in their own
modules exposing ``register(app)``; heavy imports stay inside command functions so that
``rlhub list`` stays fast.
"""

from __future__ import annotations

import typer

from rlhub.cli import domains, hubcmd, loop, mix, policy, sandbox, serve, train, workspaces

# Area modules, each exposing register(app); this order is the --help order.
AREAS = (domains, loop, serve, hubcmd, train, sandbox, workspaces, policy, mix)

app = typer.Typer(
    name="rlhub",
    help="Environments and rewards for RL post-training of LLMs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for _area in AREAS:
    _area.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
