"""The ``exact``, ``regex`` and ``json-schema`` verifiers."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from rlhub.domain import Verdict
from rlhub.extract import final_answer, last_code_block
from rlhub.task import Task
from rlhub.verifiers.patterns import (
    check_pattern,
    check_schema,
    compile_pattern,
    linear_validator,
)


def normalize(text: str, mode: str) -> str:
    """Normalise for comparison: ``none``, ``strip``, ``whitespace`` or ``casefold``."""
    if mode == "none":
        return text
    text = unicodedata.normalize("NFKC", text).strip()
    if mode in ("whitespace", "casefold"):
        text = " ".join(text.split())
    if mode == "casefold":
        text = text.casefold().rstrip(".")
    return text


class Exact:
    """Pass when the extracted answer equals ``task.answer`` (or one of a list of answers).

    Options: ``normalize`` (``none|strip|whitespace|casefold``, default ``whitespace``) and
    ``extract`` (``answer`` uses tags/"Answer:"/boxed/last line, ``all`` compares the whole text).
    Component: ``correct``.
    """

    def __init__(self, options: dict[str, Any]):
        self.mode = options.get("normalize", "whitespace")
        self.extract = options.get("extract", "answer")
        if self.mode not in ("none", "strip", "whitespace", "casefold"):
            raise ValueError(f"exact: expected normalize in none|strip|whitespace|casefold, "
                             f"found {self.mode!r}")

    def check(self, task: Task, completion: str) -> Verdict:
        got = completion if self.extract == "all" else final_answer(completion)
        answers = task.answer if isinstance(task.answer, list) else [task.answer]
        ok = any(normalize(got, self.mode) == normalize(str(a), self.mode) for a in answers)
        feedback = "" if ok else f"Expected a different answer; got {got[:200]!r}."
        return Verdict({"correct": float(ok)}, ok, feedback)


class Regex:
    """Pass when the completion (or its extracted answer) matches a regular expression.

    The pattern is ``options.pattern`` or, when absent, ``task.answer``; it runs on the
    linear-time engine (:mod:`rlhub.verifiers.patterns`), so a pattern from data cannot stall
    the verifier, and one the engine refuses is a :class:`~.patterns.PatternError` (the
    environment's fault). Options: ``fullmatch`` (default true), ``flags`` (letters of ``ims``),
    ``extract`` (``answer`` or ``all``, default ``all``). Component: ``match``.
    """

    def __init__(self, options: dict[str, Any]):
        self.pattern = options.get("pattern")
        self.fullmatch = options.get("fullmatch", True)
        self.extract = options.get("extract", "all")
        self.flags = str(options.get("flags", ""))
        check_pattern("" if self.pattern is None else self.pattern, self.flags,
                      where="regex verifier option 'pattern'")

    def check_data(self, answer: Any, where: str) -> None:
        """Raise :class:`~.patterns.PatternError` when a task with ``answer`` cannot be matched
        (data-only domains call it on every row as their dataset loads)."""
        if self.pattern is None:
            check_pattern(str(answer), self.flags, where=where)

    def check(self, task: Task, completion: str) -> Verdict:
        pattern = self.pattern if self.pattern is not None else str(task.answer)
        text = final_answer(completion) if self.extract == "answer" else completion.strip()
        compiled = compile_pattern(pattern, self.flags)
        found = compiled.fullmatch(text) if self.fullmatch else compiled.search(text)
        ok = found is not None
        feedback = "" if ok else f"The output does not match the required pattern {pattern!r}."
        return Verdict({"match": float(ok)}, ok, feedback)


def parse_json_answer(completion: str) -> Any:
    """Decode the JSON a completion gives: the last fenced block, or the whole text.

    Raises ``ValueError`` for invalid JSON, and for JSON nested deeper than the decoder's
    recursion limit (a few bytes of ``[[[[...`` must not crash the verifier).
    """
    block = last_code_block(completion, ("json",))
    try:
        return json.loads(block if block is not None else completion.strip())
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


class JsonSchema:
    """Pass when the completion is JSON valid against a JSON Schema.

    The schema is ``options.schema`` or, when absent, ``task.answer``. Its ``pattern`` and
    ``patternProperties`` match on the linear-time engine (:func:`.patterns.linear_validator`).
    Components: ``valid_json`` (it parses) and ``schema_ok`` (it validates).
    """

    def __init__(self, options: dict[str, Any]):
        self.schema = options.get("schema")
        if self.schema is not None:
            check_schema(self.schema, where="json-schema verifier option 'schema'")

    def check_data(self, answer: Any, where: str) -> None:
        """Raise :class:`~.patterns.PatternError` when the schema of a task with ``answer``
        cannot be checked in linear time (see :meth:`Regex.check_data`)."""
        if self.schema is None:
            check_schema(self.schema_of(answer), where=where)

    def schema_of(self, answer: Any) -> Any:
        return self.schema if self.schema is not None else answer

    def check(self, task: Task, completion: str) -> Verdict:
        import jsonschema

        schema = self.schema_of(task.answer)
        try:
            value = parse_json_answer(completion)
        except ValueError as exc:
            return Verdict({"valid_json": 0.0, "schema_ok": 0.0}, False, f"Not valid JSON: {exc}")
        validator = linear_validator(schema, where="json-schema verifier")
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return Verdict({"valid_json": 1.0, "schema_ok": 1.0}, True)
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return Verdict({"valid_json": 1.0, "schema_ok": 0.0}, False,
                       f"Schema violation at {where}: {error.message[:300]}")
