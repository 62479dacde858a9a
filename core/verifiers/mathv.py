r"""The ``math`` verifier: the last ``\boxed{}`` answer checked with math-verify.

math-verify bounds its own work with ``signal.alarm``, which only works on the main thread and
raises ``ValueError`` elsewhere. This verifier is safe from any thread: on the main thread it uses
math-verify's timeouts; on other threads it turns them off and bounds the work itself, by refusing
answers longer than ``max_answer_chars`` and power towers deeper than two levels, the inputs that
make sympy's evaluation unbounded.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

from rlhub.domain import Verdict
from rlhub.extract import last_boxed
from rlhub.task import Task


class _OwnTimeouts(logging.Filter):
    """Drop math-verify's "Timeout is disabled" warning: off the main thread that is by design."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_OwnTimeouts())

_TOWER = re.compile(r"\^\s*\{?[^{}^]*\^\s*\{?[^{}^]*\^")


class Math:
    r"""Pass when the last ``\boxed{}`` in the completion equals ``task.answer`` mathematically.

    Options: ``timeout_s`` (default 5), ``require_boxed`` (default true; when false a bare final
    expression is parsed too), ``max_answer_chars`` (default 512). Components: ``correct`` and
    ``format`` (a boxed answer is present).
    """

    def __init__(self, options: dict[str, Any]):
        self.timeout_s = float(options.get("timeout_s", 5))
        self.require_boxed = bool(options.get("require_boxed", True))
        self.max_chars = int(options.get("max_answer_chars", 512))

    def _timeouts(self) -> dict[str, Any]:
        on_main = threading.current_thread() is threading.main_thread()
        seconds = max(1, round(self.timeout_s)) if on_main else None
        return {"parsing_timeout": seconds, "timeout_seconds": seconds}

    def equal(self, gold: str, answer: str) -> bool:
        """Whether two LaTeX answers are mathematically equal (bounded, thread-safe)."""
        if len(answer) > self.max_chars or _TOWER.search(answer):
            return False
        import math_verify

        limits = self._timeouts()
        parsed_gold = math_verify.parse(f"${gold}$", parsing_timeout=limits["parsing_timeout"])
        parsed = math_verify.parse(f"${answer}$", parsing_timeout=limits["parsing_timeout"])
        if not parsed_gold or not parsed:
            return False
        return bool(math_verify.verify(parsed_gold, parsed, timeout_seconds=limits["timeout_seconds"]))

    def check(self, task: Task, completion: str) -> Verdict:
        boxed = last_boxed(completion)
        answer = boxed
        if answer is None and not self.require_boxed:
            stripped = completion.strip()
            answer = stripped.splitlines()[-1] if stripped else None
        if answer is None:
            return Verdict({"correct": 0.0, "format": 0.0}, False,
                           "No final answer found: put it in \\boxed{...}.")
        ok = self.equal(str(task.answer), answer.strip())
        feedback = "" if ok else f"The answer {answer.strip()[:120]!r} is not correct."
        return Verdict({"correct": float(ok), "format": float(boxed is not None)}, ok, feedback)
