"""``rlhub swe prepare [PROJECT...]``: fetch and validate the real projects ahead of use."""

from __future__ import annotations

import json
import time

import typer

app = typer.Typer(help="Repository tasks (rlhub-swe).", no_args_is_help=True)


@app.command("prepare")
def prepare_command(projects: list[str] = typer.Argument(None, help="Projects (default: all)."),
                    json_out: bool = typer.Option(False, "--json", help="Print only JSON.")
                    ) -> None:
    """Download the pinned sdists with pip, check their hashes, and find their bug tasks."""
    import rlhub
    from rlhub_swe.real.prepare import prepare, project_dir
    from rlhub_swe.real.projects import PROJECTS

    unknown = sorted(set(projects or []) - set(PROJECTS))
    if unknown:
        raise typer.BadParameter(f"expected projects among {sorted(PROJECTS)}, found {unknown}")
    services = rlhub.registry().services
    report = []
    for name in projects or sorted(PROJECTS):
        started = time.perf_counter()
        files, tasks = prepare(PROJECTS[name], services.workspaces)
        report.append({"project": name, "files": len(files), "tasks": len(tasks),
                       "seconds": round(time.perf_counter() - started, 1),
                       "cache": str(project_dir(PROJECTS[name]))})
        if not json_out:
            typer.echo(f"{name}: {len(tasks)} tasks from {len(files)} files "
                       f"({report[-1]['seconds']} s)", err=True)
    services.close()
    if json_out:
        typer.echo(json.dumps(report))
