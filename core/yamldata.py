"""YAML from other people (domain files, mixtures), read as plain data with bounded expansion.

``yaml.safe_load`` constructs no Python objects, but it still lets a few hundred bytes of
anchors and aliases stand for a billion values (the "billion laughs"): the document loads at once,
with shared references, and the first thing that walks it (a schema check, ``json.dumps``) runs
for hours. :func:`load_yaml` loads with PyYAML's safe loader, then counts the values the document
stands for, aliases expanded, and refuses one past :data:`MAX_VALUES`; a tag PyYAML's safe loader
does not construct (``!!python/object``, say) is refused with a message that says so.
"""

from __future__ import annotations

from typing import Any

MAX_VALUES = 1_000_000


class YamlRefused(ValueError):
    """A YAML document that is not plain data, or stands for too many values."""


def load_yaml(text: str) -> Any:
    """The plain data of ``text``; :class:`YamlRefused` naming what is wrong otherwise."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.constructor.ConstructorError as exc:
        raise YamlRefused(f"expected plain YAML data, found a tag that is not plain data "
                          f"({exc.problem}{_mark(exc)})") from None
    except yaml.YAMLError as exc:
        raise YamlRefused(f"expected YAML, found a syntax error: {exc}") from None
    if _count(data, MAX_VALUES) > MAX_VALUES:
        raise YamlRefused(f"expected at most {MAX_VALUES} values once its aliases are expanded, "
                          "found more (anchors and aliases that multiply, a 'billion laughs')")
    return data


def _mark(exc: Any) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f", line {mark.line + 1}" if mark is not None else ""


def _count(value: Any, limit: int) -> int:
    """The number of values ``value`` stands for (shared ones counted at each use), stopping
    once past ``limit``."""
    seen = 0
    stack = [value]
    while stack and seen <= limit:
        item = stack.pop()
        seen += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return seen
