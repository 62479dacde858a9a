r"""The final-form gate: a correct value must also be written as a result, not as the question.

math-verify evaluates what it parses, so ``\boxed{37 \times 48 - 125}``, ``\boxed{\binom{10}{5}}`` or
``\boxed{\log_2 64}`` equal the gold answer. A policy trained on such a reward learns to copy the
question into the box. :func:`unevaluated` rejects answers that still contain an operation, for the
answer form the task asked for:

- numbers (``integer``, ``rational``, ``decimal``, ``tuple``, ``matrix``, ``inequality``): digits,
  fractions, signs, ``x =`` prefixes, units in ``\text{}``, ``%`` and degree marks only;
- ``pi``: the same plus ``\pi``; ``surd`` and ``roots``: the same plus ``\sqrt{n}`` of an integer and
  at most one ``+``/``-`` between a rational part and a radical part in each listed value.

Scientific notation (``3.5 \times 10^{-3}``) and mixed numbers are accepted as results.
"""

from __future__ import annotations

import re

_ALLOWED = {
    "frac",
    "dfrac",
    "tfrac",
    "left",
    "right",
    "le",
    "leq",
    "ge",
    "geq",
    "lt",
    "gt",
    "infty",
    "pm",
    "quad",
    "qquad",
    "begin",
    "end",
    "cup",
}
_EXTRA = {"pi": {"pi"}, "surd": {"sqrt"}, "roots": {"sqrt"}}
_ONE_OP_FORMS = {"surd", "roots"}

_TEXT = re.compile(
    r"\\(?:text|mathrm|textbf|mathbf|mbox|operatorname\*?)\s*\{[^{}]*\}(?:\s*\^\s*\{?[23]\}?)?"
)
_NOISE = re.compile(r"\\[,;:! ]|~|\$|\{,\}|\^\s*\{?\\circ\}?|\\circ|\\?%|\\degree")
_SCI = re.compile(r"(\d)\s*(?:\\times|\\cdot)\s*10\s*\^\s*(?:\{\s*[-+]?\d+\s*\}|[-+]?\d)")
_BASE = re.compile(r"_\s*\{?\d+\}?")
_ENVIRONMENT = re.compile(r"\\(?:begin|end)\s*\{[a-zA-Z*]*\}")
_RELATION = re.compile(r"\\(?:le|leq|ge|geq|lt|gt)(?![a-zA-Z])|[<>=]|\\pm(?![a-zA-Z])")
_COMMAND = re.compile(r"\\([a-zA-Z]+)")
_SQRT = re.compile(r"\\sqrt\s*(\{[^{}]*\}|\d)")
_BINARY = re.compile(r"[0-9A-Za-z}\)\].]\s*[+-]")
_SYMBOLS = re.compile(r"[*^!|]")


def _normalise(answer: str) -> str:
    text = _TEXT.sub(";", answer)
    text = _NOISE.sub(" ", text)
    text = _SCI.sub(r"\1", text)
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    return _BASE.sub("", text)


def _bad_command(text: str, form: str) -> str | None:
    allowed = _ALLOWED | _EXTRA.get(form, set())
    for name in _COMMAND.findall(text):
        if name not in allowed:
            return f"\\{name}"
    if form == "matrix" and text.count("\\begin") > 1:
        return "a product of matrices"
    return None


def _bad_sqrt(text: str) -> str | None:
    for inner in _SQRT.findall(text):
        if not inner.strip("{} ").isdigit():
            return f"\\sqrt{inner}"
    return None


def _too_many_operations(text: str, form: str) -> bool:
    limit = 1 if form in _ONE_OP_FORMS else 0
    body = _RELATION.sub(",", _ENVIRONMENT.sub(",", text)).replace("\\\\", ",").replace("&", ",")
    for item in re.split(r",|\\\{|\\\}|;", body):
        if len(_BINARY.findall(item.replace("\\left", "").replace("\\right", ""))) > limit:
            return True
    return False


def unevaluated(answer: str, form: str) -> str | None:
    """Why ``answer`` is not a finished result of the given form, or None when it is one."""
    text = _normalise(answer)
    symbol = _SYMBOLS.search(text)
    if symbol:
        return f"it still contains the operation {symbol.group()!r}"
    command = _bad_command(text, form) or _bad_sqrt(text)
    if command:
        return f"it still contains {command}"
    if _too_many_operations(text, form):
        return "it is an expression with an unevaluated + or -"
    return None
