"""Comparing a final answer with the expected one: numbers, text, and unordered lists.

An expected answer is a small JSON-serialisable dict stored as ``task.answer``:

* ``{"type": "number", "value": 12.5, "tol": 0.005}``: a number within ``tol`` (thousands
  separators, a leading ``$`` and a trailing unit word are accepted: ``"1,250 kg"``);
* ``{"type": "text", "value": "Alice Moreau"}``: equal after case folding and whitespace folding;
* ``{"type": "set", "value": ["a", "b"]}``: the same items as a comma-separated list, any order.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

_NUMBER = re.compile(r"^\$?\s*([-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*[A-Za-z/%°$ ]*$")


def fold(text: str) -> str:
    """Case-, width- and whitespace-insensitive form of ``text``; trailing periods dropped."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(text.split()).strip().rstrip(".").strip("'\"` ")


def parse_number(text: str) -> float | None:
    """The number ``text`` states, or None when it is not a single number."""
    match = _NUMBER.match(text.strip())
    if not match:
        return None
    try:
        value = float(match.group(1).replace(",", "").replace("_", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def number_answer(value: float, decimals: int | None = None) -> dict[str, Any]:
    """An expected number; with ``decimals`` (the prompt asked to round) half a unit is allowed."""
    if decimals is None:
        return {"type": "number", "value": value, "tol": 1e-6 * max(1.0, abs(value))}
    return {"type": "number", "value": round(value, decimals), "tol": 0.5 * 10**-decimals + 1e-9}


def render(expected: dict[str, Any]) -> str:
    """The canonical text of an expected answer (what a gold completion puts in ``<answer>``)."""
    value = expected["value"]
    if expected["type"] == "set":
        return ", ".join(str(v) for v in value)
    if expected["type"] == "number" and float(value).is_integer():
        return str(int(value))
    return str(value)


def matches(expected: dict[str, Any], got: str) -> tuple[bool, str]:
    """Whether ``got`` is the expected answer, and feedback when it is not."""
    kind = expected["type"]
    if kind == "number":
        number = parse_number(got)
        if number is None:
            return False, f"Expected a single number, found {got[:120]!r}."
        ok = abs(number - float(expected["value"])) <= float(expected["tol"])
        return ok, "" if ok else f"The number {got[:60]!r} is not correct."
    if kind == "set":
        want = sorted(fold(str(v)) for v in expected["value"])
        items = sorted(fold(part) for part in got.split(",") if part.strip())
        ok = items == want
        return ok, "" if ok else (f"The list {got[:120]!r} is not correct (it has {len(items)} "
                                  "items; give every item once, separated by commas).")
    ok = fold(got) == fold(str(expected["value"]))
    return ok, "" if ok else f"The answer {got[:120]!r} is not correct."
