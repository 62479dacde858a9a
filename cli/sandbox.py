"""Sandbox commands: ``rlhub sandbox exec FILE`` runs one job; ``rlhub sandbox info`` reports
which protections each backend has in force on this machine."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from rlhub.cli.common import JsonOpt, emit_json, fail, get_registry, handle_errors
from rlhub.errors import did_you_mean

sandbox_app = typer.Typer(
    help="Run code in a sandbox and inspect the sandboxes.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(sandbox_app, name="sandbox")


@sandbox_app.command("exec")
@handle_errors
def exec_file(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="Program to run."),
    backend: str = typer.Option("local", help="A registered backend: local, docker, ray or "
                                "a plugin's."),
    language: str = typer.Option(
        None, help="A registered language (`rlhub sandbox info` lists them; default: the one "
        "whose suffixes include the file's)."
    ),
    wall_s: float = typer.Option(10.0, "--wall-s", help="Wall-clock limit, seconds."),
    cpu_s: float = typer.Option(10.0, "--cpu-s", help="CPU-time limit, seconds."),
    memory_mb: int = typer.Option(
        512, "--memory-mb", help="Memory of the whole job, MiB (each process's address space "
        "where the backend has no memory cgroup: see `rlhub sandbox info`)."
    ),
    output_bytes: int = typer.Option(
        1 << 20, "--output-bytes", help="Cap on stdout and on stderr."
    ),
    processes: int = typer.Option(64, "--processes", help="Process/thread limit."),
    network: bool = typer.Option(False, "--network", help="Give the job the host's network."),
    library: list[str] = typer.Option(
        None, "--library", help="An installed distribution the job may import (repeatable)."
    ),
    stdin: Path = typer.Option(
        None, "--stdin", exists=True, dir_okay=False, help="File whose bytes are the job's stdin."
    ),
    json_out: bool = JsonOpt,
) -> None:
    """Run FILE in a sandbox and print its result."""
    from rlhub.sandbox import ExecRequest, Limits

    services = get_registry().services
    if backend not in services.sandboxes.names():
        fail(f"--backend: expected one of {services.sandboxes.names()}, found {backend!r}")
    languages = services.languages()
    if language is None:
        spec = languages.by_suffix(file.suffix)
        if spec is None:
            fail(f"cannot tell the language of {file.name!r} from its suffix; pass --language "
                 f"(one of {', '.join(languages.names())})")
        language = spec.name
    elif language not in languages:
        fail("--language: " + did_you_mean(
            language, languages.names(), what="sandbox language", listing="rlhub sandbox info"))
    limits = Limits(
        wall_s=wall_s,
        cpu_s=cpu_s,
        memory_mb=memory_mb,
        output_bytes=output_bytes,
        processes=processes,
        network=network,
    )
    request = ExecRequest(
        code=file.read_text(errors="surrogateescape"),
        language=language,
        stdin=stdin.read_bytes() if stdin else "",
        limits=limits,
        libraries=list(library or []),
    )
    try:
        result = services.sandbox(backend).run(request)
    finally:
        services.close()
    if json_out:
        emit_json(result.to_dict())
    else:
        _print_result(result)
    raise typer.Exit(0 if result.status == "ok" else 1)


def _print_result(result: object) -> None:
    data = result.to_dict()  # type: ignore[attr-defined]
    sys.stdout.write(data["stdout"])
    sys.stderr.write(data["stderr"])
    typer.echo(
        f"[{data['backend']}] status={data['status']} exit_code={data['exit_code']} "
        f"wall={data['wall_s']:.3f}s cpu={data['cpu_s']:.3f}s rss={data['max_rss_mb']:.1f}MB"
        + (f" missing={','.join(data['missing'])}" if data["missing"] else ""),
        err=True,
    )


@sandbox_app.command("info")
@handle_errors
def info(
    backend: list[str] = typer.Option(None, "--backend", help="Only this backend (repeatable)."),
    json_out: bool = JsonOpt,
) -> None:
    """Say which protections each sandbox backend has in force on this machine."""
    from rlhub.errors import RlhubError
    from rlhub.sandbox.channel import PROTECTION_NOTES

    services = get_registry().services
    reports = []
    for name in backend or ["local", "docker"]:
        try:
            report = services.sandbox(name).info()
            names = [*report["active"], *report["missing"]]
            report["notes"] = {p: PROTECTION_NOTES.get(p, "") for p in names}
            reports.append(report)
        except RlhubError as exc:
            reports.append({"backend": name, "available": False, "error": str(exc)})
    services.close()
    if json_out:
        emit_json(reports)
        return
    for report in reports:
        _print_info(report)


def _print_info(report: dict[str, object]) -> None:
    name = report["backend"]
    if "error" in report:
        typer.echo(f"{name}: unavailable: {report['error']}")
        return
    typer.echo(f"{name} ({report.get('mode', '')}):")
    typer.echo("  active:  " + ", ".join(report.get("active", [])))  # type: ignore[arg-type]
    missing = report.get("missing") or []
    typer.echo("  missing: " + (", ".join(missing) if missing else "none"))  # type: ignore[arg-type]
    notes = dict(report.get("notes") or {})  # type: ignore[call-overload]
    whys = dict(report.get("why") or {})  # type: ignore[call-overload]
    for name in missing:  # type: ignore[attr-defined]
        typer.echo(f"    {name} ({notes.get(name, '')}): {whys.pop(name, 'not in force')}")
    for key, why in whys.items():
        typer.echo(f"    {key}: {why}")
    typer.echo("  languages: " + ", ".join(report.get("languages", [])))  # type: ignore[arg-type]
