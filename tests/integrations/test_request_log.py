"""The de-duplication log of `rlhub serve` (Idempotency-Key): expiry, eviction by keys and by
bytes, and answers too large to keep."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest

from rlhub.integrations.server import dedupe
from rlhub.integrations.server.dedupe import RequestLog


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(dedupe.time, "monotonic", fake)
    return fake


class Request:
    """What the log reads of a request: its headers, method and path."""

    def __init__(self, key: str) -> None:
        self.headers = {"idempotency-key": key}
        self.method = "POST"
        self.url = type("Url", (), {"path": "/v1/sample"})()


def answer_of(size: int, tag: str = "") -> tuple[int, bytes]:
    return 200, json.dumps({"tag": tag, "pad": "x" * size}).encode()


def ask(log: RequestLog, key: str, size: int, runs: list[str]) -> tuple[int, bytes]:
    """One keyed request whose run (counted in ``runs``) answers ``size`` bytes of padding."""

    async def run() -> tuple[int, bytes]:
        runs.append(key)
        return answer_of(size, key)

    async def go() -> tuple[int, bytes]:
        return await log.respond(Request(key), b"{}", run, contextlib.nullcontext)

    return asyncio.run(go())


def test_a_retried_key_is_answered_from_the_log_until_its_ttl_then_runs_again(clock):
    log, runs = RequestLog(ttl_s=60), []
    first = ask(log, "k", 10, runs)
    clock.now += 59
    assert ask(log, "k", 10, runs) == first and runs == ["k"]
    clock.now += 2
    ask(log, "k", 10, runs)
    assert runs == ["k", "k"] and log.state()["keys"] == 1


def test_the_oldest_answered_keys_are_evicted_past_the_key_limit(clock):
    log, runs = RequestLog(max_keys=3), []
    for key in "abcd":
        ask(log, key, 10, runs)
    assert list(log.entries) == ["b", "c", "d"]
    ask(log, "a", 10, runs)  # forgotten, so it runs again
    assert runs == ["a", "b", "c", "d", "a"]


def test_the_log_keeps_its_answers_within_its_byte_budget(clock):
    log, runs = RequestLog(max_bytes=100_000, max_answer_bytes=50_000), []
    for i in range(20):
        ask(log, f"k{i}", 30_000, runs)
        assert log.bytes <= 100_000
    assert list(log.entries) == ["k17", "k18", "k19"]
    assert log.bytes == sum(e.size for e in log.entries.values())


def test_an_answer_above_the_size_limit_is_not_kept_and_its_retry_is_not_run_again(clock):
    log, runs = RequestLog(max_answer_bytes=1000), []
    status, body = ask(log, "big", 5000, runs)
    assert status == 200 and len(body) > 5000
    status, body = ask(log, "big", 5000, runs)
    assert status == 410 and runs == ["big"]
    assert "was 50" in json.loads(body)["error"] and log.bytes < 2000
    assert log.state()["unkept"] == 1


def test_an_answer_still_running_is_never_evicted_by_the_budget(clock):
    log = RequestLog(max_keys=1, max_bytes=10)

    async def scenario() -> list[Any]:
        release = asyncio.Event()

        async def slow() -> tuple[int, bytes]:
            await release.wait()
            return answer_of(10, "slow")

        async def fast() -> tuple[int, bytes]:
            return answer_of(10, "fast")

        first = asyncio.create_task(log.respond(Request("slow"), b"{}", slow,
                                                contextlib.nullcontext))
        await asyncio.sleep(0)
        await log.respond(Request("fast"), b"{}", fast, contextlib.nullcontext)
        held = "slow" in log.entries
        retry = asyncio.create_task(log.respond(Request("slow"), b"{}", slow,
                                                contextlib.nullcontext))
        await asyncio.sleep(0)
        release.set()
        return [held, await first, await retry]

    held, first, retry = asyncio.run(scenario())
    assert held and first == retry
