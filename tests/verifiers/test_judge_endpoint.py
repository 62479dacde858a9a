"""The shared judge endpoint: cache, single-flight, concurrency limit, queueing, metrics."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import prometheus_client
import rlhub
from rlhub import Task
from rlhub.verifiers import endpoints

SERVICES = rlhub.registry().services


def _parallel(n: int, fn) -> list:
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(fn, range(n)))


def test_a_second_identical_call_is_served_from_the_cache(judge, task, options):
    server = judge()
    v = SERVICES.verifier("judge", options(server.url))
    first = v.check(task, task.answer)
    second = v.check(task, task.answer)
    assert server.judge_calls == 1 and first == second


def test_the_cache_key_includes_the_rubric_version_prompt_and_completion(judge, task, options):
    server = judge()
    base = options(server.url)
    SERVICES.verifier("judge", base).check(task, "one")
    SERVICES.verifier("judge", base).check(task, "two")
    other = Task("t2", task.domain, "Explain photosynthesis briefly.", answer=task.answer)
    SERVICES.verifier("judge", base).check(other, "one")
    bumped = {**base, "rubric": {**base["rubric"], "version": "test-2"}}
    SERVICES.verifier("judge", bumped).check(task, "one")
    SERVICES.verifier("judge", base).check(task, "one")
    assert server.judge_calls == 4


def test_the_cache_can_be_turned_off(judge, task, options):
    server = judge()
    v = SERVICES.verifier("judge", options(server.url, cache=False))
    v.check(task, "same")
    v.check(task, "same")
    assert server.judge_calls == 2


def test_identical_concurrent_calls_reach_the_judge_once(judge, task, options):
    server = judge("slow", delay_s=0.3)
    v = SERVICES.verifier("judge", options(server.url))
    verdicts = _parallel(8, lambda _: v.check(task, task.answer))
    assert server.judge_calls == 1 and all(x == verdicts[0] for x in verdicts)


def test_the_concurrency_limit_is_shared_by_every_judge_of_an_endpoint(judge, task, options):
    server = judge("slow", delay_s=0.25)
    limit = 3
    a = SERVICES.verifier("judge", options(server.url, concurrency=limit))
    b = SERVICES.verifier("judge", options(server.url, concurrency=limit, component="second"))
    start = time.perf_counter()
    _parallel(12, lambda i: (a if i % 2 else b).check(task, f"answer number {i}"))
    elapsed = time.perf_counter() - start
    assert SERVICES.judge_endpoints.endpoint(server.url, {"concurrency": 9}).limit == limit
    assert server.judge_calls == 12
    assert 1 <= server.max_in_flight <= limit  # never more than the shared limit at once
    assert elapsed >= 4 * 0.25  # 12 requests through 3 slots take at least 4 rounds


def test_waiting_for_a_slot_counts_against_the_deadline(judge, task, options):
    server = judge("slow", delay_s=3.0)
    v = SERVICES.verifier("judge", options(server.url, concurrency=1, deadline_s=1.2,
                                            timeout_s=2.0, retries=0, fallback=0.0))
    start = time.perf_counter()
    verdicts = _parallel(4, lambda i: v.check(task, f"answer {i}"))
    elapsed = time.perf_counter() - start
    errors = [x.error for x in verdicts if x.error]
    # Four calls behind one slot, each allowed 2 s, would take 8 s if waiting did not count
    # against the 1.2 s deadline; the bound leaves a loaded 2-core machine 3.8 s of slack.
    assert elapsed < 5.0
    # A waiter either finds no slot before the deadline, or gets one with the deadline's
    # remainder as its timeout (which of the two depends on scheduling on a busy machine).
    assert len(errors) >= 2
    assert all("no free slot among 1 before the deadline" in e or "no reply within" in e
               for e in errors), errors


def test_latency_and_outcomes_are_exported_to_prometheus_and_tensorboard(judge, task, options):
    server = judge()
    SERVICES.verifier("judge", options(server.url)).check(task, "metrics please")
    text = prometheus_client.generate_latest().decode()
    assert f'rlhub_judge_requests_total{{endpoint="{server.url}",outcome="ok"}}' in text
    assert f'rlhub_judge_request_seconds_count{{endpoint="{server.url}"}}' in text
    scalars = endpoints.judge_scalars()
    name = f"127.0.0.1:{server.port}"
    assert scalars[f"judge/{name}/requests/ok"] == 1.0
    assert 0 < scalars[f"judge/{name}/latency_mean_s"] < 5


def test_the_single_flight_cache_lets_a_failed_leader_be_retried():
    cache = endpoints.JudgeCache()
    calls: list[int] = []
    gate = threading.Event()

    def failing() -> str:
        calls.append(1)
        gate.wait(1)
        raise endpoints.JudgeUnavailable("down")

    def follower() -> str:
        calls.append(2)
        return "ok"

    leader = threading.Thread(target=lambda: _swallow(lambda: cache.get_or_compute(
        "k", failing, timeout=5)))
    leader.start()
    time.sleep(0.05)
    gate.set()
    assert cache.get_or_compute("k", follower, timeout=5) == "ok"
    leader.join()
    assert calls == [1, 2] and len(cache) == 1


def _swallow(fn) -> None:
    try:
        fn()
    except endpoints.JudgeError:
        pass
