"""``rlhub policy serve SPEC``: an OpenAI-compatible HTTP server for any rlhub policy.

Endpoints: ``POST /v1/chat/completions`` (``messages``, ``temperature``, ``top_p``,
``max_tokens``, ``stop``, ``seed``, ``n``; no streaming), ``GET /v1/models`` and ``GET /health``.
Concurrent requests to a local model are merged into batches by the policy's micro-batcher.
A failed generation answers HTTP 500 with an OpenAI-style ``{"error": {...}}`` body.
"""

# No ``from __future__ import annotations`` here: FastAPI must see the request model classes
# defined inside make_app as real objects, not as strings it cannot resolve.
import time
import uuid
from typing import Any

from rlhub.errors import PolicyError
from rlhub.policy.protocol import generate_detailed


def make_app(policy: Any, model_name: str) -> Any:
    """The FastAPI app serving ``policy`` under the model id ``model_name``."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse
    from pydantic import BaseModel, Field

    class ChatMessage(BaseModel):
        role: str
        content: str

    class ChatRequest(BaseModel):
        model: str = model_name
        messages: list[ChatMessage] = Field(min_length=1)
        temperature: float | None = Field(None, ge=0)
        top_p: float | None = Field(None, gt=0, le=1)
        max_tokens: int | None = Field(None, ge=1)
        stop: str | list[str] | None = None
        seed: int | None = None
        n: int = Field(1, ge=1, le=64)
        stream: bool = False

    app = FastAPI(title="rlhub policy server")
    created = int(time.time())

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "model": model_name}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": model_name, "object": "model",
                                            "created": created, "owned_by": "rlhub"}]}

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(req: ChatRequest) -> Any:
        if req.stream:
            return _error(JSONResponse, 400, "streaming is not supported; send stream=false")
        sampling = _sampling(req)
        messages = [m.model_dump() for m in req.messages]
        gens = await generate_detailed(policy, [messages] * req.n, **sampling)
        failed = [g.error for g in gens if g.error]
        if failed:
            return _error(JSONResponse, 500, f"generation failed: {failed[0]}")
        return _completion(model_name, gens)

    return app


def _sampling(req: Any) -> dict[str, Any]:
    stop = [req.stop] if isinstance(req.stop, str) else req.stop
    values = {"temperature": req.temperature, "top_p": req.top_p, "max_tokens": req.max_tokens,
              "stop": stop, "seed": req.seed}
    return {k: v for k, v in values.items() if v is not None}


def _error(response_cls: Any, status: int, message: str) -> Any:
    return response_cls({"error": {"message": message, "type": "server_error" if status >= 500
                                   else "invalid_request_error", "code": status}},
                        status_code=status)


def _completion(model_name: str, gens: list[Any]) -> dict[str, Any]:
    prompt_tokens = gens[0].prompt_tokens or 0
    completion_tokens = sum(g.completion_tokens or 0 for g in gens)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": [{"index": i, "message": {"role": "assistant", "content": g.text},
                     "finish_reason": g.finish_reason or "stop"} for i, g in enumerate(gens)],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def serve(spec: str, *, host: str = "127.0.0.1", port: int = 8000, model_name: str | None = None,
          options: dict[str, Any] | None = None, log_level: str = "warning",
          ready: Any = None) -> None:
    """Build the policy for ``spec`` and serve it until interrupted; ``ready(url)`` once it
    listens (``port`` 0 takes any free port)."""
    from rlhub import serving
    from rlhub.policy import make_policy

    policy = make_policy(spec, options or {})
    name = model_name or spec.split("#")[-1].split(":")[-1].rstrip("/").rsplit("/", 1)[-1]
    if not serving.serve(make_app(policy, name), host=host, port=port, ready=ready,
                         log_level=log_level):
        raise PolicyError("rlhub policy serve did not start; the lines above say why")
