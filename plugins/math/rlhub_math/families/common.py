"""Small helpers shared by the generators: bounded random choices and exact formatting shortcuts."""

from __future__ import annotations

import random
from fractions import Fraction

from rlhub_math.latex import num


def nonzero(rng: random.Random, lo: int, hi: int) -> int:
    """A uniform integer in ``[lo, hi]`` other than 0."""
    while True:
        x = rng.randint(lo, hi)
        if x:
            return x


def distinct(rng: random.Random, lo: int, hi: int, k: int) -> list[int]:
    """``k`` distinct integers from ``[lo, hi]`` in random order."""
    return rng.sample(range(lo, hi + 1), k)


def fraction(rng: random.Random, max_den: int, max_num: int | None = None) -> Fraction:
    """A positive proper-or-improper fraction with denominator 2..max_den, never an integer."""
    while True:
        den = rng.randint(2, max_den)
        x = Fraction(rng.randint(1, max_num or den * 2), den)
        if x.denominator != 1:
            return x


def eq(lhs: str, value: Fraction | int) -> str:
    """A worked-step line ``$lhs = value$``."""
    return f"${lhs} = {num(value)}$."


def choose(rng: random.Random, options: dict[str, object]) -> str:
    """A random key of ``options`` (keeps sub-kind choice in one place, deterministic order)."""
    return rng.choice(sorted(options))
