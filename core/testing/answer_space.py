"""Reading a domain's answer space from its own gold completions, for the integrity probes.

A gold completion shows what a well-formed answer looks like. :func:`answer_slot` finds the
final answer inside it (an ``<answer>`` tag, an ``Answer:`` line, the last ``\\boxed{}``, or a
short one-line gold as a whole), so a probe can put any other text in that slot and keep the
domain's format. :func:`document_of` finds a JSON, YAML or CSV document in a gold, so a probe
can keep its shape and replace its content. :func:`answer_candidates` searches the space of
single answers a policy could learn to give every task: the final answers of many golds, their
most common values and prefixes, digits, signs and the usual options. Nothing here knows any
particular domain.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

MAX_SLOT = 100  # a longer final answer is prose or code, not a point in an answer space
#: Single answers worth trying on any domain: signs, small numbers, options, truth values, empty.
COMMON = ("0", "1", "-1", "2", "-", "+", "0.5", "1/2", "Yes", "No", "yes", "no", "True",
          "False", "true", "false", "A", "B", "C", "D", "E", "None", "none", "[]", "{}", "()",
          "", "x", "a")
MAX_CANDIDATES = 72
_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_LINE = re.compile(r"(?:^|\n)\s*(?:final answer|answer)\s*[:：]\s*(.+)", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Slot:
    """A gold completion split around its final answer."""

    head: str
    answer: str
    tail: str

    def fill(self, text: str) -> str:
        return f"{self.head}{text}{self.tail}"


def answer_slot(gold: str | None) -> Slot | None:
    """The final answer's place in ``gold``, or None when it has no short final answer."""
    if not gold:
        return None
    span = _tag_span(gold) or _line_span(gold) or _boxed_span(gold) or _whole_span(gold)
    if span is None:
        return None
    start, end = span
    answer = gold[start:end]
    if not answer.strip() or len(answer) > MAX_SLOT or "\n" in answer.strip():
        return None
    return Slot(gold[:start], answer, gold[end:])


def _tag_span(gold: str) -> tuple[int, int] | None:
    found = list(_TAG.finditer(gold))
    return found[-1].span(1) if found else None


def _line_span(gold: str) -> tuple[int, int] | None:
    found = list(_LINE.finditer(gold))
    return found[-1].span(1) if found else None


def _boxed_span(gold: str) -> tuple[int, int] | None:
    start = gold.rfind("\\boxed{")
    if start < 0:
        return None
    depth = 0
    for i in range(start + len("\\boxed"), len(gold)):
        depth += {"{": 1, "}": -1}.get(gold[i], 0)
        if depth == 0:
            return start + len("\\boxed{"), i
    return None


def _whole_span(gold: str) -> tuple[int, int] | None:
    stripped = gold.strip()
    if "\n" in stripped or len(stripped) > MAX_SLOT:
        return None
    start = gold.index(stripped)
    return start, start + len(stripped)


@dataclass(frozen=True)
class Document:
    """A structured document in a gold: its language, parsed value and where it sits."""

    language: str
    value: Any
    head: str
    tail: str

    def render(self, value: Any) -> str:
        """The gold with ``value`` in place of the document, in the same language."""
        return f"{self.head}{_DUMPERS[self.language](value)}{self.tail}"


def document_of(gold: str | None) -> Document | None:
    """The JSON, YAML or CSV document of ``gold`` (a fenced block or the whole text), if any."""
    if not gold:
        return None
    found = list(_FENCE.finditer(gold))
    if found:
        block = found[-1]
        language, (start, end) = block.group(1).lower(), block.span(2)
    else:
        language, start, end = "json", 0, len(gold)
    loader = _LOADERS.get(language)
    if loader is None:
        return None
    try:
        value = loader(gold[start:end])
    except Exception:  # noqa: BLE001 - not a document of that language
        return None
    if not isinstance(value, (dict, list)) or not value:
        return None
    return Document(language, value, gold[:start], gold[end:])


def _load_yaml(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def _dump_yaml(value: Any) -> str:
    import yaml

    return yaml.safe_dump(value, sort_keys=False)


def _load_csv(text: str) -> list[list[str]]:
    import csv
    import io

    return [row for row in csv.reader(io.StringIO(text.strip())) if row]


def _dump_csv(rows: list[list[Any]]) -> str:
    import csv
    import io

    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


_LOADERS: dict[str, Callable[[str], Any]] = {"json": json.loads, "yaml": _load_yaml,
                                             "yml": _load_yaml, "csv": _load_csv}
_DUMPERS: dict[str, Callable[[Any], str]] = {"json": lambda v: json.dumps(v, indent=2) + "\n",
                                             "yaml": _dump_yaml, "yml": _dump_yaml,
                                             "csv": _dump_csv}


def map_leaves(value: Any, fn: Callable[[Any], Any], *, keep_first_row: bool = False) -> Any:
    """``value`` with every scalar replaced by ``fn(scalar)``; keys and shape are kept."""
    if isinstance(value, dict):
        return {k: map_leaves(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        head = value[:1] if keep_first_row else []
        return head + [map_leaves(v, fn) for v in value[len(head):]]
    return fn(value)


def placeholder(value: Any) -> Any:
    """A value of the same JSON type that says nothing: ``"x"``, ``0``, ``false``, ``null``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return 0
    if isinstance(value, str):
        return "x" * max(1, min(len(value), 8))
    return value


_ROTATE = {**{c: chr((ord(c) - 97 + 7) % 26 + 97) for c in map(chr, range(97, 123))},
           **{c: chr((ord(c) - 65 + 7) % 26 + 65) for c in map(chr, range(65, 91))},
           **{c: str((int(c) + 3) % 10) for c in "0123456789"}}


def scramble(value: Any) -> Any:
    """Letters and digits shifted, everything else kept: the same pattern, other content."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        text = scramble(repr(value))
        try:
            return type(value)(text.lstrip("0") or "0")
        except ValueError:
            return value
    return "".join(_ROTATE.get(c, c) for c in str(value))


def answer_candidates(answers: Iterable[str]) -> list[str]:
    """Single answers to try as a constant on every task, from the final answers of many golds
    (see the module docstring), most promising first and at most :data:`MAX_CANDIDATES`."""
    found = [a.strip() for a in answers if a and a.strip()]
    common = [a for a, _ in Counter(found).most_common()]
    prefixes = [p for a in common for p in (a[:1], a[: len(a) // 2], a[:-1]) if p.strip()]
    digits = [str(d) for d in range(10)]
    ordered = [*common[:8], *prefixes, *digits, *COMMON, *common[8:]]
    return list(dict.fromkeys(ordered))[:MAX_CANDIDATES]
