"""Exponent rules, logarithms and exponential / logarithmic equations, all with exact answers."""

from __future__ import annotations

import random
from fractions import Fraction

from rlhub_math.families.common import nonzero
from rlhub_math.latex import linear, num, paren
from rlhub_math.problem import Problem

F = Fraction
_BASES = [2, 3, 5, 7]


def level1(rng: random.Random) -> Problem:
    """An exponent-rule simplification or a logarithm of a power."""
    b = rng.choice(_BASES)
    if rng.random() < 0.5:
        m, n, k = nonzero(rng, -6, 9), nonzero(rng, -6, 9), nonzero(rng, -6, 9)
        e = m + n - k
        q = (
            f"Write $\\frac{{{b}^{{{m}}} \\cdot {b}^{{{n}}}}}{{{b}^{{{k}}}}}$ as ${b}^{{e}}$. "
            "What is $e$?"
        )
        steps = [
            f"Add exponents when multiplying and subtract when dividing: $e = {m} + {paren(n)} - {paren(k)} = {e}$."
        ]
        return Problem(q, str(e), steps, "rational", F(e))
    p, r = rng.randint(1, 3), nonzero(rng, -4, 6)
    value = F(r, p)
    q = f"Evaluate $\\log_{{{b**p}}} \\left({num(F(b) ** r)}\\right)$."
    steps = [
        f"${num(F(b) ** r)} = {b}^{{{r}}}$ and ${b**p} = {b}^{{{p}}}$.",
        f"So the logarithm is $\\frac{{{r}}}{{{p}}} = {num(value)}$.",
    ]
    return Problem(q, num(value), steps, "rational", value)


def level2(rng: random.Random) -> Problem:
    """An exponential equation over a common base, or a logarithmic equation with an extraneous root."""
    if rng.random() < 0.5:
        return _exponential(rng)
    return _logarithmic(rng)


def _exponential(rng: random.Random) -> Problem:
    b = rng.choice([2, 3])
    m1, m2 = rng.sample([1, 2, 3, 4], 2)
    a, d = nonzero(rng, -4, 4), nonzero(rng, -4, 4)
    while m1 * a == m2 * d:
        d = nonzero(rng, -4, 4)
    c, e = rng.randint(-6, 6), rng.randint(-6, 6)
    # m1 (a x + c) = m2 (d x + e)
    x = F(m2 * e - m1 * c, m1 * a - m2 * d)
    q = f"Solve for $x$: ${b**m1}^{{{linear(a, c)}}} = {b**m2}^{{{linear(d, e)}}}$."
    steps = [
        f"Write both sides as powers of ${b}$: ${b}^{{{m1}({linear(a, c)})}} = {b}^{{{m2}({linear(d, e)})}}$.",
        f"Equate exponents: ${linear(m1 * a, m1 * c)} = {linear(m2 * d, m2 * e)}$, so $x = {num(x)}$.",
    ]
    return Problem(q, num(x), steps, "rational", x)


def _logarithmic(rng: random.Random) -> Problem:
    b, k = rng.choice([(2, 3), (2, 4), (2, 5), (3, 2), (3, 3), (5, 2), (2, 6)])
    total = b**k
    u = rng.choice([d for d in range(1, total + 1) if total % d == 0 and d * d < total])
    v = total // u
    x0 = rng.randint(1, 12)
    a, c = u - x0, v - x0
    other = -v - a
    q = f"Solve for $x$: $\\log_{{{b}}}({linear(1, a)}) + \\log_{{{b}}}({linear(1, c)}) = {k}$."
    steps = [
        f"Combine the logarithms: $({linear(1, a)})({linear(1, c)}) = {b}^{{{k}}} = {total}$.",
        f"The quadratic has roots $x = {x0}$ and $x = {other}$.",
        f"At $x = {other}$ the arguments are negative, so the only solution is $x = {x0}$.",
    ]
    return Problem(q, str(x0), steps, "rational", F(x0))
