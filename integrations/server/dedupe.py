"""Idempotent requests of ``rlhub serve``: the ``Idempotency-Key`` header.

A client that may retry a call that changes state (open an episode, step it, lease a task, report
a group) sends a key that is fresh for each logical call and the same on every retry of it. The
server runs the first request with a key and answers every other request with that key from that
one run: while it is in flight a retry waits for it, afterwards the retry gets the stored answer.
So a retried step never submits a completion twice, the retry of a step whose first attempt closed
the episode still gets that step's reward (not a 404), and a retried lease takes no second task.

A key names one request: the same key on another method, path or body (a replay from another
episode, a client bug) is refused with 409 and changes nothing. A retry of a known key does not
queue at the admission gate again: it adds no work.

The log is bounded in keys and in bytes, whatever clients send. Keys are forgotten ``ttl_s`` after
they were first seen, and answered keys also when more than ``max_keys`` are held or their answers
take more than ``max_bytes`` (oldest first; requests in flight are bounded by the admission gate).
An answer larger than ``max_answer_bytes`` (``/v1/sample`` with a large ``n``) is given to its
request and not kept: a retry of its key is answered ``410`` saying so, and never runs again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

HEADER = "idempotency-key"
KEY_PATTERN = re.compile(r"[A-Za-z0-9._:@/+=-]{1,200}")

#: ``(status, the JSON body as bytes)``: what the log keeps is measured in bytes.
Answer = tuple[int, bytes]
Run = Callable[[], Awaitable[Answer]]
#: What a kept key costs besides its answer (the key, its fingerprint, the entry itself).
ENTRY_BYTES = 512


class BadKey(ValueError):
    """An ``Idempotency-Key`` header that is not a key."""


@dataclass
class Entry:
    """One key: the request it names and its answer (a future until the first run ends)."""

    fingerprint: str
    answer: asyncio.Future[Answer]
    created: float
    size: int = ENTRY_BYTES


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


def error(status: int, message: str) -> Answer:
    return status, json.dumps({"error": message}).encode()


class RequestLog:
    """Keys seen recently and their answers (all calls on the server's event loop)."""

    def __init__(self, ttl_s: float = 900.0, max_keys: int = 50_000, max_bytes: int = 64 << 20,
                 max_answer_bytes: int = 1 << 20):
        self.ttl_s = ttl_s
        self.max_keys = max_keys
        self.max_bytes = max_bytes
        self.max_answer_bytes = max_answer_bytes
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.bytes = 0
        self.replayed = 0
        self.conflicts = 0
        self.unkept = 0

    def known(self, key: str) -> bool:
        self._expire()
        return key in self.entries

    async def respond(self, request: Any, body: bytes, run: Run,
                      admit: Callable[[], AbstractAsyncContextManager[Any]]) -> Answer:
        """``run()`` behind the admission gate ``admit``, run once per request key; a request
        without a key just runs. ``body`` is the request's body, read in full already. The retry
        of a known key skips the gate: it adds no work."""
        try:
            key = request_key(request.headers)
        except BadKey as exc:
            return error(400, str(exc))
        if key is None:
            async with admit():
                return await run()
        print_ = fingerprint(request.method, request.url.path, body)
        if self.known(key):
            return await self.answer(key, print_, run)
        async with admit():
            return await self.answer(key, print_, run)

    async def answer(self, key: str, print_: str, run: Run) -> Answer:
        """``run()``'s answer for the first request with ``key``; the same answer for the rest."""
        self._expire()
        entry = self.entries.get(key)
        if entry is not None:
            return await self._replay(key, entry, print_)
        entry = Entry(print_, asyncio.get_running_loop().create_future(), time.monotonic())
        self.entries[key] = entry
        try:
            result = await run()
        except BaseException:
            self.entries.pop(key, None)  # cancelled before answering: a retry runs it again
            entry.answer.set_result(error(503, f"the first request with this {HEADER} was "
                                               "cancelled; send it again"))
            raise
        self._keep(key, entry, result)
        return result

    def _keep(self, key: str, entry: Entry, result: Answer) -> None:
        """Store ``result`` for retries, or the note that it was too large to keep."""
        if len(result[1]) > self.max_answer_bytes:
            self.unkept += 1
            result = error(410, f"the answer to {HEADER} {key!r} was {len(result[1])} bytes, "
                                f"more than the {self.max_answer_bytes} a retry is kept for; it "
                                "is not run again: send a new key (ask for fewer items)")
        entry.answer.set_result(result)
        if self.entries.get(key) is entry:
            entry.size += len(result[1])
            self.bytes += entry.size
        self._expire()

    async def _replay(self, key: str, entry: Entry, print_: str) -> Answer:
        if entry.fingerprint != print_:
            self.conflicts += 1
            return error(409, f"{HEADER} {key!r} was first sent with another method, path or "
                              "body; a key names exactly one request (send a new key for a new "
                              "request)")
        self.replayed += 1
        return await asyncio.shield(entry.answer)

    def _expire(self) -> None:
        now = time.monotonic()
        while self.entries:
            key, entry = next(iter(self.entries.items()))
            expired = now - entry.created > self.ttl_s
            over = len(self.entries) > self.max_keys or self.bytes > self.max_bytes
            if not expired and (not over or not entry.answer.done()):
                break  # an answer still being computed is never forgotten before its time
            del self.entries[key]
            if entry.answer.done():
                self.bytes -= entry.size

    def state(self) -> dict[str, int]:
        return {"keys": len(self.entries), "bytes": self.bytes, "replayed": self.replayed,
                "conflicts": self.conflicts, "unkept": self.unkept}
