"""``rlhub policy``: serve a local or built-in model over an OpenAI-compatible HTTP API."""

from __future__ import annotations

import typer

from rlhub.cli.common import emit_jsonl, get_registry, handle_errors, json_object

policy_app = typer.Typer(help="Policies: serve a model behind an OpenAI-compatible API.",
                         no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")


@policy_app.command("serve")
@handle_errors
def serve(
    spec: str = typer.Argument(..., help="Policy spec: builtin:tiny, hf:PATH, openai:URL#MODEL."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind."),
    port: int = typer.Option(8000, "--port", help="Port to bind (0: any free one; the address "
                             "is printed once the server listens)."),
    model_name: str = typer.Option(None, "--model-name", help="Model id to report (default: "
                                   "derived from SPEC)."),
    max_batch: int = typer.Option(32, "--max-batch", help="Most conversations per model call."),
    options: str = typer.Option("{}", "--options", help="Policy options as JSON "
                                "(sampling defaults, seed, ...)."),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level."),
    json_out: bool = typer.Option(False, "--json", help="Once listening, print one JSON line "
                                  "on stdout: the URL and the API root."),
) -> None:
    """Serve SPEC at http://HOST:PORT/v1 (chat completions and models)."""
    from rlhub.policy.serve import serve as run_server

    opts = json_object(options, "--options")
    opts.setdefault("max_batch", max_batch)
    def ready(url: str) -> None:
        typer.echo(f"rlhub policy serve: {spec} listening on {url} (API root {url}/v1)", err=True)
        if json_out:
            emit_jsonl({"url": url, "api_root": f"{url}/v1", "spec": spec})

    run_server(spec, get_registry(), host=host, port=port, model_name=model_name, options=opts,
               log_level=log_level, ready=ready)
