"""Patterns that come from data, matched in linear time (RE2, through ``google-re2``).

A regular expression from a dataset row, a verifier option, a JSON Schema or a pulled environment
is a stranger's input. Python's ``re`` backtracks: ``(a+)+$`` against forty ``a`` and a ``!``
runs for minutes inside C code that holds the interpreter lock, so no thread-level timeout stops
it and a server doing it stops answering. RE2 matches in time linear in the text, whatever the
pattern, with bounded memory; it refuses what cannot be matched that way (backreferences,
look-around, possessive or atomic groups) and repetition counts above 1000.

* :func:`check_pattern` raises :class:`PatternError` (a :class:`~rlhub.errors.VerifierError`,
  never the model's fault) saying why a pattern cannot be used; callers name where it came from.
  Domain files are checked when they are read, and data rows when their dataset is loaded, so a
  bad pattern is the environment's error at load time (``rlhub pull`` can call it too).
* :func:`compile_pattern` gives the compiled RE2 pattern (cached): ``.search``, ``.fullmatch``.
* :func:`schema_patterns` lists a JSON Schema's patterns; :func:`check_schema` checks them all;
  :func:`linear_validator` is a draft 2020-12 validator whose ``pattern``, ``patternProperties``
  and ``additionalProperties`` match with RE2.

Python's flags ``i``, ``m`` and ``s`` become RE2's inline flags; ``\\Z`` is read as RE2's ``\\z``.
RE2's ``\\d``, ``\\w`` and ``\\b`` are ASCII, a little narrower than Python's.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from rlhub.errors import VerifierError

MAX_PATTERN_CHARS = 4096
FLAGS = frozenset("ims")


class PatternError(VerifierError):
    """A pattern the linear-time engine cannot match: the environment's error, not the answer's."""


def _translate(pattern: str) -> str:
    """Python's ``\\Z`` (end of text) as RE2's ``\\z``; every other escape as it is."""
    out, i = [], 0
    while i < len(pattern):
        pair = pattern[i:i + 2]
        out.append("\\z" if pair == "\\Z" else pair if pair.startswith("\\") else pattern[i])
        i += 2 if pair.startswith("\\") else 1
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str, flags: str = "") -> Any:
    """``pattern`` compiled by RE2 with Python-style ``flags`` (letters of ``ims``); raises
    :class:`PatternError` saying why it cannot be (see the module docstring)."""
    import re2

    if not isinstance(pattern, str):
        raise PatternError(f"expected a pattern string, found {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"expected a pattern of at most {MAX_PATTERN_CHARS} characters, "
                           f"found {len(pattern)}")
    unknown = sorted(set(flags) - FLAGS)
    if unknown:
        raise PatternError(f"expected flags among {''.join(sorted(FLAGS))}, found {unknown} "
                           "(verbose patterns are not supported by the linear-time engine)")
    options = re2.Options()
    options.log_errors = False
    prefix = f"(?{''.join(sorted(set(flags)))})" if flags else ""
    try:
        return re2.compile(prefix + _translate(pattern), options)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(
            exc.args[0], bytes) else str(exc)
        raise PatternError(f"the pattern {pattern[:120]!r} cannot run on the linear-time engine "
                           f"(RE2): {reason}; rewrite it without backreferences, look-around or "
                           "repetitions above 1000") from None


def check_pattern(pattern: Any, flags: str = "", *, where: str = "") -> None:
    """Raise :class:`PatternError` (prefixed by ``where``) when ``pattern`` cannot be used."""
    try:
        compile_pattern(pattern, flags)
    except PatternError as exc:
        raise PatternError(f"{where}: {exc}" if where else str(exc)) from None


def schema_patterns(schema: Any) -> Iterator[str]:
    """Every regular expression of a JSON Schema: ``pattern`` values and ``patternProperties``
    keys, at any depth (``$defs`` and every other subschema included)."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            elif key == "patternProperties" and isinstance(value, dict):
                yield from value
            if key not in ("const", "enum", "examples", "default"):
                yield from schema_patterns(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from schema_patterns(item)


def _uses(schema: Any, keyword: str) -> bool:
    if isinstance(schema, dict):
        return keyword in schema or any(_uses(v, keyword) for v in schema.values())
    return isinstance(schema, list) and any(_uses(v, keyword) for v in schema)


def check_schema(schema: Any, *, where: str = "") -> None:
    """Raise :class:`PatternError` when a JSON Schema holds a pattern RE2 cannot match, or pairs
    ``unevaluatedProperties`` with ``patternProperties`` (which would match with ``re``)."""
    _checked_schema(json.dumps(schema, sort_keys=True, default=str), where)


@functools.lru_cache(maxsize=1024)
def _checked_schema(text: str, where: str) -> None:
    schema = json.loads(text)
    for pattern in schema_patterns(schema):
        check_pattern(pattern, where=where)
    if _uses(schema, "unevaluatedProperties") and _uses(schema, "patternProperties"):
        prefix = f"{where}: " if where else ""
        raise PatternError(f"{prefix}a schema may not combine unevaluatedProperties with "
                           "patternProperties (not supported by the linear-time engine); use "
                           "additionalProperties")


# -- JSON Schema keywords on RE2 ------------------------------------------------------------------


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any,
                        schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if compile_pattern(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any,
                           schema: Any) -> Iterator[Any]:
    """jsonschema's own keyword, told which keys the patterns matched (found with RE2)."""
    from jsonschema import Draft202012Validator

    patterns = schema.get("patternProperties") or {}
    if validator.is_type(instance, "object") and patterns:
        matched = {k for k in instance if any(compile_pattern(p).search(k) for p in patterns)}
        properties = {**dict.fromkeys(matched, True), **schema.get("properties", {})}
        schema = {k: v for k, v in schema.items() if k != "patternProperties"}
        schema["properties"] = properties
    yield from Draft202012Validator.VALIDATORS["additionalProperties"](
        validator, additional, instance, schema)


@functools.cache
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator, validators

    return validators.extend(Draft202012Validator, {
        "pattern": _pattern, "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties})


def linear_validator(schema: Any, *, where: str = "") -> Any:
    """A draft 2020-12 validator of ``schema`` whose patterns match in linear time; raises
    :class:`PatternError` first when ``schema`` cannot be checked that way (:func:`check_schema`)."""
    check_schema(schema, where=where)
    return _validator_class()(schema)
