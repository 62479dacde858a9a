"""OpenEnv's wire protocol on ``rlhub serve --openenv``: any rlhub domain for OpenEnv clients.

OpenEnv clients (``openenv.GenericEnvClient``, and every typed client built on ``EnvClient``)
speak JSON messages over a WebSocket at ``/ws``; one connection is one session:

=====================================  ============================================================
client sends                           server answers
=====================================  ============================================================
``{"type": "reset", "data": {...}}``   ``{"type": "observation", "data": {"observation": {...},
                                       "reward": null, "done": false}}``: a new episode
``{"type": "step", "data": {"message":  ``{"type": "observation", "data": {"observation", "reward",
"..."}}``                              "done", "metadata"}}``: the completion scored
``{"type": "state"}``                  ``{"type": "state", "data": {"episode_id", "step_count",
                                       "domain", "task_id"}}``
``{"type": "close"}``                  the session ends
=====================================  ============================================================

``reset`` takes ``domain`` (an id; optional when the server has a ``--mixture``: its scheduler
picks), ``split``, ``seed`` and ``index``, nothing else. The observation carries ``messages``
(the chat messages to append: the task's prompt after a reset, the environment's reply after a
step; empty when done), ``domain``, ``task_id``, ``turn`` and ``max_turns``. Each step's
``reward`` is the change in the episode's return (so rewards sum to the trajectory reward, repair
discount included) and ``metadata`` holds the turn's score (components, passed, error). Errors
answer ``{"type": "error", "data": {"message", "code"}}`` with OpenEnv's codes, and the session
stays usable. ``GET /schema`` and ``GET /metadata`` describe the action and the server.

An OpenEnv client is untrusted. Every message is read under a size limit and a deadline: uvicorn
refuses a frame longer than ``max_body_bytes`` from its header, before reading it (``ws_max_size``,
set by :func:`rlhub.integrations.server.app.uvicorn_options`; the connection closes with 1009), and a
session that sends no whole message for ``episode_ttl_s`` is closed (its episode would have expired
anyway). A session holds at most one episode (a new ``reset`` drops the old one, a disconnect drops
it), episodes count against ``max_episodes``, the connection counts against the per-address cap,
and every reset and step passes the server's admission gate once its message has fully arrived.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rlhub.integrations.server.bodies import EpisodeRequest, SampleRequest, StepRequest, validate

RESET_KEYS = {"domain", "split", "seed", "index", "episode_id"}
ACTION_SCHEMA = {"title": "RlhubAction", "type": "object", "required": ["message"],
                 "additionalProperties": False,
                 "properties": {"message": {"type": "string",
                                            "description": "the policy's completion"}}}
OBSERVATION_SCHEMA = {"title": "RlhubObservation", "type": "object", "properties": {
    "messages": {"type": "array", "items": {"type": "object"}}, "domain": {"type": "string"},
    "task_id": {"type": "string"}, "turn": {"type": "integer"}, "max_turns": {"type": "integer"},
    "reward": {"type": ["number", "null"]}, "done": {"type": "boolean"},
    "metadata": {"type": "object"}}}


class ProtocolError(Exception):
    """A client message this server refuses; ``code`` is OpenEnv's ``WSErrorCode``."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class OpenEnvSession:
    """One WebSocket connection: at most one open episode of the service."""

    def __init__(self, service: Any):
        self.service = service
        self.episode_id: str | None = None
        self.task: dict[str, Any] = {}
        self.steps = 0
        self.max_turns = 0

    async def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        kind = message.get("type")
        data = message.get("data") or {}
        if not isinstance(data, dict):
            raise ProtocolError("VALIDATION_ERROR", "expected 'data' to be an object")
        if kind == "reset":
            return {"type": "observation", "data": await self.reset(data)}
        if kind == "step":
            return {"type": "observation", "data": await self.step(data)}
        if kind == "state":
            return {"type": "state", "data": self.state()}
        raise ProtocolError("UNKNOWN_TYPE", f"Unknown message type: {kind}")

    async def reset(self, data: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(data) - RESET_KEYS)
        if unknown:
            raise ProtocolError("VALIDATION_ERROR", f"reset takes {sorted(RESET_KEYS)}; found "
                                f"unknown {unknown}")
        await self.drop()
        body = {k: data[k] for k in ("domain", "split", "seed", "index") if k in data}
        async with self.service.gate.admit():
            if "domain" not in body:
                body = {"task": (await self.service.sample(SampleRequest())).tasks[0]}
            opened = await self.service.open_episode(
                validate(EpisodeRequest, body, self.service.context))
        self.episode_id, self.task = opened["episode_id"], opened["task"]
        self.steps, self.max_turns = 0, opened["max_turns"]
        prompt = opened["observation"]
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        return {"observation": self._observation(messages), "reward": None, "done": False}

    async def step(self, data: dict[str, Any]) -> dict[str, Any]:
        if self.episode_id is None:
            raise ProtocolError("EXECUTION_ERROR", "no episode: send a reset first")
        message = data.get("message")
        if not isinstance(message, str) or set(data) - {"message", "metadata"}:
            raise ProtocolError("VALIDATION_ERROR", "expected the action {\"message\": "
                                f"\"<completion>\"}}, found keys {sorted(data)}")
        async with self.service.gate.admit():
            result = await self.service.step(StepRequest(completion=message), self.episode_id)
        self.steps += 1
        if result["done"]:
            self.episode_id = None
        observation = result["observation"]
        messages = [] if observation is None else [{"role": "user", "content": observation}]
        return {"observation": self._observation(messages), "reward": result["reward"],
                "done": result["done"], "metadata": result["info"]}

    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps,
                "domain": self.task.get("domain"), "task_id": self.task.get("id")}

    def _observation(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {"messages": messages, "domain": self.task.get("domain"),
                "task_id": self.task.get("id"), "turn": self.steps, "max_turns": self.max_turns}

    async def drop(self) -> None:
        if self.episode_id is not None:
            await self.service.close_episode(self.episode_id)
            self.episode_id = None


def mount(app: Any, service: Any) -> None:
    """Add OpenEnv's ``/ws``, ``/schema`` and ``/metadata`` to the ``rlhub serve`` app."""
    from starlette.responses import JSONResponse
    from starlette.websockets import WebSocket

    async def websocket(ws: WebSocket) -> None:
        await ws.accept()
        await serve_session(ws, OpenEnvSession(service), service.config.episode_ttl_s)

    async def schema(_: Any) -> Any:
        return JSONResponse({"action": ACTION_SCHEMA, "observation": OBSERVATION_SCHEMA,
                             "reset_observation": OBSERVATION_SCHEMA,
                             "state": {"title": "RlhubState", "type": "object"}})

    async def metadata(_: Any) -> Any:
        from rlhub import __version__

        return JSONResponse({"name": "rlhub", "version": __version__,
                             "description": f"{len(service.registry.ids())} rlhub domains; reset "
                             "with {\"domain\": ID}"})

    app.router.add_websocket_route("/ws", websocket)
    app.router.add_route("/schema", schema, methods=["GET"])
    app.router.add_route("/metadata", metadata, methods=["GET"])


async def serve_session(ws: Any, session: OpenEnvSession, idle_s: float) -> None:
    """Answer one connection's messages until it closes or sends nothing whole for ``idle_s``;
    its episode is dropped at the end."""
    from starlette.websockets import WebSocketDisconnect

    try:
        while True:
            raw = await _next_message(ws, idle_s)
            if raw is None:
                break
            reply = await _answer(session, raw)
            if reply is None:
                break
            await ws.send_text(reply)
    except WebSocketDisconnect:
        pass
    finally:
        await session.drop()


async def _next_message(ws: Any, idle_s: float) -> str | None:
    """The next text message, or None (after closing) when none came whole within ``idle_s``;
    a binary message is read as UTF-8 text."""
    from starlette.websockets import WebSocketDisconnect

    try:
        message = await asyncio.wait_for(ws.receive(), idle_s)
    except TimeoutError:
        await ws.close(1008, f"no message within {idle_s:g} s")
        return None
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    text = message.get("text")
    return text if text is not None else (message.get("bytes") or b"").decode("utf-8", "replace")


async def _answer(session: OpenEnvSession, raw: str) -> str | None:
    from rlhub.integrations.server.protocol import ApiError

    try:
        message = json.loads(raw)
    except ValueError as exc:
        return _error("INVALID_JSON", f"Invalid JSON: {exc}")
    try:
        if not isinstance(message, dict):
            raise ProtocolError("INVALID_JSON", "expected a JSON object message")
        if message.get("type") == "close":
            return None
        return json.dumps(await session.handle(message))
    except ProtocolError as exc:
        return _error(exc.code, str(exc))
    except ApiError as exc:
        return _error("EXECUTION_ERROR", str(exc))
    except Exception as exc:  # noqa: BLE001 - a server bug is an error message, not a dead socket
        return _error("EXECUTION_ERROR", f"{type(exc).__name__}: {exc}")


def _error(code: str, message: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})
