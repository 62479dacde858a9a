"""What ``rlhub serve`` refuses before any work starts, and how one bad sample stays alone.

* :func:`read_raw`: the request body is read as a stream and refused with 413 the moment it
  passes ``max_body_bytes`` (a chunked body, which has no Content-Length, is never buffered
  whole), and with 408 when it has not all arrived within ``deadline_s`` (a client sending one
  byte a minute holds its connection for that long, never a slot of the admission gate: the
  body is read before admission); JSON nested deeper than the decoder allows is a 400, not a 500.
  Bodies held in memory (arriving, or parked at the gate) share one :class:`BodyBudget`: past it,
  reading waits for bytes to be released, so many clients sending large bodies at once cannot
  fill the machine.
* :func:`check_items`: a request may carry at most ``max_items`` samples (413 naming the limit
  and what to do), so a million-item request cannot occupy the event loop.
* :func:`isolated`: one sample's crash (a label nested 100,000 deep, a bug) becomes that sample's
  failure outcome; the other samples of the request keep their rewards.
* :func:`label_refused`: a refused label becomes the domain's minimum reward with failure class
  ``label`` (never an HTTP error: OpenRLHF drops failed reward requests and crashes later).
* :func:`exit_past_stuck_threads`: after shutdown, a verifier thread stuck in C code must not
  keep the process alive (the interpreter joins every thread at exit).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import sys
import threading
import time
from collections.abc import Awaitable
from typing import Any

from rlhub import labels
from rlhub.errors import LabelError
from rlhub.failures import of_exception
from rlhub.integrations.server.protocol import Outcome, outcome_from_score
from rlhub.task import Score


class RequestRefused(Exception):
    """A request refused as a whole: answered with ``status`` and ``{"error": message}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class BodyBudget:
    """Bytes of request bodies held in memory at once, at most ``limit`` (one body over it is
    let through alone); all calls on the server's event loop."""

    def __init__(self, limit: int):
        self.limit = limit
        self.held = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    async def take(self, size: int) -> None:
        while self.held and self.held + size > self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            await waiter
        self.held += size

    def give(self, size: int) -> None:
        self.held -= size
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)


async def read_raw(request: Any, max_bytes: int, deadline_s: float | None = None,
                   budget: BodyBudget | None = None) -> bytes:
    """The request's body, read as a stream and refused past ``max_bytes`` (413) or past
    ``deadline_s`` seconds (408; None: no deadline); see the module docstring. With a
    ``budget``, the body's bytes are taken from it; the caller gives them back when done."""
    declared = int(request.headers.get("content-length") or 0)
    if declared > max_bytes:
        raise RequestRefused(413, f"expected a body of at most {max_bytes} bytes, found "
                                  f"{declared} (Content-Length)")
    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(deadline_s):
            await _collect(request, max_bytes, chunks, budget)
    except BaseException as exc:
        if budget is not None:
            budget.give(sum(map(len, chunks)))
        if isinstance(exc, TimeoutError):
            raise RequestRefused(408, f"expected the whole body within {deadline_s:g} s, found "
                                      f"{sum(map(len, chunks))} bytes by then; send the body at "
                                      "once") from None
        raise
    return b"".join(chunks)


async def _collect(request: Any, max_bytes: int, chunks: list[bytes],
                   budget: BodyBudget | None) -> None:
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise RequestRefused(413, f"expected a body of at most {max_bytes} bytes, found "
                                      "more; send smaller requests")
        if budget is not None:
            await budget.take(len(chunk))
        chunks.append(chunk)


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """A JSON object body; 400 for invalid JSON, deep nesting or another JSON type."""
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise RequestRefused(400, f"expected a JSON body, found invalid JSON ({reason})") from None
    if not isinstance(body, dict):
        raise RequestRefused(400, f"expected a JSON object body, found {type(body).__name__}")
    return body


def check_items(count: int, max_items: int) -> None:
    """413 when a request carries more than ``max_items`` samples."""
    if count > max_items:
        raise RequestRefused(413, f"expected at most {max_items} items per request, found "
                                  f"{count}; split the batch (or raise --max-items)")


async def isolated(work: Awaitable[Outcome], reward: float) -> Outcome:
    """``await work``; any exception becomes this sample's failure outcome at ``reward``."""
    try:
        return await work
    except Exception as exc:  # noqa: BLE001 - one sample's crash must not cost the batch
        return Outcome.failure(reward, f"{type(exc).__name__}: {str(exc)[:500]}",
                               of_exception(exc))


def refusal_score(reward_range: tuple[float, float], components: dict[str, Any],
                  error: str) -> Score:
    """The score of a refused label: the minimum, every component 0, class ``label``."""
    return Score(reward_range[0], dict.fromkeys(components, 0.0), error=error, failure="label")


def label_refused(manifest: Any | None, error: str) -> Outcome:
    """The outcome of a refused label (see the module docstring)."""
    if manifest is None:
        return Outcome.failure(0.0, error, "label")
    score = refusal_score(manifest.reward_range, manifest.components, error)
    return outcome_from_score(score, manifest.reward_range, 0.0)


def claimed_domain(label: Any) -> str | None:
    """The domain a label names, when it can be read at all (for metrics and refusals)."""
    try:
        return labels.parse(label)[0]
    except (LabelError, RecursionError):
        return None


def exit_past_stuck_threads(grace_s: float) -> None:
    """Exit now if verification threads outlive ``grace_s``: the interpreter would wait for
    every one of them at exit, and a verifier stuck in C code would keep a stopped server alive."""
    deadline = time.monotonic() + grace_s
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.current_thread()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
