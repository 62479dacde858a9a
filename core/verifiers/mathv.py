r"""The ``math`` verifier: the last ``\boxed{}`` answer checked with math-verify.

math-verify evaluates what it parses with sympy, and a short answer can denote unbounded work
(``10^{10^{7}}``, ``(10^{8})!``, ``\binom{10^{9}}{5 \cdot 10^{8}}``) inside C code that holds the
interpreter lock. Two layers bound it, from any thread:

1. :func:`oversized`, a few microseconds of shape checks, refuses answers that are too long,
   power towers, factorials, binomials and roots of large numbers and number literals of more
   than :data:`MAX_DIGITS` digits, with a feedback line saying why;
2. everything else is parsed and compared in a killable worker process
   (:mod:`rlhub.verifiers.bounded`) within ``cpu_s`` of CPU time, where math-verify's own
   ``signal.alarm`` timeouts work too (the worker's main thread).

Either way the answer scores the minimum with failure class ``answer``. A worker that overran
only the wall-clock backstop (an overloaded machine) raises, which is the ``verifier`` class.

Hedges. math-verify reads ``a \cup \{b\}``, ``\{b\} \cup a``, ``a \lor b`` or ``a + [b, c]``
as whichever of its parts equals the gold, so one boxed answer naming several values passes with
the right one in any position. :func:`set_notation` refuses set and logic notation (set operators,
connectives, set braces, the empty set, intervals) in an answer whose gold is a single value
(no comma, no set notation of its own); a gold that is a set or an interval keeps its notation.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from typing import Any

from rlhub.domain import Verdict
from rlhub.extract import last_boxed
from rlhub.task import Task
from rlhub.verifiers import bounded


class _OwnTimeouts(logging.Filter):
    """Drop math-verify's "Timeout is disabled" warning (it is bounded by the worker instead)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_OwnTimeouts())

MAX_DIGITS = 40
_GUARDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\^\s*\{?[^{}^]*\^\s*\{?[^{}^]*\^"), "a power tower"),
    (re.compile(r"\^\s*\{[^{}]*\^"), "a power in an exponent"),
    (re.compile(r"\^\s*\{?\s*[-+]?\d{4,}"), "a power with an exponent of four or more digits"),
    (re.compile(r"(?:\d{3,}|[)}\]])\s*!"), "a factorial of a large number or an expression"),
    (re.compile(r"!\s*!|\\(?:Gamma|operatorname\s*\{\s*(?:gamma|Gamma)\s*\})"),
     "a double factorial or a gamma function"),
    (re.compile(r"\\[dt]?binom\s*\{[^{}]*(?:\d{4,}|\^|!)"), "a binomial of a large number"),
    (re.compile(r"\\sqrt\s*\[[^\]]*(?:\d{3,}|\^|!)"), "a root of a huge degree"),
    (re.compile(r"\d{%d,}" % (MAX_DIGITS + 1)), f"a number of more than {MAX_DIGITS} digits"),
)


_SET_NOTATION = re.compile(
    r"\\(?:cup|cap|setminus|smallsetminus|sqcup|sqcap|uplus|triangle|ominus|bigcup|bigcap|lor|"
    r"land|vee|wedge|lnot|neg|emptyset|varnothing)(?![a-zA-Z])|\\[{}]|[\[(][^\[\]()]*,[^\[\]()]*[\])]")


def set_notation(answer: str, gold: str) -> str | None:
    """Why ``answer`` names several values where ``gold`` is one (see the module docstring)."""
    if "," in gold or _SET_NOTATION.search(gold):
        return None
    found = _SET_NOTATION.search(answer)
    if found is None:
        return None
    return (f"it uses set or logic notation ({found.group()!r}), which has no place in an answer "
            "that is a single value")


def oversized(answer: str, max_chars: int) -> str | None:
    """Why evaluating ``answer`` could take unbounded work, or None when it is safe to try."""
    if len(answer) > max_chars:
        return f"it is {len(answer)} characters long (at most {max_chars} are evaluated)"
    for pattern, what in _GUARDS:
        if pattern.search(answer):
            return f"it contains {what}, which is not evaluated"
    return None


@functools.lru_cache(maxsize=4096)
def _parsed(text: str, timeout: int) -> Any:
    import math_verify

    return math_verify.parse(f"${text}$", parsing_timeout=timeout)


def equal_in_worker(gold: str, answer: str, timeout_s: float) -> bool:
    """Run in a bounded worker (its main thread): math-verify with its own timeouts too."""
    import math_verify

    seconds = max(1, round(timeout_s))
    parsed_gold, parsed = _parsed(gold, seconds), _parsed(answer, seconds)
    if not parsed_gold or not parsed:
        return False
    return bool(math_verify.verify(parsed_gold, parsed, timeout_seconds=seconds))


class Math:
    r"""Pass when the last ``\boxed{}`` in the completion equals ``task.answer`` mathematically.

    Options: ``timeout_s`` (default 5: math-verify's own timeouts and the worker's CPU budget),
    ``require_boxed`` (default true; when false a bare final expression is parsed too),
    ``max_answer_chars`` (default 512). Components: ``correct`` and ``format`` (a boxed answer
    is present).
    """

    def __init__(self, options: dict[str, Any], *, work: Callable[..., Any] = bounded.call):
        """``work`` runs a call in a bounded worker (:func:`rlhub.verifiers.bounded.call`)."""
        self.work = work
        self.timeout_s = float(options.get("timeout_s", 5))
        self.require_boxed = bool(options.get("require_boxed", True))
        self.max_chars = int(options.get("max_answer_chars", 512))
        self.budget = bounded.Budget(cpu_s=self.timeout_s)
        bounded.preload("math_verify", "rlhub.verifiers.mathv")

    def equal(self, gold: str, answer: str) -> bool:
        """Whether two LaTeX answers are mathematically equal; raises ``WorkExceeded``."""
        return bool(self.work("rlhub.verifiers.mathv:equal_in_worker", gold, answer,
                              self.timeout_s, budget=self.budget))

    def check(self, task: Task, completion: str) -> Verdict:
        boxed = last_boxed(completion)
        answer = boxed
        if answer is None and not self.require_boxed:
            stripped = completion.strip()
            answer = stripped.splitlines()[-1] if stripped else None
        if answer is None:
            return Verdict({"correct": 0.0, "format": 0.0}, False,
                           "No final answer found: put it in \\boxed{...}.")
        answer = answer.strip()
        fmt = float(boxed is not None)
        refused = oversized(answer, self.max_chars) or set_notation(answer, str(task.answer))
        if refused is None:
            try:
                ok = self.equal(str(task.answer), answer)
            except bounded.WorkExceeded as exc:
                refused = f"evaluating it {exc}"
        if refused is not None:
            return Verdict({"correct": 0.0, "format": fmt}, False,
                           f"The answer was not evaluated: {refused}. Box only the final, "
                           "simplified value.", failure="answer")
        feedback = "" if ok else f"The answer {answer[:120]!r} is not correct."
        return Verdict({"correct": float(ok), "format": fmt}, ok, feedback)
