"""Serving commands: ``rlhub serve`` (reward and environment server) and ``rlhub export``.

Heavy imports (FastAPI, uvicorn, Ray) happen inside the commands, so ``rlhub list`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from rlhub.cli.common import JsonOpt, emit_json, emit_jsonl, get_registry, handle_errors


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("export")(export)


@handle_errors
def serve(
    mixture: Path = typer.Option(None, "--mixture", help="Mixture for /v1/sample and the "
                                 "server's scheduler (fed by /v1/scheduler/observe)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    port: int = typer.Option(8000, "--port", help="TCP port (0: any free one; the address "
                             "is printed once the server listens)."),
    workers: int = typer.Option(None, "--workers", min=1, help="Verification threads [4 x CPUs, "
                                "at most 32], or Ray actors with --ray [as many as the cluster's "
                                "free CPUs hold]."),
    ray: str = typer.Option(None, "--ray", help="Run verification on Ray actors: 'local' "
                            "(private instance), 'auto', or a cluster address."),
    ray_threads: int = typer.Option(8, "--ray-threads", min=1,
                                    help="Concurrent calls per Ray actor."),
    ray_actor_cpus: float = typer.Option(1.0, "--ray-actor-cpus", min=0.01,
                                         help="CPUs each Ray actor asks the cluster for."),
    ray_start_timeout: float = typer.Option(120.0, "--ray-start-timeout", min=0.1,
                                            help="Seconds to wait for a first Ray actor."),
    max_inflight: int = typer.Option(None, "--max-inflight", min=1, help="Requests admitted "
                                     "at once; later ones wait (never rejected) [64 x workers]."),
    strip_token: list[str] = typer.Option(None, "--strip-token", help="Trailing special token "
                                          "removed from responses (repeatable; replaces the "
                                          "default list)."),
    episode_ttl: float = typer.Option(900.0, "--episode-ttl", help="Seconds an idle episode "
                                      "lives."),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level."),
    json_out: bool = typer.Option(False, "--json", help="Once listening, print one JSON line "
                                  "on stdout: the URL, the reward endpoint and the pool."),
) -> None:
    """Serve rewards (OpenRLHF's POST /get_reward) and environments (/v1/...) over HTTP."""
    from rlhub.hub.server import ServerConfig, run

    config = ServerConfig(host=host, port=port, ray=ray, ray_threads=ray_threads,
                          ray_actor_cpus=ray_actor_cpus, ray_start_timeout_s=ray_start_timeout,
                          mixture=str(mixture) if mixture else None, max_inflight=max_inflight,
                          episode_ttl_s=episode_ttl, log_level=log_level)
    config.workers = workers
    if strip_token:
        config.strip_tokens = tuple(strip_token)
    get_registry()  # honour the root --domains-file/--block options before the app builds

    def ready(url: str, pool: dict[str, Any]) -> None:
        size = (f"{pool.get('live')} of {pool.get('workers')} Ray actors up, the rest as the "
                "cluster places them" if ray else f"{pool.get('workers')} threads")
        typer.echo(f"rlhub serve: listening on {url} (POST {url}/get_reward; {size})", err=True)
        if json_out:
            emit_jsonl({"url": url, "get_reward": f"{url}/get_reward", "health": f"{url}/health",
                        "pool": pool})

    run(config, ready)


@handle_errors
def export(
    mixture: Path = typer.Option(..., "--mixture", help="Mixture YAML or JSON file."),
    n: int = typer.Option(..., "-n", min=0, help="Rows to write, split exactly by weight."),
    out: Path = typer.Option(..., "--out", help="JSONL file to write."),
    split: str = typer.Option(None, "--split", help="Task split [the mixture's, usually train]."),
    seed: int = typer.Option(None, "--seed", help="Task seed [the mixture's]."),
    start: int = typer.Option(0, "--start", min=0, help="First task index of every domain."),
    json_out: bool = JsonOpt,
) -> None:
    """Write an OpenRLHF prompt dataset (prompt, label, datasource, gold) from a mixture."""
    from rlhub.hub.export import export_tasks, write_jsonl

    tasks, counts = export_tasks(mixture, n, get_registry(), split=split, seed=seed, start=start)
    written = write_jsonl(out, tasks)
    if json_out:
        emit_json({"out": str(out), "rows": written, "counts": counts})
        return
    typer.echo(f"wrote {written} rows to {out}", err=True)
    for domain, k in counts.items():
        typer.echo(f"{k:8d}  {domain}")
