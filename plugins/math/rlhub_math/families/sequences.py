"""Arithmetic and geometric sequences and series, and linear recurrences."""

from __future__ import annotations

import random
from fractions import Fraction

from rlhub_math.families.common import nonzero, ordinal
from rlhub_math.latex import num, paren
from rlhub_math.problem import Problem

F = Fraction


def _terms(xs: list[Fraction] | list[int]) -> str:
    return ", ".join(num(x) for x in xs)


def level1(rng: random.Random) -> Problem:
    """The n-th term of an arithmetic sequence given its first terms."""
    a, d = rng.randint(-30, 30), nonzero(rng, -12, 12)
    n = rng.randint(8, 60)
    value = a + (n - 1) * d
    shown = [a + i * d for i in range(4)]
    q = f"The arithmetic sequence ${_terms(shown)}, \\ldots$ continues with the same difference. What is its {ordinal(n)} term?"
    steps = [
        f"The common difference is ${d}$.",
        f"$a_{{{n}}} = {a} + ({n} - 1) \\cdot {paren(d)} = {value}$.",
    ]
    return Problem(q, str(value), steps, "integer", value)


def level2(rng: random.Random) -> Problem:
    """A geometric term with an integer or unit-fraction ratio, or an arithmetic series sum."""
    if rng.random() < 0.5:
        a = nonzero(rng, -9, 9) * rng.choice([1, 2, 3])
        r = rng.choice([F(2), F(3), F(-2), F(1, 2), F(-1, 2), F(1, 3), F(3, 2)])
        n = rng.randint(5, 10)
        value = a * r ** (n - 1)
        shown = [a * r**i for i in range(3)]
        q = f"The geometric sequence ${_terms(shown)}, \\ldots$ continues with the same ratio. What is its {ordinal(n)} term?"
        steps = [
            f"The common ratio is ${num(r)}$.",
            f"$a_{{{n}}} = {a} \\cdot \\left({num(r)}\\right)^{{{n - 1}}} = {num(value)}$.",
        ]
        return Problem(q, num(value), steps, "rational", value)
    a, d, n = rng.randint(-20, 30), nonzero(rng, -9, 9), rng.randint(10, 80)
    last = a + (n - 1) * d
    value = n * (a + last) // 2
    q = f"Find the sum of the first ${n}$ terms of the arithmetic sequence ${_terms([a, a + d, a + 2 * d])}, \\ldots$."
    steps = [
        f"The {ordinal(n)} term is ${a} + {n - 1} \\cdot {paren(d)} = {last}$.",
        f"The sum is $\\frac{{{n}({a} + {paren(last)})}}{{2}} = {value}$.",
    ]
    return Problem(q, str(value), steps, "integer", value)


def level3(rng: random.Random) -> Problem:
    """A second-order linear recurrence, or a finite geometric series with a rational ratio."""
    if rng.random() < 0.5:
        p, q_ = nonzero(rng, -3, 3), nonzero(rng, -3, 3)
        a1, a2 = rng.randint(-5, 5), rng.randint(-5, 5)
        k = rng.randint(6, 10)
        seq = [a1, a2]
        while len(seq) < k:
            seq.append(p * seq[-1] + q_ * seq[-2])
        rule = (
            f"a_n = {p}a_{{n-1}} {'+' if q_ > 0 else '-'} {abs(q_)}a_{{n-2}}".replace(" 1a", " a")
            .replace("= 1a", "= a")
            .replace("= -1a", "= -a")
        )
        q = f"A sequence has $a_1 = {a1}$, $a_2 = {a2}$ and ${rule}$ for $n \\ge 3$. Find $a_{{{k}}}$."
        steps = [f"Compute term by term: ${_terms(seq)}$.", f"So $a_{{{k}}} = {seq[-1]}$."]
        return Problem(q, str(seq[-1]), steps, "integer", seq[-1])
    a = nonzero(rng, -6, 9)
    r = rng.choice([F(1, 2), F(-1, 2), F(1, 3), F(2, 3), F(3, 2), F(-2), F(3)])
    n = rng.randint(4, 9)
    value = a * (1 - r**n) / (1 - r)
    q = (
        f"Find the sum of the first ${n}$ terms of the geometric sequence with first term ${a}$ and "
        f"common ratio ${num(r)}$."
    )
    steps = [
        f"$S_{{{n}}} = {a} \\cdot \\frac{{1 - \\left({num(r)}\\right)^{{{n}}}}}{{1 - {paren(r)}}} = {num(value)}$."
    ]
    return Problem(q, num(value), steps, "rational", value)
