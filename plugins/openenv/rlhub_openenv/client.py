"""OpenEnv's wire protocol, spoken directly (no ``openenv`` import): one WebSocket session.

The server side is ``openenv.core.env_server.http_server``: JSON frames on ``/ws``,
``{"type": "reset"|"step"|"state"|"close", "data": ...}`` answered by ``{"type":
"observation", "data": {"observation", "reward", "done", "metadata"}}`` or ``{"type": "error",
"data": {"message", "code"}}``.

Failures are classed for rlhub: a server that cannot be reached, drops the connection, times
out, is at capacity or cannot build its environment raises :class:`rlhub.SandboxError`
(infrastructure, never the model's fault); an action the server rejects as invalid raises
:class:`ActionRejected` (the model's answer did not fit the action schema); any other server
error, a frame that is not JSON and a reward that is not a finite number raise
:class:`rlhub.VerifierError` (the environment is broken). A frame over ``MAX_MESSAGE_BYTES``
closes the connection (a sandbox error).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from rlhub import SandboxError, VerifierError

CONNECT_TIMEOUT_S = 10.0
MESSAGE_TIMEOUT_S = 60.0
MAX_MESSAGE_BYTES = 16 << 20
INFRA_CODES = {"CAPACITY_REACHED", "FACTORY_ERROR", "SESSION_ERROR"}


class ActionRejected(Exception):
    """The server refused the action (its schema did not accept the completion)."""


@dataclass
class Result:
    """One observation frame: the observation, this step's reward, and whether it ended."""

    observation: dict[str, Any]
    reward: float
    done: bool


def ws_url(url: str) -> str:
    base = url.rstrip("/")
    for http, ws in (("https://", "wss://"), ("http://", "ws://")):
        if base.startswith(http):
            base = ws + base[len(http):]
    return f"{base}/ws"


class OpenEnvClient:
    """One connection to an OpenEnv server; close it (or use ``with``) when the episode ends."""

    def __init__(self, url: str):
        from websockets.sync.client import connect

        self.url = ws_url(url)
        try:
            self.ws = connect(self.url, open_timeout=CONNECT_TIMEOUT_S,
                              max_size=MAX_MESSAGE_BYTES, proxy=None)
        except Exception as exc:  # noqa: BLE001 - every way of not connecting is infrastructure
            raise SandboxError(f"OpenEnv server {self.url} is unreachable: "
                               f"{type(exc).__name__}: {exc}") from exc

    def __enter__(self) -> OpenEnvClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def reset(self, **kwargs: Any) -> Result:
        return self._observation(self._call({"type": "reset", "data": kwargs}))

    def step(self, action: dict[str, Any]) -> Result:
        return self._observation(self._call({"type": "step", "data": action}))

    def close(self) -> None:
        try:
            self.ws.send(json.dumps({"type": "close"}))
        except Exception:  # noqa: BLE001,S110 - closing a dead socket is not an error
            pass
        self.ws.close()

    def _call(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            self.ws.send(json.dumps(message))
            raw = self.ws.recv(timeout=MESSAGE_TIMEOUT_S)
        except (TimeoutError, OSError) as exc:
            raise SandboxError(f"OpenEnv server {self.url} failed to answer a "
                               f"{message['type']}: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - websockets' ConnectionClosed and kin
            raise SandboxError(f"OpenEnv server {self.url} dropped the connection: "
                               f"{type(exc).__name__}: {exc}") from exc
        try:
            reply = json.loads(raw)
        except ValueError:
            raise VerifierError(f"OpenEnv server {self.url}: expected a JSON frame, found "
                                f"{str(raw)[:200]!r}") from None
        if not isinstance(reply, dict) or reply.get("type") not in ("observation", "error"):
            raise VerifierError(f"OpenEnv server {self.url}: expected an observation frame, "
                                f"found {str(reply)[:200]}")
        return reply

    def _observation(self, reply: dict[str, Any]) -> Result:
        data = reply.get("data") or {}
        if reply["type"] == "error":
            code, text = data.get("code", "UNKNOWN"), data.get("message", "")
            if code in INFRA_CODES:
                raise SandboxError(f"OpenEnv server {self.url}: {code}: {text}")
            if code == "VALIDATION_ERROR":
                raise ActionRejected(text)
            raise VerifierError(f"OpenEnv server {self.url}: {code}: {text}")
        reward = data.get("reward")
        try:
            value = float(reward or 0.0)
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            raise VerifierError(f"OpenEnv server {self.url}: expected a finite reward, found "
                                f"{str(reward)[:50]}")
        return Result(data.get("observation") or {}, value, bool(data.get("done")))
