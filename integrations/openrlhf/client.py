"""How the OpenRLHF agent module talks to ``rlhub serve``: safe retries under one deadline.

Every call that changes state carries an ``Idempotency-Key`` (:mod:`rlhub.integrations.server.dedupe`),
fresh for each logical call and the same on each of its retries, so a retry is always safe: the
server answers it from the first run. A call is retried on a dropped connection, a timeout or a
5xx answer; a 4xx answer is the client's or the deployment's mistake and is never retried
(:class:`ServerRefused`). All tries of one call share one deadline (``RLHUB_HTTP_DEADLINE_S``): a
slow or queued server never holds a rollout longer than that, however many tries it takes.

:func:`check_health` is the start-up check: the server answers, speaks what the agent needs, and
has a scheduler when the agent is to schedule. It fails the job at once with a message that says
what to change, instead of training on rewards the server could not give.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from typing import Any

from rlhub.errors import TrainerError

#: What the agent needs the server to speak (``/health`` lists ``features``).
NEEDED_FEATURES = ("idempotency-key", "lease-key", "failure-classes")


class ServerError(TrainerError):
    """A call to ``rlhub serve`` that did not get a usable answer."""


class ServerUnavailable(ServerError):
    """No answer before the call's deadline: connection failures, timeouts or 5xx answers."""


class ServerRefused(ServerError):
    """A 4xx answer: the request (or the deployment) is wrong; retrying cannot help."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class ServerMisconfigured(ServerError):
    """The server cannot serve this job as configured; the job must stop and be fixed."""


class Tally:
    """Counts the retries made on behalf of one sample (reported in ``extra_logs``)."""

    retries: int = 0


class ServerClient:
    """Async JSON calls to ``rlhub serve`` (see the module docstring).

    Each try opens its own aiohttp session, as OpenRLHF's reward client does: nothing outlives
    the event loop that made it.
    """

    def __init__(self, url: str, deadline_s: float = 180.0, connect_s: float = 10.0):
        self.url = url.rstrip("/")
        self.deadline_s = deadline_s
        self.connect_s = connect_s

    async def call(self, method: str, path: str, body: Any = None, *, key: str | None = None,
                   tally: Tally | None = None) -> Any:
        """The JSON answer; retried while safe until the deadline (see the module docstring)."""
        loop = asyncio.get_running_loop()
        deadline, tries, last = loop.time() + self.deadline_s, 0, "no try"
        while True:
            try:
                return await self._once(method, path, body, key, deadline - loop.time())
            except _Retryable as exc:
                last, tries = str(exc), tries + 1
            pause = min(0.25 * 2 ** tries, 10.0)
            if key is None and method == "POST" or loop.time() + pause >= deadline:
                raise ServerUnavailable(f"{method} {self.url}{path}: no answer within "
                                        f"{self.deadline_s:g} s after {tries} tries ({last})")
            if tally is not None:
                tally.retries += 1
            await asyncio.sleep(pause)

    async def _once(self, method: str, path: str, body: Any, key: str | None,
                    budget: float) -> Any:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=max(budget, 0.001),
                                        sock_connect=min(self.connect_s, max(budget, 0.001)))
        headers = {"Idempotency-Key": key} if key else None
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session, \
                    session.request(method, self.url + path, json=body, headers=headers) as resp:
                status, text = resp.status, await resp.text()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from None
        if status >= 500 or status == 429:
            raise _Retryable(f"HTTP {status}: {text[:300]}")
        data = _json(text)
        if status >= 400:
            message = data.get("error") if isinstance(data, dict) else None
            raise ServerRefused(status, str(message or text[:300]))
        return data


class _Retryable(Exception):
    """One try failed in a way another try may not."""


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise _Retryable(f"expected a JSON answer, found {text[:200]!r}") from None


def check_health(url: str, schedule: bool, timeout_s: float = 60.0) -> dict[str, Any]:
    """``/health`` of the server, once it answers; :class:`ServerMisconfigured` when it cannot
    serve.

    Blocking (urllib): OpenRLHF builds the agent executor while its vLLM actor starts, before the
    actor serves anything.
    """
    health = _health(url, timeout_s)
    missing = [f for f in NEEDED_FEATURES if f not in (health.get("features") or [])]
    if missing:
        raise ServerMisconfigured(f"rlhub agent: the server at {url} does not speak {missing} "
                                  "(an older rlhub serve?); run the rlhub version of this agent "
                                  "there")
    if schedule and not (health.get("scheduler") or {}).get("enabled"):
        raise ServerMisconfigured(f"rlhub agent: RLHUB_SCHEDULE=1 but the server at {url} runs "
                                  "without --mixture, so it has no scheduler to lease tasks "
                                  "from; start it with `rlhub serve --mixture MIX.yaml` or set "
                                  "RLHUB_SCHEDULE=0")
    return health


def _health(url: str, timeout_s: float) -> dict[str, Any]:
    deadline, last = time.monotonic() + timeout_s, "no try"
    while True:
        try:
            with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=10) as resp:
                return dict(json.loads(resp.read()))
        except (OSError, ValueError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        if time.monotonic() + 1.0 >= deadline:
            raise ServerMisconfigured(f"rlhub agent: expected `rlhub serve` at {url} "
                                      "(RLHUB_SERVER_URL) to answer /health within "
                                      f"{timeout_s:g} s, found {last}; start it where the Ray "
                                      "workers can reach it, or fix the URL")
        time.sleep(1.0)
