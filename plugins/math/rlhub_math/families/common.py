"""Small helpers shared by the generators: bounded random choices and step formatting."""

from __future__ import annotations

import random
from fractions import Fraction


def nonzero(rng: random.Random, lo: int, hi: int) -> int:
    """A uniform integer in ``[lo, hi]`` other than 0."""
    while True:
        x = rng.randint(lo, hi)
        if x:
            return x


def fraction(rng: random.Random, max_den: int, max_num: int | None = None) -> Fraction:
    """A positive proper-or-improper fraction with denominator 2..max_den, never an integer."""
    while True:
        den = rng.randint(2, max_den)
        x = Fraction(rng.randint(1, max_num or den * 2), den)
        if x.denominator != 1:
            return x


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``42nd``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def chain(*parts: str) -> str:
    """``a = b = c`` without repeating a part equal to the one before it."""
    out: list[str] = []
    for part in parts:
        if not out or out[-1] != part:
            out.append(part)
    return " = ".join(out)
