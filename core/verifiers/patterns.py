"""Regular expressions from data, matched in linear time (RE2, through ``google-re2``).

A pattern from a dataset row, a verifier option, a JSON Schema or a pulled environment is a
stranger's input, and it is matched against model output, which is hostile. Python's ``re``
backtracks: ``(a+)+$`` against forty ``a`` and a ``!`` runs for minutes inside C code that holds
the interpreter lock, so no thread-level timeout stops it and a server doing it stops answering.
RE2 matches in time linear in the text, whatever the pattern, with bounded memory; it refuses what
cannot be matched that way (backreferences, look-around, possessive or atomic groups) and
repetition counts above 1000.

* :func:`compile_pattern` is the one way rlhub runs a pattern from data: the compiled RE2
  pattern (cached; ``.search``, ``.fullmatch``), or :class:`PatternError` (a
  :class:`~rlhub.errors.VerifierError`, never the model's fault) saying why it cannot be;
* :func:`check_pattern` is the same refusal as one sentence (or None), for the checks that run
  when a domain file is read, as its rows load and at ``rlhub pull``
  (:mod:`rlhub.gradingdata`), which name where the pattern came from.

JSON Schemas' ``pattern`` and ``patternProperties`` run here too (:func:`rlhub.jsonschemas.validator`).
Python's flags ``i``, ``m`` and ``s`` become RE2's inline flags; ``\\Z`` is read as RE2's ``\\z``.
RE2's ``\\d``, ``\\w`` and ``\\b`` are ASCII, a little narrower than Python's.
"""

from __future__ import annotations

import functools
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
        reason = exc.args[0] if exc.args else exc
        reason = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        raise PatternError(f"pattern {pattern[:200]!r} is not accepted by RE2 (linear-time "
                           f"matching): {reason}; rewrite it without backreferences, look-around "
                           "or repetitions above 1000") from None


def check_pattern(pattern: Any, flags: str = "") -> str | None:
    """None when ``pattern`` can run on the linear-time engine, else why not (one sentence)."""
    try:
        compile_pattern(pattern, flags)
    except PatternError as exc:
        return str(exc)
    return None
