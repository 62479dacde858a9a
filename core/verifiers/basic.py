"""The ``exact``, ``regex`` and ``json-schema`` verifiers."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from rlhub.domain import Verdict
from rlhub.errors import VerifierError
from rlhub.extract import final_answer, last_code_block
from rlhub.jsonschemas import remote_problem, validator
from rlhub.task import Task


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

    The pattern is ``options.pattern`` or, when absent, ``task.answer``. Options: ``fullmatch``
    (default true), ``flags`` (letters of ``imsx``), ``extract`` (``answer`` or ``all``, default
    ``all``). Component: ``match``.
    """

    def __init__(self, options: dict[str, Any]):
        self.pattern = options.get("pattern")
        self.fullmatch = options.get("fullmatch", True)
        self.extract = options.get("extract", "all")
        flag_map = {"i": re.I, "m": re.M, "s": re.S, "x": re.X}
        self.flags = 0
        for letter in options.get("flags", ""):
            self.flags |= flag_map[letter]
        if self.pattern is not None:
            re.compile(self.pattern, self.flags)

    def check(self, task: Task, completion: str) -> Verdict:
        pattern = self.pattern if self.pattern is not None else str(task.answer)
        text = final_answer(completion) if self.extract == "answer" else completion.strip()
        matcher = re.fullmatch if self.fullmatch else re.search
        ok = matcher(pattern, text, self.flags) is not None
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

    The schema is ``options.schema`` or, when absent, ``task.answer``. Components: ``valid_json``
    (it parses) and ``schema_ok`` (it validates). The schema is compiled offline
    (:mod:`rlhub.jsonschemas`): a reference outside it is a :class:`VerifierError` naming the
    domain, never a download.
    """

    def __init__(self, options: dict[str, Any]):
        self.schema = options.get("schema")

    def check(self, task: Task, completion: str) -> Verdict:
        import jsonschema
        from referencing.exceptions import Unresolvable

        schema = self.schema if self.schema is not None else task.answer
        try:
            value = parse_json_answer(completion)
        except ValueError as exc:
            return Verdict({"valid_json": 0.0, "schema_ok": 0.0}, False, f"Not valid JSON: {exc}")
        try:  # compiled offline: a reference outside the schema is never fetched
            error = jsonschema.exceptions.best_match(validator(schema).iter_errors(value))
        except Unresolvable as exc:
            raise VerifierError(remote_problem(schema, f"domain {task.domain}, task {task.id}")
                                or f"domain {task.domain}, task {task.id}: {exc}") from None
        if error is None:
            return Verdict({"valid_json": 1.0, "schema_ok": 1.0}, True)
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return Verdict({"valid_json": 1.0, "schema_ok": 0.0}, False,
                       f"Schema violation at {where}: {error.message[:300]}")
