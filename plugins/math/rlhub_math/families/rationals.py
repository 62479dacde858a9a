"""Fractions and percentages, computed with :class:`fractions.Fraction` so answers are exact."""

from __future__ import annotations

import random
from fractions import Fraction
from math import lcm

from rlhub_math.families.common import fraction
from rlhub_math.latex import dec, num, paren
from rlhub_math.problem import Problem

F = Fraction


def fractions_level1(rng: random.Random) -> Problem:
    """Add or subtract two fractions with small denominators."""
    x, y = fraction(rng, 12), fraction(rng, 12)
    op = rng.choice("+-")
    value = x + y if op == "+" else x - y
    den = lcm(x.denominator, y.denominator)
    steps = [
        f"Use the common denominator ${den}$: ${num(x)} = \\frac{{{x.numerator * den // x.denominator}}}{{{den}}}$ "
        f"and ${num(y)} = \\frac{{{y.numerator * den // y.denominator}}}{{{den}}}$.",
        f"So ${num(x)} {op} {num(y)} = {num(value)}$ in lowest terms.",
    ]
    return Problem(f"Compute ${num(x)} {op} {num(y)}$.", num(value), steps, "rational", value)


def fractions_level2(rng: random.Random) -> Problem:
    """Multiply or divide signed fractions (and integers)."""
    x = fraction(rng, 15) * rng.choice([1, -1])
    y = fraction(rng, 15) * rng.choice([1, -1])
    if rng.random() < 0.5:
        value, op, step = x * y, "\\times", "Multiply numerators and denominators"
    else:
        value, op, step = x / y, "\\div", f"Dividing by ${num(y)}$ is multiplying by ${num(1 / y)}$"
    steps = [
        f"{step}: ${paren(x)} {op} {paren(y)} = {num(value)}$ after cancelling common factors."
    ]
    return Problem(f"Compute ${paren(x)} {op} {paren(y)}$.", num(value), steps, "rational", value)


def fractions_level3(rng: random.Random) -> Problem:
    """Three fractions with precedence: ``a ± b × c`` or ``(a ± b) ÷ c``."""
    a, b, c = fraction(rng, 9), fraction(rng, 9), fraction(rng, 9)
    op = rng.choice("+-")
    if rng.random() < 0.5:
        inner = b * c
        value = a + inner if op == "+" else a - inner
        expr = f"{num(a)} {op} {num(b)} \\times {num(c)}"
        steps = [
            f"Multiply first: ${num(b)} \\times {num(c)} = {num(inner)}$.",
            f"Then ${num(a)} {op} {num(inner)} = {num(value)}$.",
        ]
    else:
        inner = a + b if op == "+" else a - b
        value = inner / c
        expr = f"\\left({num(a)} {op} {num(b)}\\right) \\div {num(c)}"
        steps = [
            f"Inside the parentheses: ${num(a)} {op} {num(b)} = {num(inner)}$.",
            f"Then ${paren(inner)} \\div {num(c)} = {paren(inner)} \\times {num(1 / c)} = {num(value)}$.",
        ]
    return Problem(f"Compute ${expr}$.", num(value), steps, "rational", value)


def percentages_level1(rng: random.Random) -> Problem:
    """A percent of a number, or what percent one number is of another."""
    pct = rng.choice([5, 10, 12, 15, 20, 25, 30, 35, 40, 45, 50, 60, 75, 80, 120, 150])
    whole = rng.randint(2, 60) * 20
    part = F(pct, 100) * whole
    if rng.random() < 0.5:
        steps = [
            f"${pct}\\%$ of ${whole}$ is $\\frac{{{pct}}}{{100}} \\times {whole} = {dec(part)}$."
        ]
        return Problem(f"What is ${pct}\\%$ of ${whole}$?", dec(part), steps, "decimal", part)
    steps = [f"$\\frac{{{dec(part)}}}{{{whole}}} \\times 100\\% = {pct}\\%$."]
    return Problem(
        f"What percent of ${whole}$ is ${dec(part)}$? Answer with the number of percent.",
        str(pct),
        steps,
        "decimal",
        F(pct),
    )


def percentages_level2(rng: random.Random) -> Problem:
    """Successive percentage changes, or recovering the original amount after a change."""
    up, down = (
        rng.choice([5, 10, 15, 20, 25, 30, 40, 50]),
        rng.choice([5, 10, 15, 20, 25, 30, 40, 50]),
    )
    if rng.random() < 0.5:
        price = rng.randint(4, 80) * 10
        mid = price * F(100 + up, 100)
        final = mid * F(100 - down, 100)
        q = (
            f"A price of ${price}$ dollars is raised by ${up}\\%$ and the new price is then lowered by "
            f"${down}\\%$. What is the final price in dollars?"
        )
        steps = [
            f"After the rise: ${price} \\times {dec(F(100 + up, 100))} = {dec(mid)}$.",
            f"After the cut: ${dec(mid)} \\times {dec(F(100 - down, 100))} = {dec(final)}$.",
        ]
        return Problem(q, dec(final), steps, "decimal", final)
    original = rng.randint(2, 50) * 20
    sale = original * F(100 - down, 100)
    q = (
        f"After a ${down}\\%$ discount an item costs ${dec(sale)}$ dollars. What was the original price "
        "in dollars?"
    )
    steps = [
        f"The sale price is ${100 - down}\\%$ of the original, so the original is "
        f"${dec(sale)} \\div {dec(F(100 - down, 100))} = {original}$."
    ]
    return Problem(q, str(original), steps, "decimal", F(original))
