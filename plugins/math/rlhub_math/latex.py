r"""Exact values rendered as the LaTeX that math-verify compares reliably.

Every answer in this plugin is computed exactly (``int``, :class:`fractions.Fraction`,
:class:`Surd`) and only turned into text here: integers as digits, rationals as reduced
``\frac{a}{b}``, terminating decimals only where a question asks for one, radicals in simplest
form, root lists and tuples comma-separated, matrices as ``pmatrix``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import isqrt

Rational = int | Fraction


def num(x: Rational) -> str:
    r"""An integer as digits, any other rational as ``\frac{a}{b}`` with the sign in front."""
    x = Fraction(x)
    if x.denominator == 1:
        return str(x.numerator)
    sign = "-" if x < 0 else ""
    return f"{sign}\\frac{{{abs(x.numerator)}}}{{{x.denominator}}}"


def dec(x: Rational) -> str:
    """A rational with a terminating decimal expansion written exactly (``12.375``)."""
    x = Fraction(x)
    places, den = 0, x.denominator
    while den != 1:
        if den % 2 and den % 5:
            raise ValueError(
                f"expected a terminating decimal, found {x} (denominator {x.denominator})"
            )
        den, places = (
            den // 10 if den % 10 == 0 else den // 2 if den % 2 == 0 else den // 5,
            places + 1,
        )
    digits = str(abs(x.numerator * 10**places // x.denominator)).rjust(places + 1, "0")
    text = f"{digits[:-places]}.{digits[-places:]}" if places else digits
    return f"-{text}" if x < 0 else text


def paren(x: Rational) -> str:
    """``num(x)`` wrapped in parentheses when negative, for use inside an expression."""
    text = num(x)
    return f"\\left({text}\\right)" if Fraction(x) < 0 else text


def sqrt_parts(n: int) -> tuple[int, int]:
    """``(k, m)`` with ``n = k*k*m`` and ``m`` square-free (``sqrt_parts(72) == (6, 2)``)."""
    if n < 0:
        raise ValueError(f"expected a non-negative radicand, found {n}")
    k, m = 1, n
    f = 2
    while f * f <= m:
        while m % (f * f) == 0:
            m //= f * f
            k *= f
        f += 1
    return k, m


@dataclass(frozen=True)
class Surd:
    """The exact real ``rational + coef * sqrt(radicand)``, radicand square-free (1 means none)."""

    rational: Fraction
    coef: Fraction = Fraction(0)
    radicand: int = 1

    @classmethod
    def sqrt(cls, n: Rational, scale: Rational = 1) -> Surd:
        """``scale * sqrt(n)`` simplified, for a non-negative rational ``n``."""
        n = Fraction(n)
        k, m = sqrt_parts(n.numerator * n.denominator)
        coef = Fraction(scale) * k / n.denominator
        return cls(Fraction(0), coef, m) if m != 1 else cls(coef)

    def __add__(self, other: Rational) -> Surd:
        return Surd(self.rational + Fraction(other), self.coef, self.radicand)

    def approx(self) -> float:
        """A float for ordering roots only; answers never use it."""
        return float(self.rational) + float(self.coef) * self.radicand**0.5

    def latex(self) -> str:
        r"""``\frac{p + q\sqrt{d}}{r}`` over a common denominator, or a plain rational."""
        if self.coef == 0 or self.radicand == 1:
            return num(self.rational + self.coef * isqrt(self.radicand))
        r = lcm_den(self.rational, self.coef)
        p, q = int(self.rational * r), int(self.coef * r)
        body = _surd_term(q, self.radicand)
        top = body if p == 0 else f"{p} {'-' if q < 0 else '+'} {_surd_term(abs(q), self.radicand)}"
        if r == 1:
            return top
        if p == 0 and q < 0:
            return f"-\\frac{{{_surd_term(-q, self.radicand)}}}{{{r}}}"
        return f"\\frac{{{top}}}{{{r}}}"


def _surd_term(q: int, d: int) -> str:
    coef = {1: "", -1: "-"}.get(q, str(q))
    return f"{coef}\\sqrt{{{d}}}"


def lcm_den(*xs: Fraction) -> int:
    """The least common multiple of the denominators of ``xs``."""
    out = 1
    for x in xs:
        d = Fraction(x).denominator
        out = out * d // _gcd(out, d)
    return out


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return abs(a)


def value(x: Rational | Surd) -> str:
    """Any exact scalar as LaTeX."""
    return x.latex() if isinstance(x, Surd) else num(x)


def roots(xs: Iterable[Rational | Surd]) -> str:
    """Distinct roots in increasing order, comma-separated (math-verify compares them as a set)."""
    unique = {value(x): x for x in xs}
    ordered = sorted(unique.values(), key=lambda x: x.approx() if isinstance(x, Surd) else x)
    return ", ".join(value(x) for x in ordered)


def tup(xs: Sequence[Rational]) -> str:
    """An ordered tuple ``(a, b, c)``; math-verify keeps the order of a parenthesised tuple."""
    return "(" + ", ".join(num(x) for x in xs) + ")"


def matrix(rows: Sequence[Sequence[Rational]]) -> str:
    r"""A ``pmatrix`` with rows separated by ``\\``."""
    body = " \\\\ ".join(" & ".join(num(x) for x in row) for row in rows)
    return f"\\begin{{pmatrix}} {body} \\end{{pmatrix}}"


def poly(coeffs: Sequence[Rational], var: str = "x") -> str:
    """A polynomial from coefficients, highest degree first: ``[2, 0, -1] -> 2x^{2} - 1``."""
    degree = len(coeffs) - 1
    parts: list[str] = []
    for i, c in enumerate(coeffs):
        c = Fraction(c)
        if c == 0:
            continue
        power = degree - i
        mono = "" if power == 0 else var if power == 1 else f"{var}^{{{power}}}"
        mag = num(abs(c)) if (abs(c) != 1 or power == 0) else ""
        sign = ("-" if c < 0 else "") if not parts else (" - " if c < 0 else " + ")
        parts.append(f"{sign}{mag}{mono}")
    return "".join(parts) or "0"


def linear(a: Rational, b: Rational, var: str = "x") -> str:
    """``a x + b`` written tidily (``linear(1, -3) == 'x - 3'``)."""
    return poly([a, b], var)


def signed(x: Rational) -> str:
    """`` + 3`` or `` - 3``: a term appended to an expression."""
    return f" - {num(-Fraction(x))}" if Fraction(x) < 0 else f" + {num(x)}"
