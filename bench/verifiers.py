"""Throughput of each named verifier on typical inputs (one thread), as calls/s and latency."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import emit, summary  # noqa: E402

import rlhub  # noqa: E402
from rlhub import Task  # noqa: E402

REG = rlhub.registry()  # this script is an entry point

ADD_TESTS = "def check(candidate):\n" + "".join(
    f"    assert candidate({i}, {i + 1}) == {2 * i + 1}\n" for i in range(5))
CASES = {
    "exact": ({}, Task("t", "b/x-v1", "q", answer="Paris"), "The capital is\nAnswer: Paris"),
    "regex": ({"pattern": r"\d{4}-\d{2}-\d{2}"}, Task("t", "b/x-v1", "q"), "2024-05-17"),
    "json-schema": ({"schema": {"type": "object", "required": ["a"],
                                "properties": {"a": {"type": "integer"}}}},
                    Task("t", "b/x-v1", "q"), '```json\n{"a": 3}\n```'),
    "math": ({}, Task("t", "b/x-v1", "q", answer="\\frac{3}{4}"), "so \\boxed{0.75}"),
    "python-tests": ({}, Task("t", "b/x-v1", "q", meta={"tests": ADD_TESTS, "entry_point": "add"}),
                     "```python\ndef add(a, b):\n    return a + b\n```"),
}


def bench(name: str, n: int) -> dict[str, float]:
    options, task, completion = CASES[name]
    verifier = REG.verifier(name, options)
    assert verifier.check(task, completion).passed, name
    times = []
    for _ in range(n):
        started = time.perf_counter()
        verifier.check(task, completion)
        times.append(time.perf_counter() - started)
    stats = summary(times)
    return {**stats, "calls_per_s": 1e3 / stats["mean_ms"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=300)
    args = parser.parse_args()
    results = {name: bench(name, args.n if name != "python-tests" else max(20, args.n // 10))
               for name in CASES}
    emit({"bench": "verifiers", "threads": 1, "results": results},
         [(f"`{name}` verifier, one thread", f"{r['median_ms']:.2f} ms median, "
           f"p99 {r['p99_ms']:.2f} ms, {r['calls_per_s']:.0f} calls/s", "none: an absolute cost")
          for name, r in results.items()])


if __name__ == "__main__":
    main()
