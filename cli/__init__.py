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


def plugin_commands(target: typer.Typer) -> None:
    """Mount the command groups plugins declare (``rlhub_commands``); a broken one is reported
    and left out, the rest of the command line keeps working."""
    import sys

    from rlhub.plugins import registry
    from rlhub.refs import load_object

    taken = builtin_names(target)
    try:
        refs = registry().services.named("rlhub_commands")
    except Exception as exc:  # noqa: BLE001 - a plugin's hook must not break the command line
        print(f"rlhub: plugin commands not loaded: {exc}", file=sys.stderr)
        return
    for name, ref in sorted(refs.items()):
        if name in taken:
            print(f"rlhub: plugin command group {name!r} ({ref}) clashes with a built-in one; "
                  "left out", file=sys.stderr)
            continue
        try:
            target.add_typer(load_object(ref), name=name)
        except Exception as exc:  # noqa: BLE001
            print(f"rlhub: plugin command group {name!r} ({ref}) failed to load: {exc}",
                  file=sys.stderr)


def builtin_names(target: typer.Typer) -> set[str]:
    return {g.name for g in target.registered_groups} | {
        c.name or (c.callback.__name__ if c.callback else "") for c in target.registered_commands}


def wants_plugin_commands(argv: list[str]) -> bool:
    """Whether this invocation may name a plugin's command: not when it runs a built-in one or
    asks only for ``--version`` (neither imports a plugin)."""
    words = [a for a in argv if not a.startswith("-")]
    if words:
        return words[0] not in builtin_names(app)
    return "--version" not in argv


def main() -> None:
    """Console-script entry point."""
    import sys

    if wants_plugin_commands(sys.argv[1:]):
        plugin_commands(app)
    app()
