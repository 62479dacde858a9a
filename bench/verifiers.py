"""Throughput of each named verifier on typical inputs (one thread), as calls/s and latency.

``linear_engine`` quotes what matching patterns from data on RE2 costs per call against Python's
``re`` on the same pattern and text (a pattern ``re`` runs in linear time too), for the ``regex``
verifier's match and for a JSON Schema with ``pattern`` and ``patternProperties``.

``protections`` quotes the per-call cost of the other checks issue 22 added, each beside the
whole check it is part of, measured in the same run: the math verifier's refusal of set and logic
notation (beside a math check), a bridge's own look at the gold before it pays an upstream score
(:func:`rlhub.bridges.gold_agrees`, beside a reasoning-gym verification) and instruct's prose gate
(beside an instruct verification). Figures are medians of five timed rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _util import Row, emit, summary  # noqa: E402

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
    verifier = REG.services.verifier(name, options)
    assert verifier.check(task, completion).passed, name
    times = []
    for _ in range(n):
        started = time.perf_counter()
        verifier.check(task, completion)
        times.append(time.perf_counter() - started)
    stats = summary(times)
    return {**stats, "calls_per_s": 1e3 / stats["mean_ms"]}


PATTERN, TEXT = r"[A-Z][a-z]+ \d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2})?", "Meeting 2024-05-17T10:30"
SCHEMA = {"type": "object", "additionalProperties": False,
          "properties": {"date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}},
          "patternProperties": {r"^x-[a-z]+$": {"type": "integer"}}}
INSTANCE = {"date": "2024-05-17", "x-one": 1, "x-two": 2}


def per_call_us(fn: Any, n: int, rounds: int = 5) -> float:
    """The median over ``rounds`` of the mean microseconds per call of ``fn`` (``n`` calls)."""
    fn()
    means = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(n):
            fn()
        means.append((time.perf_counter() - started) / n * 1e6)
    return statistics.median(means)


def linear_engine(n: int) -> dict[str, Any]:
    """Per-call microseconds on RE2 (what rlhub runs) against ``re`` (what it ran before)."""
    import re

    import jsonschema

    from rlhub.jsonschemas import validator
    from rlhub.verifiers.patterns import compile_pattern

    compiled_re2 = compile_pattern(PATTERN)
    re2_match = per_call_us(lambda: compiled_re2.fullmatch(TEXT), 20 * n)
    re_match = per_call_us(lambda: re.fullmatch(PATTERN, TEXT), 20 * n)
    plain = per_call_us(lambda: list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(
        INSTANCE)), n)
    linear = per_call_us(lambda: list(validator(SCHEMA).iter_errors(INSTANCE)), n)
    return {"regex_match": {"re2_us": re2_match, "re_us": re_match,
                            "cost_us": re2_match - re_match},
            "json_schema_with_patterns": {"re2_us": linear, "re_us": plain,
                                          "cost_us": linear - plain}}


def protections(n: int) -> dict[str, Any]:
    """Per-call microseconds of each new check against the whole verification it belongs to."""
    from rlhub.bridges import gold_agrees
    from rlhub.verifiers.mathv import set_notation
    from rlhub_instruct.domain import prose_problems

    math_options, math_task, math_answer = CASES["math"]
    math_check = REG.services.verifier("math", math_options)
    rg = REG.get(next(i for i in REG.ids() if i.startswith("rg/basic_arithmetic-v")))
    rg_task = rg.task("train", 0, 0)
    instruct = REG.get(next(i for i in REG.ids() if i.startswith("instruct/combo3-v")))
    in_task = instruct.task("train", 0, 0)
    prompt = in_task.prompt_text()
    return {
        "math_set_notation": {"check_us": per_call_us(
            lambda: set_notation("so \\boxed{0.75}", "\\frac{3}{4}"), 20 * n),
            "verification_us": per_call_us(lambda: math_check.check(math_task, math_answer), n)},
        "bridge_gold_agrees": {"check_us": per_call_us(
            lambda: gold_agrees(str(rg_task.answer), rg_task.answer), 20 * n),
            "verification_us": per_call_us(lambda: rg.check(rg_task, rg_task.gold), n)},
        "instruct_prose_gate": {"check_us": per_call_us(
            lambda: prose_problems(in_task.gold, prompt), 5 * n),
            "verification_us": per_call_us(lambda: instruct.check(in_task, in_task.gold), n)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=300)
    args = parser.parse_args()
    results = {name: bench(name, args.n if name != "python-tests" else max(20, args.n // 10))
               for name in CASES}
    result = {"bench": "verifiers", "threads": 1, "results": results,
              "linear_engine": linear_engine(args.n), "protections": protections(args.n)}
    emit(result, table(result))


def table(r: dict[str, Any]) -> list[Row]:
    rows: list[Row] = [
        (f"`{name}` verifier, one thread", f"{v['median_ms']:.2f} ms median, "
         f"p99 {v['p99_ms']:.2f} ms, {v['calls_per_s']:.0f} calls/s", "none: an absolute cost")
        for name, v in r["results"].items()]
    for name, v in r["linear_engine"].items():
        rows.append((f"{name.replace('_', ' ')} on RE2 (linear time), per call",
                     f"{v['re2_us']:.1f} us ({v['cost_us']:+.1f} us)",
                     f"Python's re on the same input: {v['re_us']:.1f} us"))
    for name, v in r["protections"].items():
        rows.append((f"{name.replace('_', ' ')}, per call", f"{v['check_us']:.1f} us",
                     f"the whole verification it is part of: {v['verification_us']:.1f} us"))
    return rows


if __name__ == "__main__":
    main()
