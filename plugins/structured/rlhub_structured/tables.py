"""CSV tasks: per-column rules, the two task makers (records, generate) and their golds."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import random
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from rlhub_structured import vocab

_DECIMAL = re.compile(r"-?[0-9]+\.[0-9]{2}")
_INTEGER = re.compile(r"-?[0-9]+")


@dataclass
class ColumnRule:
    """What the cells of one column must hold.

    ``kind`` is ``exact`` (``values[i]`` in row i), ``sequence`` (1, 2, ...), ``text``, ``enum``
    (``options``), ``decimal`` (two places, ``low``..``high``), ``date`` (ISO, in ``year``) or
    ``bool`` (``true``/``false``).
    """

    name: str
    kind: str
    values: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    low: float = 0.0
    high: float = 0.0
    year: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ColumnRule:
        return cls(**data)

    def problem(self, cell: str, i: int, body: list[list[str]]) -> str | None:
        """None when ``cell`` (row ``i``) obeys the rule, else what is wrong."""
        check = getattr(self, f"_{self.kind}")
        reason = check(cell, i)
        return None if reason is None else f"{self.name} {reason}, found {cell[:60]!r}"

    def _exact(self, cell: str, i: int) -> str | None:
        return None if cell == self.values[i] else f"should be {self.values[i]!r}"

    def _sequence(self, cell: str, i: int) -> str | None:
        return None if cell == str(i + 1) else f"should be {i + 1}"

    def _text(self, cell: str, i: int) -> str | None:
        return None if any(ch.isalpha() for ch in cell) else "should be a non-empty name"

    def _enum(self, cell: str, i: int) -> str | None:
        return None if cell in self.options else f"should be one of {'|'.join(self.options)}"

    def _decimal(self, cell: str, i: int) -> str | None:
        if not _DECIMAL.fullmatch(cell) or not self.low <= float(cell) <= self.high:
            return f"should be a two-place decimal from {self.low:.2f} to {self.high:.2f}"
        return None

    def _date(self, cell: str, i: int) -> str | None:
        try:
            ok = len(cell) == 10 and dt.date.fromisoformat(cell).year == self.year
        except ValueError:
            ok = False
        return None if ok else f"should be a date in {self.year} written YYYY-MM-DD"

    def _bool(self, cell: str, i: int) -> str | None:
        return None if cell in ("true", "false") else "should be true or false"


def to_csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def person(rng: random.Random) -> str:
    first, last = rng.choice(vocab.FIRST_NAMES), rng.choice(vocab.LAST_NAMES)
    return f"{last}, {first}" if rng.random() < 0.4 else f"{first} {last}"


RECORD_FIELDS = {
    "name": lambda rng: person(rng),
    "city": lambda rng: rng.choice(vocab.CITIES),
    "age": lambda rng: rng.randint(18, 90),
    "score": lambda rng: round(rng.uniform(0, 100), rng.choice([0, 1, 2])),
    "member": lambda rng: rng.random() < 0.5,
}


def cell_text(value: Any) -> str:
    """How the prompt asks a JSON value to be written in a cell."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def records_table(rng: random.Random) -> dict[str, Any]:
    """Records given as JSON, to be written as CSV with a fixed header."""
    others = rng.sample(sorted(RECORD_FIELDS), rng.randint(3, 4))
    header = ["id", *others]
    records = [{"id": rng.randint(100, 999) * 10 + i,
                **{k: RECORD_FIELDS[k](rng) for k in others}} for i in range(rng.randint(3, 6))]
    for rec in records:
        if "score" in rec:
            rec["score"] = float(rec["score"])
    cells = [[cell_text(rec[k]) for k in header] for rec in records]
    rules = [ColumnRule(k, "exact", values=[row[j] for row in cells]) for j, k in enumerate(header)]
    prompt = "\n".join([
        f"Convert these {len(records)} records to CSV:", json.dumps(records, indent=1),
        f"Use exactly this header line: {','.join(header)}",
        "Write one row per record, in the given order. Write decimal numbers with exactly two "
        "digits after the point and booleans as true or false; quote cells that contain commas. "
        "Answer with the CSV only, inside a ```csv fenced block.",
    ])
    return {"prompt": prompt, "gold": "```csv\n" + to_csv([header, *cells]) + "```",
            "answer": {"header": header, "rows": len(records), "rules": [asdict(r) for r in rules]}}


def generate_rules(rng: random.Random) -> dict[str, Any]:
    """Rules for invented rows, and a gold table obeying them."""
    low = float(rng.choice([1, 5, 10, 20]))
    high = low + rng.choice([50, 100, 400])
    year = rng.randint(2015, 2030)
    pool = {
        "name": ColumnRule("name", "text"),
        "category": ColumnRule("category", "enum", options=rng.sample(vocab.WORDS, 3)),
        "price": ColumnRule("price", "decimal", low=low, high=high),
        "added": ColumnRule("added", "date", year=year),
        "in_stock": ColumnRule("in_stock", "bool"),
    }
    rules = [ColumnRule("id", "sequence")] + [pool[k] for k in rng.sample(sorted(pool), rng.randint(3, 4))]
    n = rng.randint(3, 8)
    header = [r.name for r in rules]
    rows = [[gold_cell(r, i, rng) for r in rules] for i in range(n)]
    spell = {"sequence": f"the integers 1 to {n} in order", "text": "a non-empty product name",
             "enum": "one of {options}", "decimal": f"a decimal with exactly two digits after the "
             f"point, from {low:.2f} to {high:.2f}", "date": f"a date in {year} written YYYY-MM-DD",
             "bool": "true or false"}
    lines = [f"- {r.name}: {spell[r.kind].format(options='|'.join(r.options))}" for r in rules]
    prompt = "\n".join([
        f"Invent a CSV table of {n} {rng.choice(vocab.PRODUCT_NOUNS)} products with exactly this "
        f"header line: {','.join(header)}", "Rules for each column:", *lines,
        f"Write exactly {n} data rows. Answer with the CSV only, inside a ```csv fenced block.",
    ])
    return {"prompt": prompt, "gold": "```csv\n" + to_csv([header, *rows]) + "```",
            "answer": {"header": header, "rows": n, "rules": [asdict(r) for r in rules]}}


def gold_cell(rule: ColumnRule, i: int, rng: random.Random) -> str:
    """A cell obeying ``rule`` in row ``i``."""
    if rule.kind == "sequence":
        return str(i + 1)
    if rule.kind == "text":
        return f"{rng.choice(vocab.ADJECTIVES)} {rng.choice(vocab.PRODUCT_NOUNS)}"
    if rule.kind == "enum":
        return rng.choice(rule.options)
    if rule.kind == "decimal":
        return f"{rng.uniform(rule.low, rule.high):.2f}"
    if rule.kind == "date":
        return (dt.date(rule.year, 1, 1) + dt.timedelta(days=rng.randint(0, 364))).isoformat()
    return rng.choice(["true", "false"])
