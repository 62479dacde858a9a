"""``rlhub sandbox workspaces [--json] [--reap]``: the live workspaces of this machine.

Lists every workspace server's record (:mod:`rlhub.sandbox.leases`), whichever process owns it,
with its owner's liveness and expiry; ``--reap`` removes those whose owner is gone or whose
expiry has long passed (their processes, containers, cgroups and records).
"""

from __future__ import annotations

import time

import typer

from rlhub.cli.common import JsonOpt, emit_json, handle_errors
from rlhub.cli.sandbox import sandbox_app


def register(app: typer.Typer) -> None:
    """The command hangs under ``rlhub sandbox`` (registered when this module is imported)."""


@sandbox_app.command("workspaces")
@handle_errors
def workspaces(
    reap: bool = typer.Option(False, "--reap", help="Remove the workspaces whose owner is gone."),
    json_out: bool = JsonOpt,
) -> None:
    """List the live workspaces on this machine, whichever process owns them."""
    from rlhub.sandbox import leases
    from rlhub.sandbox.ws_docker import remove_container

    reaped = leases.reap(remove_container=remove_container) if reap else []
    live = leases.records()
    if json_out:
        emit_json({"workspaces": [r.to_dict() for r in live],
                   "reaped": [r.to_dict() for r in reaped], "directory": str(leases.lease_dir())})
        return
    for record in reaped:
        typer.echo(f"reaped {record.id} ({record.backend}, owner pid {record.owner_pid})", err=True)
    typer.echo(f"{len(live)} workspace(s) in {leases.lease_dir()}")
    for r in live:
        owner = "alive" if r.owner_alive else "gone"
        left = r.expires_at - time.time()
        typer.echo(f"  {r.id}  {r.backend}  {r.state}  owner {r.owner_pid} ({owner})  "
                   f"expires in {left:.0f}s  {r.label or ''}")
