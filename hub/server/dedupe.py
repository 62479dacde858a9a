"""Idempotent requests of ``rlhub serve``: the ``Idempotency-Key`` header.

A client that may retry a call that changes state (open an episode, step it, lease a task, report
a group) sends a key that is fresh for each logical call and the same on every retry of it. The
server runs the first request with a key and answers every other request with that key from that
one run: while it is in flight a retry waits for it, afterwards the retry gets the stored answer.
So a retried step never submits a completion twice, the retry of a step whose first attempt closed
the episode still gets that step's reward (not a 404), and a retried lease takes no second task.

A key names one request: the same key on another method, path or body (a replay from another
episode, a client bug) is refused with 409 and changes nothing. A retry of a known key does not
queue at the admission gate again: it adds no work. Keys are forgotten ``ttl_s`` after they were
first seen, and answered keys also when more than ``max_keys`` are held (oldest first), so the log
stays bounded whatever clients send (requests in flight are bounded by the admission gate).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

HEADER = "idempotency-key"
KEY_PATTERN = re.compile(r"[A-Za-z0-9._:@/+=-]{1,200}")

Answer = tuple[int, Any]
Run = Callable[[Any], Awaitable[Answer]]


class BadKey(ValueError):
    """An ``Idempotency-Key`` header that is not a key."""


@dataclass
class Entry:
    """One key: the request it names and its answer (a future until the first run ends)."""

    fingerprint: str
    answer: asyncio.Future[Answer]
    created: float = field(default_factory=time.monotonic)


def request_key(headers: Any) -> str | None:
    """The request's ``Idempotency-Key``, None without one; :class:`BadKey` when invalid."""
    key = headers.get(HEADER)
    if key is None:
        return None
    if not KEY_PATTERN.fullmatch(key):
        raise BadKey(f"expected the {HEADER} header to be 1-200 characters of "
                          f"[A-Za-z0-9._:@/+=-], found {key[:80]!r}")
    return str(key)


def fingerprint(method: str, path: str, body: bytes) -> str:
    """What a key must keep naming: the method, the path and the body."""
    digest = hashlib.sha256(f"{method} {path}\n".encode())
    digest.update(body)
    return digest.hexdigest()


class RequestLog:
    """Keys seen recently and their answers (all calls on the server's event loop)."""

    def __init__(self, ttl_s: float = 900.0, max_keys: int = 50_000):
        self.ttl_s = ttl_s
        self.max_keys = max_keys
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.replayed = 0
        self.conflicts = 0

    def known(self, key: str) -> bool:
        self._expire()
        return key in self.entries

    async def respond(self, request: Any, run: Run,
                      admit: Callable[[], AbstractAsyncContextManager[Any]] | None,
                      read_body: Callable[[Any], Awaitable[bytes]]) -> Answer:
        """``run(request)`` behind the admission gate ``admit`` (None: ungated), run once per
        request key; a request without a key just runs. The retry of a known key skips the
        gate: it adds no work."""
        try:
            key = request_key(request.headers)
        except BadKey as exc:
            return 400, {"error": str(exc)}
        if key is not None and self.known(key) or admit is None:
            return await self._keyed(request, key, run, read_body)
        async with admit():
            return await self._keyed(request, key, run, read_body)

    async def _keyed(self, request: Any, key: str | None, run: Run,
                     read_body: Callable[[Any], Awaitable[bytes]]) -> Answer:
        if key is None:
            return await run(request)
        try:
            raw = await read_body(request)
        except Exception as exc:  # noqa: BLE001 - the server's own body errors carry a status
            return int(getattr(exc, "status", 400)), {"error": str(exc)}
        print_ = fingerprint(request.method, request.url.path, raw)
        return await self.answer(key, print_, lambda: run(request))

    async def answer(self, key: str, print_: str, run: Callable[[], Awaitable[Answer]]
                     ) -> Answer:
        """``run()``'s answer for the first request with ``key``; the same answer for the rest."""
        self._expire()
        entry = self.entries.get(key)
        if entry is not None:
            return await self._replay(key, entry, print_)
        entry = Entry(print_, asyncio.get_running_loop().create_future())
        self.entries[key] = entry
        try:
            result = await run()
        except BaseException:
            self.entries.pop(key, None)  # cancelled before answering: a retry runs it again
            entry.answer.set_result((503, {"error": "the first request with this "
                                            f"{HEADER} was cancelled; send it again"}))
            raise
        entry.answer.set_result(result)
        return result

    async def _replay(self, key: str, entry: Entry, print_: str) -> Answer:
        if entry.fingerprint != print_:
            self.conflicts += 1
            return 409, {"error": f"{HEADER} {key!r} was first sent with another method, path "
                                  "or body; a key names exactly one request (send a new key for "
                                  "a new request)"}
        self.replayed += 1
        return await asyncio.shield(entry.answer)

    def _expire(self) -> None:
        now = time.monotonic()
        while self.entries:
            key, entry = next(iter(self.entries.items()))
            expired = now - entry.created > self.ttl_s
            if not expired and (len(self.entries) <= self.max_keys or not entry.answer.done()):
                break  # an answer still being computed is never forgotten before its time
            del self.entries[key]

    def state(self) -> dict[str, int]:
        return {"keys": len(self.entries), "replayed": self.replayed, "conflicts": self.conflicts}
