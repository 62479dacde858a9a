"""JSON Schemas of growing difficulty, each with an instance the prompt describes.

Levels add schema features on top of the previous level:

1. a flat object of 3-4 typed fields (string, integer, number, boolean), all required;
2. + an enum, numeric bounds, optional fields (one stated, one not), ``additionalProperties: false``;
3. + a nested object and an array of strings with ``minItems``/``maxItems``;
4. + a ``pattern`` field whose value the policy must invent, an array of objects with
   ``minItems``, ``uniqueItems`` and string length bounds;
5. + a ``oneOf`` contact (discriminated by a ``const`` kind), enums inside array items and
   patterned array items.

The task answer is ``{"schema": ..., "values": [{"path": [...], "value": ...}]}`` for the
``json-schema-values`` verifier; the gold is the instance in a ```json block.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from rlhub import Domain, Manifest
from rlhub_structured import vocab
from rlhub_structured.verifiers import dotted

Path = list[str | int]

ENTITIES: dict[str, dict[str, Any]] = {
    "book": {
        "label": "a book", "text": [("title", "title"), ("author", "person")],
        "int": [("year", 1900, 2024, 1450, 2100), ("pages", 80, 1200, 1, 5000)],
        "num": ("price", 4, 80, 0, 1000), "bool": "in_print",
        "enum": ("genre", ["mystery", "fantasy", "history", "science", "poetry", "romance"]),
        "code": ("isbn", "^978-[0-9]{10}$", "978-##########"), "tags": "keywords",
        "child": ("publisher", ("name", "org"), ("city", "city"), ("founded", 1800, 2020)),
        "items": ("chapters", ("title", "title"), ("pages", 5, 60),
                  ("status", ["draft", "edited", "final"])),
        "optional": (("subtitle", "title"), ("edition", 1, 20)),
    },
    "product": {
        "label": "a product", "text": [("name", "product"), ("brand", "org")],
        "int": [("stock", 0, 500, 0, 100000), ("warranty_months", 6, 60, 0, 120)],
        "num": ("price", 5, 900, 0, 10000), "bool": "discontinued",
        "enum": ("category", ["kitchen", "outdoor", "office", "audio", "travel"]),
        "code": ("sku", "^[A-Z]{3}-[0-9]{4}$", "@@@-####"), "tags": "features",
        "child": ("manufacturer", ("name", "org"), ("country", "country"), ("established", 1850, 2020)),
        "items": ("variants", ("color", "word"), ("stock", 0, 200),
                  ("status", ["active", "retired", "planned"])),
        "optional": (("slogan", "title"), ("rating", 1, 5)),
    },
    "employee": {
        "label": "an employee", "text": [("full_name", "person"), ("city", "city")],
        "int": [("age", 21, 65, 16, 100), ("years_of_service", 0, 40, 0, 60)],
        "num": ("salary", 30000, 150000, 0, 1000000), "bool": "remote",
        "enum": ("department", ["engineering", "sales", "finance", "design", "support"]),
        "code": ("employee_id", "^EMP-[0-9]{5}$", "EMP-#####"), "tags": "skills",
        "child": ("manager", ("name", "person"), ("city", "city"), ("extension", 100, 999)),
        "items": ("projects", ("name", "title"), ("hours", 1, 400),
                  ("status", ["open", "paused", "done"])),
        "optional": (("nickname", "word"), ("floor", 1, 30)),
    },
    "event": {
        "label": "an event", "text": [("title", "title"), ("city", "city")],
        "int": [("year", 2020, 2030, 2000, 2100), ("capacity", 50, 5000, 1, 100000)],
        "num": ("ticket_price", 5, 250, 0, 5000), "bool": "outdoor",
        "enum": ("category", ["music", "film", "science", "food", "sport"]),
        "code": ("event_code", "^EV[0-9]{6}$", "EV######"), "tags": "themes",
        "child": ("venue", ("name", "org"), ("country", "country"), ("opened", 1900, 2020)),
        "items": ("sessions", ("title", "title"), ("minutes", 15, 180),
                  ("status", ["confirmed", "tentative", "cancelled"])),
        "optional": (("sponsor", "org"), ("edition", 1, 50)),
    },
}


def text_value(rng: random.Random, kind: str) -> str:
    """A string of a kind: person, city, country, title, org, product or word."""
    makers = {
        "person": lambda: f"{rng.choice(vocab.FIRST_NAMES)} {rng.choice(vocab.LAST_NAMES)}",
        "city": lambda: rng.choice(vocab.CITIES),
        "country": lambda: rng.choice(vocab.COUNTRIES),
        "title": lambda: f"The {rng.choice(vocab.ADJECTIVES)} {rng.choice(vocab.NOUNS)}",
        "org": lambda: f"{rng.choice(vocab.NOUNS)} {rng.choice(['Press', 'Works', 'Group', 'Hall'])}",
        "product": lambda: f"{rng.choice(vocab.ADJECTIVES)} {rng.choice(vocab.PRODUCT_NOUNS)}",
        "word": lambda: rng.choice(vocab.WORDS),
    }
    return makers[kind]()


def code_value(rng: random.Random, template: str) -> str:
    """Fill a template: ``#`` becomes a digit, ``@`` an uppercase letter."""
    return "".join(str(rng.randint(0, 9)) if ch == "#" else
                   chr(rng.randint(65, 90)) if ch == "@" else ch for ch in template)


@dataclass
class Obj:
    """An object schema under construction, with its instance and the facts the prompt states."""

    level: int
    properties: dict[str, Any] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    instance: dict[str, Any] = field(default_factory=dict)
    stated: list[tuple[Path, Any]] = field(default_factory=list)
    free: list[Path] = field(default_factory=list)

    def add(self, name: str, schema: dict[str, Any], value: Any, *, required: bool = True,
            stated: bool = True, present: bool = True) -> None:
        """Add a field; a present field is either stated in the prompt or left to the policy."""
        self.properties[name] = schema
        if required:
            self.required.append(name)
        if present:
            self.instance[name] = value
            if stated:
                self.stated.append(([name], value))
            else:
                self.free.append([name])

    def nest(self, name: str, child: Obj, schema: dict[str, Any], value: Any) -> None:
        """Add a required sub-object or array whose facts ``child`` holds, under ``name``."""
        self.properties[name] = schema
        self.required.append(name)
        self.instance[name] = value
        self.stated += [([name, *p], v) for p, v in child.stated]
        self.free += [[name, *p] for p in child.free]

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object", "properties": self.properties,
                               "required": self.required}
        if self.level >= 2:
            out["additionalProperties"] = False
        return out


def text_schema(level: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": 80} if level >= 4 else {"type": "string"}


def int_field(obj: Obj, rng: random.Random, spec: tuple[Any, ...], **kw: Any) -> None:
    name, lo, hi, *bounds = spec
    schema: dict[str, Any] = {"type": "integer"}
    if obj.level >= 2:
        schema |= {"minimum": bounds[0] if bounds else lo, "maximum": bounds[1] if bounds else hi}
    obj.add(name, schema, rng.randint(lo, hi), **kw)


def leaves(obj: Obj, rng: random.Random, ent: dict[str, Any]) -> None:
    """The typed top-level fields of every level."""
    level = obj.level
    name, kind = ent["text"][0]
    obj.add(name, text_schema(level), text_value(rng, kind))
    int_field(obj, rng, ent["int"][0])
    num, lo, hi, blo, bhi = ent["num"]
    num_schema: dict[str, Any] = {"type": "number"}
    if level >= 2:
        num_schema |= {"minimum": blo, "maximum": bhi}
    if level >= 2 or rng.random() < 0.5:
        obj.add(num, num_schema, round(rng.uniform(lo, hi), 2))
    obj.add(ent["bool"], {"type": "boolean"}, rng.random() < 0.5)
    if level >= 2:
        name, kind = ent["text"][1]
        obj.add(name, text_schema(level), text_value(rng, kind))
        enum_name, options = ent["enum"]
        obj.add(enum_name, {"type": "string", "enum": options}, rng.choice(options))
        optional_fields(obj, rng, ent)


def optional_fields(obj: Obj, rng: random.Random, ent: dict[str, Any]) -> None:
    """One optional field the prompt states, one it does not mention (left out of the gold)."""
    (text_name, kind), int_spec = ent["optional"]
    say_text = rng.random() < 0.5
    obj.add(text_name, text_schema(obj.level), text_value(rng, kind), required=False,
            present=say_text)
    int_field(obj, rng, int_spec, required=False, present=not say_text)


def child_object(obj: Obj, rng: random.Random, ent: dict[str, Any]) -> None:
    name, (a, ka), (b, kb), int_spec = ent["child"]
    child = Obj(obj.level)
    child.add(a, text_schema(obj.level), text_value(rng, ka))
    child.add(b, text_schema(obj.level), text_value(rng, kb))
    int_field(child, rng, int_spec)
    obj.nest(name, child, child.schema(), child.instance)


def tag_array(obj: Obj, rng: random.Random, ent: dict[str, Any]) -> None:
    n = rng.randint(2, 4)
    items: dict[str, Any] = {"type": "string"}
    if obj.level >= 5:
        items["pattern"] = "^[a-z]+$"
    schema: dict[str, Any] = {"type": "array", "items": items, "minItems": n, "maxItems": n + 2}
    if obj.level >= 4:
        schema["uniqueItems"] = True
    obj.add(ent["tags"], schema, rng.sample(vocab.WORDS, n))


def item_array(obj: Obj, rng: random.Random, ent: dict[str, Any]) -> None:
    name, (a, ka), int_spec, (enum_name, options) = ent["items"]
    container = Obj(obj.level)
    rows: list[dict[str, Any]] = []
    schema: dict[str, Any] = {}
    for i in range(rng.randint(2, 3)):
        row = Obj(obj.level)
        row.add(a, text_schema(obj.level), text_value(rng, ka))
        int_field(row, rng, int_spec)
        if obj.level >= 5:
            row.add(enum_name, {"type": "string", "enum": options}, rng.choice(options))
        container.stated += [([i, *p], v) for p, v in row.stated]
        rows.append(row.instance)
        schema = row.schema()
    obj.nest(name, container, {"type": "array", "items": schema, "minItems": len(rows)}, rows)


CONTACT_SCHEMA: dict[str, Any] = {"oneOf": [
    {"type": "object", "required": ["kind", "address"], "additionalProperties": False,
     "properties": {"kind": {"const": "email"},
                    "address": {"type": "string", "pattern": "^[a-z0-9.]+@[a-z0-9-]+\\.[a-z]{2,}$"}}},
    {"type": "object", "required": ["kind", "number"], "additionalProperties": False,
     "properties": {"kind": {"const": "phone"},
                    "number": {"type": "string", "pattern": "^\\+[0-9]{8,15}$"}}},
]}


def contact(obj: Obj, rng: random.Random) -> None:
    child = Obj(obj.level)
    if rng.random() < 0.5:
        user = f"{rng.choice(vocab.FIRST_NAMES)}.{rng.choice(vocab.LAST_NAMES)}".lower()
        value = {"kind": "email", "address": f"{user}@{rng.choice(vocab.WORDS)}.org"}
    else:
        value = {"kind": "phone", "number": "+" + code_value(rng, "#" * rng.randint(9, 13))}
    child.stated = [([k], v) for k, v in value.items()]
    obj.nest("contact", child, CONTACT_SCHEMA, value)


def build(rng: random.Random, level: int) -> tuple[str, Obj]:
    """An entity label and the object (schema, instance, facts) for ``level``."""
    entity = ENTITIES[rng.choice(sorted(ENTITIES))]
    obj = Obj(level)
    leaves(obj, rng, entity)
    if level >= 3:
        child_object(obj, rng, entity)
        tag_array(obj, rng, entity)
    if level >= 4:
        code_name, pattern, template = entity["code"]
        obj.add(code_name, {"type": "string", "pattern": pattern}, code_value(rng, template),
                stated=False)
        item_array(obj, rng, entity)
    if level >= 5:
        contact(obj, rng)
    return entity["label"], obj


def prompt_for(label: str, obj: Obj, schema: dict[str, Any]) -> str:
    facts = [f"- {dotted(p)}: {json.dumps(v)}" for p, v in obj.stated]
    facts += [f"- {dotted(p)}: any value the schema allows (you choose)" for p in obj.free]
    return "\n".join([
        f"Produce a JSON object describing {label} with exactly these facts:", *facts,
        "Include every required field; optional fields the facts do not mention may be left out. "
        "Answer with the JSON object only, inside a ```json fenced block. The object must "
        "validate against this JSON Schema (draft 2020-12):",
        "```json", json.dumps(schema, indent=2), "```",
    ])


class SchemaDomain(Domain):
    """JSON Schema structured output at one difficulty level (``params.level``, 1..5)."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.level = int(self.params.get("level", 0))
        if not 1 <= self.level <= 5:
            raise ValueError(f"domain {self.id!r}: expected params.level in 1..5, "
                             f"found {self.params.get('level')!r}")

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        label, obj = build(rng, self.level)
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **obj.schema()}
        return {
            "prompt": prompt_for(label, obj, schema),
            "answer": {"schema": schema, "values": [{"path": p, "value": v} for p, v in obj.stated]},
            "gold": "```json\n" + json.dumps(obj.instance, indent=2) + "\n```",
            "meta": {"level": self.level, "entity": label},
        }


def make(manifest: Manifest) -> SchemaDomain:
    return SchemaDomain(manifest)
