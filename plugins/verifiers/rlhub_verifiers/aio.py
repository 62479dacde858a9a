"""One background event loop per process for verifiers' coroutines, called from sync code.

rlhub's ``Domain.verify`` and ``Episode.step`` are synchronous and run on whatever thread the
caller uses (the rollout loop's executor, the server's pool); verifiers' scoring and episodes are
coroutines. They all run on one daemon thread's loop, and a caller waits at most ``timeout``
seconds for its result: an overrun cancels the coroutine and raises :class:`TimeoutError`.
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


def run(coro: Coroutine[Any, Any, T], timeout: float) -> T:
    """Run ``coro`` on the bridge loop and wait for it; cancel it after ``timeout`` seconds."""
    if threading.current_thread().name == "rlhub-vf-loop":
        raise RuntimeError("rlhub_verifiers.aio.run() called from the bridge loop itself")
    future = submit(coro)
    try:
        return future.result(timeout)
    except TimeoutError:
        future.cancel()
        raise TimeoutError(f"the verifiers environment did not answer within {timeout:g} s") \
            from None
