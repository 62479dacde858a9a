"""The ``json-schema-values`` verifier: JSON Schema validity plus the values the prompt stated.

It extends the built-in ``json-schema`` verifier (``rlhub.JsonSchema``): the
completion's JSON (last ```json block, or the whole text) must validate against
``task.answer["schema"]``, and every ``{"path": [...], "value": ...}`` in ``task.answer["values"]``
must be found at its path with an equal value of the same JSON type (``true`` is not ``1``).

Components: ``valid_json`` (it parses), ``schema_ok`` (it validates), ``values`` (the fraction
of stated values found) and ``exact`` (1 when it validates and holds every stated value; weight
only this one for exact-only scoring: an object that merely validates says nothing). Registered
by this plugin under the name ``json-schema-values``, so data
files and other plugins can name it too.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from rlhub import JsonSchema, Task, Verdict, parse_json_answer

_MISSING = object()


def dotted(path: list[str | int]) -> str:
    """``["chapters", 0, "title"]`` as ``chapters[0].title``."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out or "(root)"


def resolve(value: Any, path: list[str | int]) -> Any:
    """The value at ``path`` inside ``value``, or ``_MISSING``."""
    for key in path:
        if isinstance(key, int):
            if not isinstance(value, list) or not -len(value) <= key < len(value):
                return _MISSING
            value = value[key]
        else:
            if not isinstance(value, dict) or key not in value:
                return _MISSING
            value = value[key]
    return value


def same(expected: Any, found: Any) -> bool:
    """JSON equality that keeps booleans apart from numbers and compares numbers numerically."""
    if isinstance(expected, bool) or isinstance(found, bool):
        return type(expected) is type(found) and expected == found
    if isinstance(expected, (int, float)) and isinstance(found, (int, float)):
        return float(expected) == float(found)
    if isinstance(expected, list):
        return (isinstance(found, list) and len(found) == len(expected)
                and all(same(e, f) for e, f in zip(expected, found)))
    if isinstance(expected, dict):
        return (isinstance(found, dict) and found.keys() == expected.keys()
                and all(same(v, found[k]) for k, v in expected.items()))
    return type(expected) is type(found) and expected == found


def value_problem(instance: Any, item: dict[str, Any]) -> str | None:
    """None when the stated value is at its path, else a line saying what was found instead."""
    found = resolve(instance, item["path"])
    expected = json.dumps(item["value"])
    if found is _MISSING:
        return f"{dotted(item['path'])}: missing (expected {expected})"
    if not same(item["value"], found):
        return f"{dotted(item['path'])}: expected {expected}, found {json.dumps(found)[:120]}"
    return None


class JsonSchemaValues(JsonSchema):
    """``json-schema`` plus stated values; see the module docstring."""

    def check(self, task: Task, completion: str) -> Verdict:
        answer = task.answer
        if not isinstance(answer, dict) or "schema" not in answer:
            raise ValueError(f"json-schema-values: expected task.answer = {{'schema': ..., "
                             f"'values': [...]}}, found {type(answer).__name__}")
        base = super().check(dataclasses.replace(task, answer=answer["schema"]), completion)
        stated = answer.get("values", [])
        if not base.components["valid_json"]:
            return Verdict({**base.components, "values": 0.0, "exact": 0.0}, False, base.feedback)
        instance = parse_json_answer(completion)
        wrong = [p for item in stated if (p := value_problem(instance, item)) is not None]
        fraction = 1.0 - len(wrong) / len(stated) if stated else 1.0
        lines = [base.feedback] if base.feedback else []
        if wrong:
            lines.append("Stated values not found:\n" + "\n".join(f"- {w}" for w in wrong))
        ok = base.passed and not wrong
        return Verdict({**base.components, "values": fraction, "exact": float(ok)}, ok,
                       "\n".join(lines))
