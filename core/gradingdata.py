"""Checks on the grading data a domain file and its rows carry: schemas and patterns.

A data-only domain's verifier options and its rows' answers are matched against model output on
the grading host. Two kinds of value there can do harm before any sandbox is involved:

* a **JSON Schema** that refers outside itself (``{"$ref": "http://..."}``): rlhub compiles every
  schema offline (:mod:`rlhub.jsonschemas`), so the reference would fail at every verification;
  it is refused up front, naming the domain. Schemas are the ``schema`` option of any verifier
  (and of each composite part), the answer of a ``json-schema`` verifier that has no ``schema``
  option, and any value under a ``schema`` key of an answer (``json-schema-values``);
* a **regular expression** Python's backtracking ``re`` may take exponential time on: a
  ``regex`` verifier's ``pattern`` option, or its rows' answers when it has none, and every
  ``pattern``/``patternProperties`` of the schemas above
  (:func:`rlhub.verifiers.patterns.check_pattern`).

:func:`spec_problems` checks a domain file's verifier spec (when the file is loaded, and at
``rlhub pull``); :func:`answer_problems` checks one row's answer (as the dataset is read, and at
``rlhub pull``, over every row).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rlhub.jsonschemas import patterns as schema_patterns
from rlhub.jsonschemas import remote_problem
from rlhub.verifiers.patterns import check_pattern


def parts(spec: Any) -> Iterator[tuple[str, dict[str, Any], str]]:
    """``(name, options, where)`` for a verifier spec and, for ``composite``, each of its parts."""
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        return
    options = spec.get("options") if isinstance(spec.get("options"), dict) else {}
    yield spec["name"], options, "verifier"
    if spec["name"] != "composite" or not isinstance(options.get("parts"), list):
        return
    for i, part in enumerate(options["parts"]):
        for name, opts, where in parts(part):
            yield name, opts, f"verifier.options.parts.{i}" + where.removeprefix("verifier")


def spec_problems(spec: Any) -> list[str]:
    """One line per schema or pattern in a verifier spec's options that rlhub refuses."""
    problems: list[str] = []
    for name, options, where in parts(spec):
        if "schema" in options:
            problems += schema_problems(options["schema"], f"field {where}.options.schema")
        if name == "regex" and isinstance(options.get("pattern"), str):
            problems += _pattern(options["pattern"], f"field {where}.options.pattern")
    return problems


def answer_problems(spec: Any, answer: Any, where: str, *, patterns: bool = True) -> list[str]:
    """One line per schema or pattern in one row's ``answer`` that rlhub refuses (schemas only
    with ``patterns=False``)."""
    problems: list[str] = []
    for name, options, _ in parts(spec):
        if patterns and name == "regex" and "pattern" not in options and answer is not None:
            problems += _pattern(str(answer), f"{where}: answer")
        if name == "json-schema" and "schema" not in options:
            problems += schema_problems(answer, f"{where}: answer", patterns=patterns)
    for path, schema in _schema_values(answer, "answer"):
        problems += schema_problems(schema, f"{where}: {path}", patterns=patterns)
    return problems


def schema_problems(schema: Any, where: str, *, patterns: bool = True) -> list[str]:
    """A schema that refers outside itself, and each of its patterns that is refused."""
    remote = remote_problem(schema, where)
    problems = [remote] if remote else []
    for pattern in schema_patterns(schema) if patterns else ():
        problems += _pattern(pattern, f"{where}, a schema pattern")
    return problems


def _pattern(pattern: str, where: str) -> list[str]:
    problem = check_pattern(pattern)
    return [f"{where}: {problem}"] if problem else []


def _schema_values(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every value under a ``schema`` key inside ``value`` (not descending into those)."""
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}"
            if key == "schema":
                yield here, item
            else:
                yield from _schema_values(item, here)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _schema_values(item, f"{path}.{i}")
