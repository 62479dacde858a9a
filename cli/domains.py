"""Domain commands: list, show, check, sample, verify, verifiers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rlhub.cli.common import (
    JsonOpt,
    console,
    emit_json,
    emit_jsonl,
    fail,
    get_registry,
    handle_errors,
    print_versions,
    set_registry_options,
)

if TYPE_CHECKING:
    from rlhub.plugins import Registry


def register(app: typer.Typer) -> None:
    app.callback(invoke_without_command=True)(root)
    app.command("list")(list_domains)
    app.command("show")(show)
    app.command("check")(check)
    app.command("sample")(sample)
    app.command("verify")(verify)
    app.command("verifiers")(verifiers)


def root(
    ctx: typer.Context,
    domains_file: list[Path] = typer.Option(None, "--domains-file", help="Data-only domain file."),
    block: list[str] = typer.Option(None, "--block", help="Do not load this plugin (repeatable)."),
    version: bool = typer.Option(False, "--version", help="Print rlhub's version and the "
                                 "installed plugins' (without loading them), then exit."),
    json_out: bool = typer.Option(False, "--json", help="With --version: print it as JSON."),
) -> None:
    """Environments and rewards for RL post-training of LLMs."""
    if version:
        print_versions(json_out)
        raise typer.Exit()
    if ctx.invoked_subcommand is None:
        fail("expected a command (or --version), found none; `rlhub --help` lists the commands")
    set_registry_options(domains_file, block)


@handle_errors
def list_domains(json_out: bool = JsonOpt,
                 plugin: str = typer.Option(None, help="Only this plugin's domains."),
                 all_: bool = typer.Option(False, "--all", help="Also what plugins leave out, "
                                           "and why (describing every deferred domain now).")
                 ) -> None:
    """List every installed domain (``deferred``: its manifest is made on first use)."""
    reg = get_registry()
    if all_:
        reg.describe_all()
    rows = reg.rows(plugin)
    left = [row for row in reg.left_out if plugin is None or row["plugin"] == plugin] \
        if all_ else []
    if json_out:
        emit_json(rows + [{**row, "left_out": row["reason"]} for row in left])
        return
    _print_listing(reg, rows, left, all_)


def _print_listing(reg: Registry, rows: list[dict[str, Any]], left: list[dict[str, Any]],
                   all_: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    marked = any(r["hackable"] for r in rows)
    table = Table("id", "plugin", "version", "tags", *(["hackable"] if marked else []), "summary")
    for r in rows:
        mark = [",".join(r["hackable"]) or "-"] if marked else []
        later = " [dim](described on first use)[/dim]" if r["deferred"] else ""
        table.add_row(escape(r["id"]), r["plugin"], escape(r["version"]),
                      escape(",".join(r["tags"])), *mark, escape(r["summary"]) + later)
    for r in left:
        table.add_row(escape(r["id"]), r["plugin"], "-", "left out", *(["-"] if marked else []),
                      f"[yellow]{escape(r['reason'])}[/yellow]")
    out = console()
    out.print(table)
    deferred = sum(r["deferred"] for r in rows)
    out.print(f"{len(rows)} domains from {len(reg.plugins)} plugins"
              + (f"; {len(left)} environments left out" if all_ else "")
              + (f"; {deferred} described on first use (`rlhub list --all` describes them "
                 "now)" if deferred else ""))
    for err in reg.errors:
        out.print(f"[red]{escape(str(err))}[/red]")


@handle_errors
def show(domain_id: str, json_out: bool = JsonOpt) -> None:
    """Show a domain's manifest."""
    reg = get_registry()
    manifest = reg.manifest(domain_id)
    info = {**manifest.data, "plugin": manifest.plugin, "distribution": manifest.distribution}
    if json_out:
        emit_json(info)
        return
    from rich.syntax import Syntax

    console().print(Syntax(json.dumps(info, indent=2), "json"))


@handle_errors
def check(ids: list[str] = typer.Argument(None, help="Domain ids or globs."),
          all_: bool = typer.Option(False, "--all", help="Check every installed domain."),
          n: int = typer.Option(4, "-n", help="Tasks per domain."),
          judge: str = typer.Option(None, "--judge", help="'scripted': check judged domains "
                                    "against rlhub's built-in scripted judge (the plumbing, not "
                                    "a real judge's grading) [RLHUB_JUDGE_URL]."),
          json_out: bool = JsonOpt) -> None:
    """Run the contract kit and its integrity probes; exit 1 when any domain fails or could not
    be checked.

    ``--json`` reports, per domain, each probe class (whether it could run on the domain and
    why not, probes run, passed, the highest reward a probe that did not pass got, problems,
    whether the manifest marks it ``hackable``, seconds).
    """
    reg = get_registry()
    if not ids and not all_:
        fail("expected domain ids or --all, found neither")
    if judge not in (None, "scripted"):
        fail(f"--judge: expected 'scripted', found {judge!r}")
    if all_:
        reg.describe_all()  # an environment that cannot be described is left out, not failed
    targets = reg.ids() if all_ else reg.match(ids)
    with _judge(judge):
        results = [_check_one(reg, domain_id, n, targets)
                   for domain_id in _progress(targets, "checking")]
    failed = [r for r in results if not r["ok"]]
    unchecked = [r for r in failed if r.get("unchecked")]
    if json_out:
        emit_json({"checked": len(results) - len(unchecked), "failed": len(failed) - len(unchecked),
                   "unchecked": len(unchecked), "results": results,
                   "max_probe_reward": _highest(results),
                   "load_errors": [str(e) for e in reg.errors]})
    else:
        _report(results, failed, unchecked, reg.errors)
    if failed or reg.errors:
        raise typer.Exit(1)


def _highest(results: list[dict[str, Any]]) -> float | None:
    found = [r["max_probe_reward"] for r in results if r.get("max_probe_reward") is not None]
    return max(found) if found else None


def _report(results: list[dict[str, Any]], failed: list[dict[str, Any]],
            unchecked: list[dict[str, Any]], load_errors: list[Any]) -> None:
    for r in results:
        for p in r.get("known", ()):
            typer.echo(f"KNOWN {p}", err=True)
    for r in failed:
        for p in r["problems"]:
            typer.echo(f"{'SKIP' if r.get('unchecked') else 'FAIL'} {p}", err=True)
    for e in load_errors:
        typer.echo(f"FAIL {e}", err=True)
    known = sum(1 for r in results if r.get("known"))
    not_run = sum(1 for r in results for p in r.get("probes", {}).values() if not p["ran"])
    typer.echo(f"{len(results) - len(failed)} passed, {len(failed) - len(unchecked)} failed"
               + (f", {len(unchecked)} not checked" if unchecked else "")
               + f", {known} with known (hackable) problems; highest reward of any probe: "
               f"{_highest(results)}; {not_run} probe classes could not run on their domain "
               "(--json says which and why)", err=True)


NEEDS_JUDGE = ("needs a judge: set RLHUB_JUDGE_URL, or `--judge scripted` to check the plumbing "
               "with the built-in scripted judge")


def _check_one(reg: Registry, domain_id: str, n: int, targets: list[str]) -> dict[str, Any]:
    """One domain's report; a judged domain with no judge configured is not checked. The
    determinism check's fresh interpreter samples the targets of the domain's plugin, once."""
    import os

    from rlhub.testing import inspect_domain

    if "judge" in reg.catalog.declared(domain_id).data["tags"] \
            and not os.environ.get("RLHUB_JUDGE_URL"):
        return {"id": domain_id, "ok": False, "unchecked": True,
                "problems": [f"{domain_id}: {NEEDS_JUDGE}"]}
    plugin = reg.catalog.declared(domain_id).plugin
    batch = [i for i in targets if reg.catalog.declared(i).plugin == plugin]
    return dict(inspect_domain(domain_id, n=n, registry=reg, batch=batch).to_dict())


def _judge(kind: str | None) -> Any:
    """The scripted judge for the checks when asked for, else nothing."""
    import contextlib

    if kind != "scripted":
        return contextlib.nullcontext()
    from rlhub.testing.judge_server import judge_env

    return judge_env()


def _progress(items: list[str], label: str) -> list[str]:
    if not sys.stderr.isatty():
        return items
    from rich.progress import track

    return list(track(items, description=label, console=None, transient=True))


@handle_errors
def sample(domain_id: str, n: int = typer.Option(1, "-n"), seed: int = typer.Option(0, "--seed"),
           split: str = typer.Option("train", "--split"), start: int = typer.Option(0, "--start"),
           json_out: bool = JsonOpt) -> None:
    """Print N tasks (the same in every process); --json prints one JSON line per task."""
    domain = get_registry().get(domain_id)
    try:
        tasks = domain.sample(n, split=split, seed=seed, start=start)
    except ValueError as exc:
        fail(str(exc))
    for index, task in enumerate(tasks, start):
        if json_out:
            emit_jsonl(task.to_dict())
        else:
            _print_task(task, f"{split} seed {seed} index {index}")


def _print_task(task: Any, where: str) -> None:
    typer.secho(f"── {task.id}  ({where})", bold=True)
    typer.echo(task.prompt_text().rstrip())
    for label, value in (("answer", task.answer), ("gold", task.gold)):
        if value is not None:
            typer.echo(f"{label}: {_short(value)}")
    typer.echo("")


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


@handle_errors
def verify(domain_id: str, input_file: Path = typer.Option(..., "--input", help="JSONL file."),
           json_out: bool = JsonOpt) -> None:
    """Score lines of {"task": {...}, "completion": "..."}; a bad line yields an error record.

    --json prints one JSON record per line of input; otherwise one readable line each."""
    domain = get_registry().get(domain_id)
    with open(input_file, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                record = _verify_line(domain, n, line)
                emit_jsonl(record) if json_out else typer.echo(_verify_text(record))


def _verify_line(domain: Any, n: int, line: str) -> dict[str, Any]:
    from rlhub.task import Task

    try:
        row = json.loads(line)
        if not isinstance(row, dict) or not isinstance(row.get("completion"), str):
            raise ValueError('expected {"task": {...}, "completion": "..."}')
        task = Task.from_dict(row["task"] if isinstance(row.get("task"), dict) else {})
    except ValueError as exc:
        return {"line": n, "task_id": None, "error": f"line {n}: {exc}"}
    return {"line": n, "task_id": task.id, **domain.verify(task, row["completion"]).to_dict()}


def _verify_text(record: dict[str, Any]) -> str:
    if record.get("task_id") is None:
        return f"line {record['line']}: error: {record['error']}"
    verdict = "PASS" if record["passed"] else "fail"
    text = (f"line {record['line']}: {verdict} reward {record['reward']:g} "
            f"({record['failure']}) {record['task_id']}")
    why = record.get("error") or record.get("feedback") or ""
    return text + (f": {_short(why, 200)}" if why and not record["passed"] else "")


@handle_errors
def verifiers(json_out: bool = JsonOpt) -> None:
    """List the named reusable verifiers."""
    refs = get_registry().services.verifier_refs()
    if json_out:
        emit_json(refs)
    else:
        for name, ref in sorted(refs.items()):
            typer.echo(f"{name:16} {ref}")
