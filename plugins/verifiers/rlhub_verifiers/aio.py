"""One background event loop per process for verifiers' coroutines, called from sync code.

rlhub's ``Domain.verify`` and ``Episode.step`` are synchronous and run on whatever thread the
caller uses (the rollout loop's executor, the server's pool); verifiers' scoring and episodes are
coroutines. They all run on one daemon thread's loop; callers wait on an episode's channel with
a timeout (:mod:`rlhub_verifiers.episode`). A reward function that blocks the loop instead of
awaiting stalls every episode of the process until it returns: verifiers' rewards are async.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def loop() -> asyncio.AbstractEventLoop:
    """The process's bridge loop, started on first use."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="rlhub-vf-loop", daemon=True).start()
        return _loop


def submit(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Schedule ``coro`` on the bridge loop."""
    return asyncio.run_coroutine_threadsafe(coro, loop())
