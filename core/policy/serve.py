"""``rlhub policy serve SPEC``: an OpenAI-compatible HTTP server for any rlhub policy.

Endpoints: ``POST /v1/chat/completions`` (``messages``, ``temperature``, ``top_p``,
``max_tokens``, ``stop``, ``seed``, ``n``, ``stream``, ``tools``), ``GET /v1/models`` and
``GET /health``. Tool calling follows OpenAI's API: with ``tools`` in the request, the calls a
text policy writes (Hermes ``<tool_call>`` JSON or rlhub's tags, :mod:`rlhub.tools`) come back
as ``message.tool_calls`` with ``finish_reason: "tool_calls"``, as vLLM's tool parsers do; the
conversation may hold assistant ``tool_calls`` and ``tool`` results, which reach a text policy
in text form.
A streamed answer is generated whole, then sent as server-sent events (one content chunk per
choice, a closing chunk with the finish reason and usage, ``data: [DONE]``): enough for clients
that always stream, such as verifiers' harness programs. Message content may be a string, a list
of text parts (joined) or null.
Concurrent requests to a local model are merged into batches by the policy's micro-batcher.
A failed generation answers HTTP 500 with an OpenAI-style ``{"error": {...}}`` body.
"""

# No ``from __future__ import annotations`` here: FastAPI must see the request model classes
# defined inside make_app as real objects, not as strings it cannot resolve.
import time
import uuid
from typing import TYPE_CHECKING, Any

from rlhub.errors import PolicyError
from rlhub.policy.protocol import generate_detailed

if TYPE_CHECKING:
    from rlhub.plugins import Registry


def make_app(policy: Any, model_name: str) -> Any:
    """The FastAPI app serving ``policy`` under the model id ``model_name``."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse
    from pydantic import BaseModel, Field

    class ChatMessage(BaseModel):
        role: str
        content: str | list[dict[str, Any]] | None = None
        tool_calls: list[dict[str, Any]] | None = None
        tool_call_id: str | None = None
        name: str | None = None

        def text(self) -> dict[str, Any]:
            content = self.content
            if isinstance(content, list):
                content = "".join(str(p.get("text", "")) for p in content)
            extra = {k: v for k in ("tool_calls", "tool_call_id", "name")
                     if (v := getattr(self, k)) is not None}
            return {"role": self.role, "content": content or "", **extra}

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
        tools: list[dict[str, Any]] | None = None
        tool_choice: str | dict[str, Any] | None = None

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
        sampling = _sampling(req)
        messages = [m.text() for m in req.messages]
        tools = req.tools if req.tool_choice != "none" else None
        gens = await generate_detailed(policy, [messages] * req.n, tools=tools, **sampling)
        failed = [g.error for g in gens if g.error]
        if failed:
            return _error(JSONResponse, 500, f"generation failed: {failed[0]}")
        completion = _completion(model_name, gens, bool(tools))
        if req.stream:
            from fastapi.responses import StreamingResponse

            return StreamingResponse(_events(completion), media_type="text/event-stream")
        return completion

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


def _message(gen: Any, tools: bool) -> tuple[dict[str, Any], str]:
    """The assistant message of one generation and its finish reason: with ``tools``, the calls
    written in the text become ``tool_calls`` (a proxied endpoint's own calls pass through)."""
    from rlhub.tools import parse_calls, visible_text

    finish = gen.finish_reason or "stop"
    if not tools:
        return {"role": "assistant", "content": gen.text}, finish
    calls = [c.as_openai() for c in parse_calls(gen.text) if not c.problem]
    calls = list(gen.tool_calls or []) + calls
    if not calls:
        return {"role": "assistant", "content": gen.text}, finish
    for call in calls:
        call["id"] = f"call_{uuid.uuid4().hex[:24]}"
    return {"role": "assistant", "content": visible_text(gen.text) or None,
            "tool_calls": calls}, "tool_calls"


def _completion(model_name: str, gens: list[Any], tools: bool = False) -> dict[str, Any]:
    prompt_tokens = gens[0].prompt_tokens or 0
    completion_tokens = sum(g.completion_tokens or 0 for g in gens)
    choices = []
    for i, gen in enumerate(gens):
        message, finish = _message(gen, tools)
        choices.append({"index": i, "message": message, "finish_reason": finish})
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": choices,
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def _events(completion: dict[str, Any]) -> Any:
    """``completion`` as OpenAI's ``chat.completion.chunk`` server-sent events."""
    import json

    head = {k: completion[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    for choice in completion["choices"]:
        message = dict(choice["message"])
        if message.get("tool_calls"):  # streamed calls carry their position
            message["tool_calls"] = [{**c, "index": k} for k, c in enumerate(message["tool_calls"])]
        delta = {"index": choice["index"], "delta": message, "finish_reason": None}
        yield f"data: {json.dumps({**head, 'choices': [delta]})}\n\n"
    closing = [{"index": c["index"], "delta": {}, "finish_reason": c["finish_reason"]}
               for c in completion["choices"]]
    yield f"data: {json.dumps({**head, 'choices': closing, 'usage': completion['usage']})}\n\n"
    yield "data: [DONE]\n\n"


def serve(spec: str, registry: "Registry", *, host: str = "127.0.0.1", port: int = 8000, model_name: str | None = None,
          options: dict[str, Any] | None = None, log_level: str = "warning",
          ready: Any = None) -> None:
    """Build the policy for ``spec`` (through ``registry``) and serve it until interrupted; ``ready(url)`` once it
    listens (``port`` 0 takes any free port)."""
    from rlhub import serving
    from rlhub.policy import make_policy

    policy = make_policy(spec, options or {}, registry=registry)
    name = model_name or spec.split("#")[-1].split(":")[-1].rstrip("/").rsplit("/", 1)[-1]
    if not serving.serve(make_app(policy, name), host=host, port=port, ready=ready,
                         log_level=log_level):
        raise PolicyError("rlhub policy serve did not start; the lines above say why")
