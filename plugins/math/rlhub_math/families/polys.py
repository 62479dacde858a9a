"""Quadratic equations (integer, rational and irrational roots) and polynomial manipulation."""

from __future__ import annotations

import random
from fractions import Fraction
from math import gcd, isqrt

from rlhub_math.families.common import nonzero
from rlhub_math.latex import Surd, num, paren, poly, roots, signed
from rlhub_math.problem import Problem

F = Fraction


def _mul(p: list[int], q: list[int]) -> list[int]:
    """Product of two coefficient lists (highest degree first)."""
    out = [0] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        for j, b in enumerate(q):
            out[i + j] += a * b
    return out


def _eval(p: list[int], x: int) -> int:
    acc = 0
    for c in p:
        acc = acc * x + c
    return acc


def _roots_problem(coeffs: list[int], found: list, steps: list[str]) -> Problem:
    q = f"Find all real solutions of ${poly(coeffs)} = 0$."
    return Problem(q, roots(found), steps, "roots", sorted(set(found), key=_order))


def _order(x: object) -> float:
    return x.approx() if isinstance(x, Surd) else float(x)  # type: ignore[arg-type]


def quadratics_level1(rng: random.Random) -> Problem:
    """Monic quadratic with two distinct integer roots, solved by factoring."""
    r1, r2 = rng.sample(range(-12, 13), 2)
    coeffs = [1, -(r1 + r2), r1 * r2]
    steps = [
        f"Two numbers with product ${r1 * r2}$ and sum ${-(r1 + r2)}$ are ${-r1}$ and ${-r2}$.",
        f"So ${poly(coeffs)} = (x{signed(-r1)})(x{signed(-r2)})$ and $x = {r1}$ or $x = {r2}$.",
    ]
    return _roots_problem(coeffs, [F(r1), F(r2)], steps)


def quadratics_level2(rng: random.Random) -> Problem:
    """Non-monic quadratic ``(p x - q)(r x - s)`` with distinct rational roots."""
    while True:
        p, r = rng.randint(1, 6), rng.randint(2, 6)
        q, s = nonzero(rng, -9, 9), nonzero(rng, -9, 9)
        if gcd(p, q) == 1 and gcd(r, s) == 1 and F(q, p) != F(s, r):
            break
    coeffs = _mul([p, -q], [r, -s])
    steps = [
        f"Factor: ${poly(coeffs)} = ({poly([p, -q])})({poly([r, -s])})$.",
        f"So $x = {num(F(q, p))}$ or $x = {num(F(s, r))}$.",
    ]
    return _roots_problem(coeffs, [F(q, p), F(s, r)], steps)


def quadratics_level3(rng: random.Random) -> Problem:
    """Quadratic with irrational roots, solved with the quadratic formula and simplified radicals."""
    while True:
        a, b, c = rng.randint(1, 5), rng.randint(-12, 12), rng.randint(-12, 12)
        disc = b * b - 4 * a * c
        if disc > 0 and isqrt(disc) ** 2 != disc and gcd(gcd(a, b), c) == 1:
            break
    half = Surd.sqrt(disc, F(1, 2 * a))
    centre = F(-b, 2 * a)
    found = [Surd(centre, -half.coef, half.radicand), Surd(centre, half.coef, half.radicand)]
    steps = [
        f"The discriminant is ${paren(b)}^2 - 4 \\cdot {a} \\cdot {paren(c)} = {disc}$.",
        f"So $x = \\frac{{{-b} \\pm \\sqrt{{{disc}}}}}{{{2 * a}}}$, that is $x = {found[0].latex()}$ or "
        f"$x = {found[1].latex()}$.",
    ]
    return _roots_problem([a, b, c], found, steps)


def polynomials_level1(rng: random.Random) -> Problem:
    """Evaluate a cubic or quadratic at an integer."""
    p = [nonzero(rng, -6, 6)] + [rng.randint(-9, 9) for _ in range(rng.choice([2, 3]))]
    x = nonzero(rng, -5, 5)
    value = _eval(p, x)
    q = f"Let $p(x) = {poly(p)}$. Compute $p({x})$."
    steps = [f"Substitute $x = {x}$ into ${poly(p)}$.", f"$p({x}) = {value}$."]
    return Problem(q, str(value), steps, "integer", value)


def polynomials_level2(rng: random.Random) -> Problem:
    """Expand a product of polynomials and report one coefficient."""
    f = [nonzero(rng, -5, 5), rng.randint(-7, 7)]
    g = [nonzero(rng, -4, 4), rng.randint(-7, 7), rng.randint(-7, 7)]
    h = [1, nonzero(rng, -5, 5)] if rng.random() < 0.5 else [1]
    product = _mul(_mul(f, g), h)
    degree = len(product) - 1
    k = rng.randint(1, degree - 1)
    coef = product[degree - k]
    factors = "".join(f"({poly(part)})" for part in (f, g, h) if part != [1])
    mono = "x" if k == 1 else f"x^{{{k}}}"
    q = f"Expand ${factors}$. What is the coefficient of ${mono}$?"
    steps = [f"Expanding gives ${poly(product)}$.", f"The coefficient of ${mono}$ is ${coef}$."]
    return Problem(q, str(coef), steps, "integer", coef)


def polynomials_level3(rng: random.Random) -> Problem:
    """Cubic with three distinct integer roots, found with the rational root theorem."""
    r = rng.sample(range(-7, 8), 3)
    lead = rng.choice([1, 1, 2, -1, 3])
    coeffs = _mul(_mul([lead, -lead * r[0]], [1, -r[1]]), [1, -r[2]])
    test = r[0]
    quotient = _mul([lead], _mul([1, -r[1]], [1, -r[2]]))
    steps = [
        f"Try divisors of the constant term: $p({test}) = {_eval(coeffs, test)}$, so $x{signed(-test)}$ is a factor.",
        f"Dividing gives ${poly(coeffs)} = (x{signed(-test)})({poly(quotient)})$.",
        f"The quadratic factor has roots ${r[1]}$ and ${r[2]}$.",
    ]
    found = [F(x) for x in r]
    q = f"Find all real roots of $p(x) = {poly(coeffs)}$."
    return Problem(q, roots(found), steps, "roots", sorted(found))
