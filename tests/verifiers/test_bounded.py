"""Bounded work: verifier computations in killable worker processes with CPU and memory budgets."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from rlhub.errors import VerifierError
from rlhub.verifiers.bounded import Budget, BoundedPool, RemoteError, WorkerLost, WorkExceeded


@pytest.fixture
def pool():
    pool = BoundedPool(size=2, memory_mb=256)
    yield pool
    pool.close()


def test_a_call_returns_what_the_function_returns(pool):
    assert pool.call("math:factorial", 10) == 3628800
    assert pool.call("builtins:sorted", [3, 1, 2]) == [1, 2, 3]


def test_an_exception_in_the_work_arrives_as_a_remote_error_and_the_worker_is_kept(pool):
    with pytest.raises(RemoteError, match="ValueError: invalid literal"):
        pool.call("builtins:int", "x")
    assert pool._live == 1 and len(pool._idle) == 1
    assert pool.call("builtins:int", "7") == 7


def test_work_past_its_cpu_budget_is_killed_and_blamed_on_the_input(pool):
    with pytest.raises(WorkExceeded) as exc:
        pool.call("builtins:pow", 10, 10**9, budget=Budget(cpu_s=1))
    assert exc.value.resource == "cpu" and "more than 1 s of CPU time" in str(exc.value)
    assert not isinstance(exc.value, VerifierError)
    assert pool.call("math:factorial", 5) == 120  # a fresh worker took its place


def test_an_allocation_past_the_memory_budget_is_refused(pool):
    with pytest.raises(WorkExceeded) as exc:
        pool.call("builtins:bytearray", 4 << 30)
    assert exc.value.resource == "memory"
    assert pool.call("builtins:len", "abc") == 3


def test_a_call_without_an_answer_past_the_wall_backstop_is_the_verifiers_fault(pool):
    with pytest.raises(WorkerLost, match="no answer within 0.5 s of wall time") as exc:
        pool.call("time:sleep", 30, budget=Budget(cpu_s=5, wall_s=0.5))
    assert isinstance(exc.value, VerifierError)
    assert pool.call("builtins:abs", -2) == 2


def test_unbounded_work_in_a_worker_never_holds_the_callers_interpreter(pool):
    ticks = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        with pytest.raises(WorkExceeded):
            pool.call("builtins:pow", 10, 10**9, budget=Budget(cpu_s=1))
    finally:
        done.set()
        ticker.join()
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert len(ticks) > 20 and max(gaps) < 0.5  # in-process, pow(10, 10**9) holds it for minutes


def test_two_threads_get_two_workers_at_once(pool):
    results = []
    threads = [threading.Thread(target=lambda: results.append(pool.call("time:sleep", 0.5)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [None, None] and pool._live == 2 and len(pool._idle) == 2


def test_a_pinned_hash_seed_gives_every_worker_the_same_string_hashes():
    """Each worker otherwise draws its own hash seed, and with it the order of a set of strings."""
    pinned = [BoundedPool(size=1, hash_seed=3) for _ in range(2)]
    free = BoundedPool(size=1)
    try:
        words = [f"w{i}" for i in range(64)]
        orders = [p.call("builtins:list", set(words)) for p in (*pinned, free)]
        assert pinned[0].call("os:getenv", "PYTHONHASHSEED") == "3"
        assert orders[0] == orders[1] != orders[2]
    finally:
        for p in (*pinned, free):
            p.close()


def test_what_the_work_prints_never_reaches_the_protocol(pool):
    assert pool.call("builtins:print", "noise\n" * 1000) is None
    assert pool.call("math:sqrt", 16) == 4.0


def test_workers_stop_with_the_pool():
    pool = BoundedPool(size=1)
    pool.call("math:factorial", 3)
    worker = pool._idle[0]
    pool.close()
    assert worker.proc.poll() is not None


def test_an_interpreter_that_exits_leaves_no_worker_behind():
    code = ("from rlhub.verifiers import bounded; bounded.call('math:factorial', 3); "
            "print(bounded.default_pool()._idle[0].proc.pid)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/status") as fh:
                if "zombie" in fh.read():
                    return
        except FileNotFoundError:
            return
        time.sleep(0.1)
    pytest.fail(f"bounded worker {pid} outlived its parent interpreter")
