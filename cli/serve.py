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
    infra_retries: int = typer.Option(2, "--infra-retries", min=0, help="Times a verification "
                                      "is repeated after a sandbox, verifier or judge failure."),
    allow_domain: list[str] = typer.Option(None, "--allow-domain", help="Also serve these "
                                           "domains (ids or globs, repeatable); labels of other "
                                           "domains are refused [with --mixture: its domains; "
                                           "without: every installed domain]."),
    label_key_file: Path = typer.Option(None, "--label-key-file", help="Secret that signs and "
                                        "checks labels (rlhub export --label-key-file) "
                                        "[$RLHUB_LABEL_KEY, else a fresh key per start]."),
    max_items: int = typer.Option(1024, "--max-items", min=1, help="Samples per request; "
                                  "more is refused with 413."),
    max_body_mb: float = typer.Option(16.0, "--max-body-mb", min=0.001, help="Request body "
                                      "limit, read as a stream; more is refused with 413."),
    body_timeout: float = typer.Option(30.0, "--body-timeout", min=0.001, help="Seconds a "
                                       "request body may take to arrive; later is refused with "
                                       "408 (a slow body never holds an admission slot)."),
    header_timeout: float = typer.Option(10.0, "--header-timeout", min=0.001, help="Seconds a "
                                         "connection may take to send a request's headers; "
                                         "later it is closed."),
    max_connections_per_client: int = typer.Option(4096, "--max-connections-per-client", min=1,
                                                   help="Open connections per client address; "
                                                   "more are refused with 503."),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level."),
    openenv: bool = typer.Option(False, "--openenv", help="Also speak OpenEnv's protocol (a "
                                 "WebSocket at /ws; /schema, /metadata) for OpenEnv clients."),
    json_out: bool = typer.Option(False, "--json", help="Once listening, print one JSON line "
                                  "on stdout: the URL, the reward endpoint and the pool."),
) -> None:
    """Serve rewards (OpenRLHF's POST /get_reward) and environments (/v1/...) over HTTP."""
    from rlhub.integrations.server.app import ServerConfig, run

    config = ServerConfig(host=host, port=port, ray=ray, ray_threads=ray_threads,
                          ray_actor_cpus=ray_actor_cpus, ray_start_timeout_s=ray_start_timeout,
                          mixture=str(mixture) if mixture else None, max_inflight=max_inflight,
                          episode_ttl_s=episode_ttl, infra_retries=infra_retries,
                          log_level=log_level, openenv=openenv,
                          allow_domains=tuple(allow_domain or ()), max_items=max_items,
                          max_body_bytes=int(max_body_mb * (1 << 20)),
                          body_timeout_s=body_timeout, header_timeout_s=header_timeout,
                          max_connections_per_client=max_connections_per_client,
                          label_key_file=str(label_key_file) if label_key_file else None)
    config.workers = workers
    if strip_token:
        config.strip_tokens = tuple(strip_token)

    def ready(url: str, pool: dict[str, Any]) -> None:
        size = (f"{pool.get('live')} of {pool.get('workers')} Ray actors up, the rest as the "
                "cluster places them" if ray else f"{pool.get('workers')} threads")
        typer.echo(f"rlhub serve: listening on {url} (POST {url}/get_reward; {size})", err=True)
        if json_out:
            emit_jsonl({"url": url, "get_reward": f"{url}/get_reward", "health": f"{url}/health",
                        "pool": pool})

    run(config, get_registry(), ready)


@handle_errors
def export(
    mixture: Path = typer.Option(..., "--mixture", help="Mixture YAML or JSON file."),
    n: int = typer.Option(..., "-n", min=0, help="Rows to write, split exactly by weight."),
    out: Path = typer.Option(..., "--out", help="JSONL file to write."),
    split: str = typer.Option(None, "--split", help="Task split [the mixture's, usually train]."),
    seed: int = typer.Option(None, "--seed", help="Task seed [the mixture's]."),
    start: int = typer.Option(0, "--start", min=0, help="First task index of every domain."),
    role: str = typer.Option(None, "--role", help="train (the scheduler may replace and observe "
                             "the rows) or eval (always played as written) [train for the train "
                             "split, else eval]."),
    label_key_file: Path = typer.Option(None, "--label-key-file", help="Sign every label with "
                                        "this secret (serve with the same key) "
                                        "[$RLHUB_LABEL_KEY; unsigned labels are re-derived]."),
    json_out: bool = JsonOpt,
) -> None:
    """Write an OpenRLHF prompt dataset (prompt, label, datasource, gold) from a mixture."""
    from rlhub.integrations.openrlhf.export import default_role, export_tasks, stochastic_domains, write_jsonl
    from rlhub.labels import load_key
    from rlhub.scheduler import load_mixture

    registry = get_registry()
    tasks, counts = export_tasks(mixture, n, registry, split=split, seed=seed, start=start)
    role = role or default_role(split or load_mixture(mixture, registry)["split"])
    written = write_jsonl(out, tasks, role, load_key(label_key_file),
                          stochastic_domains(tasks, registry))
    if json_out:
        emit_json({"out": str(out), "rows": written, "role": role, "counts": counts})
        return
    typer.echo(f"wrote {written} rows to {out}", err=True)
    for domain, k in counts.items():
        typer.echo(f"{k:8d}  {domain}")
