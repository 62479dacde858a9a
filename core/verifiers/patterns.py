"""Which regular expressions from data rlhub accepts: :func:`check_pattern`.

A pattern from a pulled environment (a ``regex`` verifier's ``pattern`` option, a dataset row's
answer, a JSON Schema's ``pattern``) is matched against model output, which is hostile. Python's
``re`` backtracks: ``(a+)+$`` against thirty ``a`` and a ``b`` runs for minutes. A pattern is
accepted only if Python compiles it, RE2 (a linear-time engine) accepts it, so it uses no
backreference or lookaround, and no quantifier that can repeat a variable number of times sits
inside another one (the nested quantifiers behind catastrophic backtracking).
"""

from __future__ import annotations

import re
from typing import Any

_REPEATS = ("MAX_REPEAT", "MIN_REPEAT")


def check_pattern(pattern: str) -> str | None:
    """None when ``pattern`` is acceptable, else what is wrong with it (one sentence)."""
    try:
        parsed = re._parser.parse(pattern)  # type: ignore[attr-defined]
    except (re.error, RecursionError, OverflowError) as exc:
        return f"pattern {pattern[:200]!r} does not compile: {exc}"
    problem = _re2_problem(pattern)
    if problem:
        return f"pattern {pattern[:200]!r} is not accepted by RE2 (linear-time matching): {problem}"
    if _nested(parsed, inside=False):
        return (f"pattern {pattern[:200]!r} nests a variable quantifier inside another "
                "(catastrophic backtracking); rewrite it without the nesting")
    return None


def _re2_problem(pattern: str) -> str | None:
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        re2.compile(pattern, options)
    except re2.error as exc:
        message = exc.args[0] if exc.args else exc
        return message.decode() if isinstance(message, bytes) else str(message)
    return None


def _nested(items: Any, inside: bool) -> bool:
    """Whether a variable repeat occurs inside a variable repeat in the parsed ``items``."""
    for op, av in items:
        if str(op) in _REPEATS:
            low, high, body = av
            variable = low != high
            if variable and inside:
                return True
            if _nested(body, inside or variable):
                return True
        elif any(_nested(part, inside) for part in _parts(av)):
            return True
    return False


def _parts(av: Any) -> list[Any]:
    """The sub-patterns held in one parsed node's argument (groups, branches, assertions)."""
    if isinstance(av, re._parser.SubPattern):  # type: ignore[attr-defined]
        return [av]
    if isinstance(av, tuple | list):
        return [p for item in av for p in _parts(item)]
    return []
