"""Parameterised programming problems for the code-repair domain.

A problem is a statement, a reference solution (source text, so the gold completion is exactly the
code that computed the expected outputs) and an input generator. :func:`make_problem` draws the
parameters and inputs from a seeded ``random.Random`` and writes ``check(candidate)`` test code for
the ``python-tests`` verifier: the first ``visible`` cases are shown in the prompt and can be run
with the ``tests`` tool; the rest are hidden until the final answer is graded.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Args = tuple[Any, ...]


@dataclass(frozen=True)
class Spec:
    """One problem family: ``statement`` and ``source`` are formatted with the drawn params."""

    statement: str
    source: str
    params: Callable[[random.Random], dict[str, Any]]
    inputs: Callable[[random.Random, dict[str, Any]], Args]


def _ints(rng: random.Random, low: int = -50, high: int = 50,
          size: tuple[int, int] = (0, 9)) -> list[int]:
    return [rng.randint(low, high) for _ in range(rng.randint(*size))]


def _word(rng: random.Random, letters: str = "abcxyz") -> str:
    return "".join(rng.choice(letters) for _ in range(rng.randint(1, 7)))


SPECS: dict[str, Spec] = {
    "k_largest_sum": Spec(
        "Write `solution(xs)` that returns the sum of the {k} largest elements of the list of "
        "integers `xs` (the sum of all of them if there are fewer than {k}).",
        "def solution(xs):\n    return sum(sorted(xs, reverse=True)[:{k}])\n",
        lambda rng: {"k": rng.randint(2, 4)}, lambda rng, p: (_ints(rng),)),
    "run_length": Spec(
        "Write `solution(s)` that returns the run-length encoding of the string `s` as a list of "
        "[character, count] pairs, e.g. 'aab' -> [['a', 2], ['b', 1]].",
        "def solution(s):\n    out = []\n    for ch in s:\n        if out and out[-1][0] == ch:\n"
        "            out[-1][1] += 1\n        else:\n            out.append([ch, 1])\n"
        "    return out\n",
        lambda rng: {},
        lambda rng, p: ("".join(rng.choice("aab") for _ in range(rng.randint(0, 9))),)),
    "digit_sum_count": Spec(
        "Write `solution(n)` that returns how many integers in 1..n (inclusive) have a digit sum "
        "divisible by {m}.",
        "def solution(n):\n    return sum(1 for i in range(1, n + 1) "
        "if sum(map(int, str(i))) % {m} == 0)\n",
        lambda rng: {"m": rng.randint(3, 7)}, lambda rng, p: (rng.randint(0, 500),)),
    "rotate_words": Spec(
        "Write `solution(s)` that rotates every word of `s` left by {r} characters ({r} modulo the "
        "word's length); words are separated by single spaces, e.g. with 1: 'abc de' -> 'bca ed'.",
        "def solution(s):\n    words = s.split(' ')\n"
        "    return ' '.join(w[{r} % len(w):] + w[:{r} % len(w)] if w else w for w in words)\n",
        lambda rng: {"r": rng.randint(1, 3)},
        lambda rng, p: (" ".join(_word(rng) for _ in range(rng.randint(1, 4))),)),
    "second_largest": Spec(
        "Write `solution(xs)` that returns the second largest distinct value of the list `xs`, "
        "or None when `xs` has fewer than two distinct values.",
        "def solution(xs):\n    values = sorted(set(xs))\n"
        "    return values[-2] if len(values) > 1 else None\n",
        lambda rng: {}, lambda rng, p: (_ints(rng, -5, 5),)),
    "caesar": Spec(
        "Write `solution(s)` that shifts every lowercase letter of `s` forward by {k} places in "
        "the alphabet (wrapping from z to a) and leaves every other character unchanged.",
        "def solution(s):\n    return ''.join(chr((ord(c) - 97 + {k}) % 26 + 97) "
        "if 'a' <= c <= 'z' else c for c in s)\n",
        lambda rng: {"k": rng.randint(1, 25)},
        lambda rng, p: ("".join(rng.choice(string.ascii_letters + " .!z") for _ in range(9)),)),
    "merge_intervals": Spec(
        "Write `solution(intervals)` that merges overlapping or touching closed intervals, given "
        "as [start, end] lists, and returns them sorted by start, e.g. [[5, 6], [1, 3], [2, 4]] "
        "-> [[1, 4], [5, 6]].",
        "def solution(intervals):\n    out = []\n    for a, b in sorted(intervals):\n"
        "        if out and a <= out[-1][1]:\n            out[-1][1] = max(out[-1][1], b)\n"
        "        else:\n            out.append([a, b])\n    return out\n",
        lambda rng: {},
        lambda rng, p: ([sorted([rng.randint(0, 30), rng.randint(0, 30)])
                         for _ in range(rng.randint(0, 6))],)),
    "running_max": Spec(
        "Write `solution(xs)` that returns the list of running maxima of `xs`: element i is the "
        "largest of xs[0..i]. Every {w}th element of the result (positions {w}, {w2}, ..., "
        "counting "
        "from 1) must be replaced by 0.",
        "def solution(xs):\n    out, best = [], None\n    for i, x in enumerate(xs, 1):\n"
        "        best = x if best is None else max(best, x)\n"
        "        out.append(0 if i % {w} == 0 else best)\n    return out\n",
        lambda rng: (lambda w: {"w": w, "w2": 2 * w})(rng.randint(2, 4)),
        lambda rng, p: (_ints(rng, size=(0, 10)),)),
}


def reference(source: str) -> Callable[..., Any]:
    """The ``solution`` function defined by trusted reference ``source``."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "<reference>", "exec"), namespace)  # noqa: S102 - our own source
    return namespace["solution"]


def _call(args: Args) -> str:
    return "candidate(" + ", ".join(repr(a) for a in args) + ")"


def make_problem(rng: random.Random, *, cases: int = 8, visible: int = 2) -> dict[str, Any]:
    """A problem drawn at random: statement, reference source, tests, visible examples."""
    name = rng.choice(sorted(SPECS))
    spec = SPECS[name]
    params = spec.params(rng)
    source = spec.source.format(**params)
    solve = reference(source)
    inputs: list[Args] = []
    for _ in range(cases * 20):
        args = spec.inputs(rng, params)
        if args not in inputs:
            inputs.append(args)
        if len(inputs) == cases:
            break
    lines = [f"    assert {_call(a)} == {solve(*a)!r}" for a in inputs]
    return {"name": name, "statement": spec.statement.format(**params), "source": source,
            "tests": "def check(candidate):\n" + "\n".join(lines) + "\n",
            "visible_tests": "def check(candidate):\n" + "\n".join(lines[:visible]) + "\n",
            "examples": [f"solution{_call(a)[len('candidate'):]} == {solve(*a)!r}"
                         for a in inputs[:visible]]}
