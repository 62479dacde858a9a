"""Hub commands: ``push``, ``pull``, ``lock`` and ``new plugin`` (the code is in ``rlhub.integrations``).

Every command prints a short human summary on stderr, or with ``--json`` one JSON document on
stdout; errors are ``error: <message>`` on stderr with exit status 2.
"""

from __future__ import annotations

from pathlib import Path

import typer

from rlhub.cli.common import JsonOpt, emit_json, get_registry, handle_errors

new_app = typer.Typer(help="Create new things from templates.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("push")(push)
    app.command("pull")(pull)
    app.command("lock")(lock)
    new_app.command("plugin")(new_plugin)
    app.add_typer(new_app, name="new")


@handle_errors
def push(
    target: str = typer.Argument(..., help="A domain id, a glob (plugin/*) or a plugin name."),
    to: str = typer.Option(..., "--to", help="hf://org/name, file:///path or s3://bucket/prefix."),
    revision: str = typer.Option(
        None, "--revision", help="Tag the pushed bundle (tags never move)."
    ),
    test_size: int = typer.Option(100, "--test-size", min=1, help="Held-out tasks per domain."),
    train_size: int = typer.Option(
        20, "--train-size", min=1, help="Train-sample tasks per domain."
    ),
    source: Path = typer.Option(
        None, "--source", help="The plugin's source folder, when its install does not record one."
    ),
    json_out: bool = JsonOpt,
) -> None:
    """Bundle an environment (manifests, card, tasks, wheel or domain file, lock); upload it."""
    from rlhub.integrations.hub.bundle import BuildOptions
    from rlhub.integrations.hub.push import push as do_push

    options = BuildOptions(test_size=test_size, train_size=train_size, source=source)
    result = do_push(target, to, revision=revision, registry=get_registry(), options=options)
    if json_out:
        emit_json(result)
        return
    typer.echo(
        f"pushed {result['name']} ({len(result['domains'])} domains, {result['files']} "
        f"files) as bundle {result['bundle']}",
        err=True,
    )
    typer.echo(f"pull it with: rlhub pull {result['pull']}", err=True)


@handle_errors
def pull(
    ref: str = typer.Argument(
        ...,
        help="URL[@revision]: hf://org/name@v1, file:///path, "
        "s3://bucket/prefix@main, or a commit (Hub) or bundle id after @.",
    ),
    trust_remote_code: bool = typer.Option(
        False,
        "--trust-remote-code",
        help="Install the bundled plugin wheel (runs its code) and trust the environment's "
        "configuration (endpoints, sandbox limits).",
    ),
    update: bool = typer.Option(
        False, "--update", help="Accept a bundle other than the one the project lock pins."
    ),
    expect_lock: str = typer.Option(
        None, "--expect-lock", help="Refuse unless the bundle's lock hashes to this sha256."
    ),
    project_lock: Path = typer.Option(
        Path("rlhub-pulls.lock"),
        "--project-lock",
        help="Where this project pins what each reference resolved to.",
    ),
    json_out: bool = JsonOpt,
) -> None:
    """Download an environment, check it (hashes, files, datasets, policy, probes) and install it
    under $RLHUB_HOME/envs; --json prints every check's result."""
    from rlhub.integrations.hub.errors import HubError
    from rlhub.integrations.hub.pull import PullOptions
    from rlhub.integrations.hub.pull import pull as do_pull
    from rlhub.plugins import reset

    options = PullOptions(trust_remote_code, update, expect_lock, project_lock)
    try:
        result = do_pull(ref, options, registry=get_registry())
    except HubError as exc:
        if json_out:  # every check that ran, the failed one last, then the error as usual
            emit_json({"ok": False, "error": str(exc), "checks": getattr(exc, "checks", [])})
        raise
    reset()  # the next registry() rediscovers, and sees the new domains
    if json_out:
        emit_json({"ok": True, **result.to_dict()})
        return
    typer.echo(
        f"verified bundle {result.bundle} ({result.name}) and installed it in {result.path}"
        f"{'' if result.trusted else ' (untrusted: held to your policy)'}",
        err=True,
    )
    if result.pinned:
        typer.echo(f"  pinned {result.resolved} in {result.pinned}", err=True)
    for domain_id in result.registered:
        marks = result.hackable.get(domain_id)
        note = (f" (hackable: {', '.join(marks)}, as your pull.hackable policy says)"
                if marks else "")
        typer.echo(f"  registered {domain_id}{note}", err=True)
    for wheel in result.wheels:
        if not wheel["installed"]:
            typer.echo(
                f"  not installed: {Path(wheel['file']).name} holds plugin code. Install "
                f"it with `{wheel['install_command']}` or pull again with "
                "--trust-remote-code",
                err=True,
            )


@handle_errors
def lock(
    mixture: Path = typer.Option(..., "--mixture", help="A mixture YAML or JSON file."),
    out: Path = typer.Option(Path("rlhub.lock"), "--out", help="Where to write the lock."),
    json_out: bool = JsonOpt,
) -> None:
    """Write a lock pinning the plugin versions, domain versions and hashes of a mixture."""
    from rlhub.integrations.hub.lock import mixture_lock, write_lock

    made = mixture_lock(mixture, get_registry())
    write_lock(made, out)
    if json_out:
        emit_json(
            {"path": str(out), "lock_hash": made["lock_hash"], "domains": sorted(made["domains"])}
        )
        return
    typer.echo(
        f"wrote {out}: {len(made['domains'])} domains, lock hash {made['lock_hash']}", err=True
    )


@handle_errors
def new_plugin(
    name: str = typer.Argument(..., help="The plugin's name and domain namespace."),
    dir_: Path = typer.Option(Path("."), "--dir", help="Folder to create NAME/ in."),
    json_out: bool = JsonOpt,
) -> None:
    """Scaffold a plugin package that installs and passes `rlhub check` as generated."""
    from rlhub.integrations.hub.errors import HubError
    from rlhub.integrations.hub.scaffold import new_plugin as scaffold

    taken = get_registry().plugins.get(name)
    if taken is not None:
        raise HubError(
            f"new plugin {name}: a plugin named {name!r} is already installed (from "
            f"{taken.distribution}); pick another name"
        )
    dest = scaffold(name, dir_)
    if json_out:
        emit_json({"path": str(dest), "domains": [f"{name}/sum-v1"]})
        return
    typer.echo(
        f"created {dest}; next:\n  pip install -e {dest}\n  rlhub check {name}/sum-v1\n"
        f"  pytest {dest / 'tests'}",
        err=True,
    )
