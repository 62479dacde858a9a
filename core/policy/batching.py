"""Micro-batching: merge concurrent ``generate`` calls into one model call.

Rollouts each ask for one completion at a time; a local model is far faster on a batch. A
:class:`MicroBatcher` queues requests from concurrent coroutines, waits ``max_wait_s`` for company,
groups them by sampling parameters, sorts each group by prompt length and hands chunks of up to
``max_batch`` conversations to a synchronous ``run(conversations, sampling)`` function in a
worker thread, one chunk at a time.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlhub.policy.protocol import Conversation, Generation

RunFn = Callable[[list[Conversation], dict[str, Any]], list[Generation]]


@dataclass
class _Request:
    batch: list[Conversation]
    sampling: dict[str, Any]
    future: asyncio.Future[list[Generation]]

    @property
    def key(self) -> str:
        return json.dumps(self.sampling, sort_keys=True, default=str)


class MicroBatcher:
    """Queue ``submit`` calls of one event loop and run them in merged groups (see module doc)."""

    def __init__(self, run: RunFn, *, max_batch: int = 32, max_wait_s: float = 0.005):
        self.run = run
        self.max_batch = max(1, int(max_batch))
        self.max_wait_s = max_wait_s
        self._pending: list[_Request] = []
        self._worker: asyncio.Task[None] | None = None

    async def submit(self, batch: list[Conversation], sampling: dict[str, Any]) -> list[Generation]:
        """Queue ``batch`` and wait for its generations (in order)."""
        if not batch:
            return []
        loop = asyncio.get_running_loop()
        request = _Request(batch, dict(sampling), loop.create_future())
        self._pending.append(request)
        if self._worker is None or self._worker.done() or self._worker.get_loop() is not loop:
            self._worker = loop.create_task(self._drain())
        start = time.perf_counter()
        results = await request.future
        waited = time.perf_counter() - start  # the latency a caller sees: queueing + its batch
        for gen in results:
            gen.latency_s = waited
        return results

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(self.max_wait_s)
            taken, self._pending = self._pending, []
            groups: dict[str, list[_Request]] = {}
            for request in taken:
                groups.setdefault(request.key, []).append(request)
            for group in groups.values():
                await self._run_group(group)

    async def _run_group(self, group: list[_Request]) -> None:
        convs = [conv for request in group for conv in request.batch]
        # Similar lengths share a model call, so short prompts are not padded to long ones.
        order = sorted(range(len(convs)), key=lambda i: sum(len(m["content"]) for m in convs[i]))
        results: list[Generation] = [Generation(None, "not generated")] * len(convs)
        try:
            for i in range(0, len(order), self.max_batch):
                idx = order[i : i + self.max_batch]
                out = await asyncio.to_thread(self.run, [convs[j] for j in idx],
                                              group[0].sampling)
                for j, gen in zip(idx, out):
                    results[j] = gen
        except Exception as exc:  # noqa: BLE001 - a failed model call fails its requests only
            message = f"{type(exc).__name__}: {exc}"
            results = [Generation(None, message) for _ in convs]
        at = 0
        for request in group:
            n = len(request.batch)
            if not request.future.done():
                request.future.set_result(results[at : at + n])
            at += n
