"""Descriptive statistics of small data sets: mean, median, mode, range, variance, missing values."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

from rlhub_math.latex import num
from rlhub_math.problem import Problem

F = Fraction


def _data(rng: random.Random, n: int) -> list[int]:
    return [rng.randint(0, 60) for _ in range(n)]


def _listing(xs: list[int]) -> str:
    return ", ".join(map(str, xs))


def _median(xs: list[int]) -> Fraction:
    s = sorted(xs)
    mid = len(s) // 2
    return F(s[mid]) if len(s) % 2 else F(s[mid - 1] + s[mid], 2)


def level1(rng: random.Random) -> Problem:
    """Mean, median, range or mode of a short list."""
    xs = _data(rng, rng.randint(5, 10))
    kind = rng.choice(["mean", "median", "range", "mode"])
    if kind == "mode":
        x = rng.choice(xs)
        xs += [x, x]
        rng.shuffle(xs)
    data = f"${_listing(xs)}$"
    if kind == "mean":
        value = F(sum(xs), len(xs))
        steps = [f"The sum is ${sum(xs)}$ over ${len(xs)}$ values, so the mean is ${num(value)}$."]
    elif kind == "median":
        value = _median(xs)
        steps = [f"Sorted: ${_listing(sorted(xs))}$.", f"The median is ${num(value)}$."]
    elif kind == "range":
        value = F(max(xs) - min(xs))
        steps = [f"The range is ${max(xs)} - {min(xs)} = {num(value)}$."]
    else:
        counts = Counter(xs)
        top = max(counts.values())
        modes = [v for v, c in counts.items() if c == top]
        value = F(modes[0]) if len(modes) == 1 else F(-1)
        if value < 0:  # a tie: ask for the smallest mode instead
            value = F(min(modes))
            kind = "smallest mode"
        steps = [
            f"The most frequent value{'s are' if len(modes) > 1 else ' is'} ${_listing(sorted(modes))}$ "
            f"(appearing ${top}$ times)."
        ]
    q = f"Find the {kind} of the data set {data}."
    return Problem(q, num(value), steps, "rational", value)


def level2(rng: random.Random) -> Problem:
    """A missing value for a target mean, the population variance, or a weighted mean."""
    kind = rng.randrange(3)
    if kind == 0:
        xs = _data(rng, rng.randint(4, 8))
        missing = rng.randint(0, 80)
        target = F(sum(xs) + missing, len(xs) + 1)
        q = f"The numbers ${_listing(xs)}$ and one more number $x$ have mean ${num(target)}$. What is $x$?"
        steps = [
            f"The total must be ${len(xs) + 1} \\cdot {num(target)} = {sum(xs) + missing}$.",
            f"So $x = {sum(xs) + missing} - {sum(xs)} = {missing}$.",
        ]
        return Problem(q, str(missing), steps, "rational", F(missing))
    if kind == 1:
        xs = [rng.randint(0, 20) for _ in range(rng.randint(4, 7))]
        mean = F(sum(xs), len(xs))
        var = sum((x - mean) ** 2 for x in xs) / len(xs)
        q = f"Find the population variance of the data set ${_listing(xs)}$."
        steps = [
            f"The mean is ${num(mean)}$.",
            f"The mean of the squared deviations is ${num(var)}$.",
        ]
        return Problem(q, num(var), steps, "rational", var)
    scores = [rng.randint(40, 100) for _ in range(3)]
    weights = [rng.randint(1, 5) for _ in range(3)]
    value = F(sum(s * w for s, w in zip(scores, weights)), sum(weights))
    parts = ", ".join(f"${s}$ with weight ${w}$" for s, w in zip(scores, weights))
    q = f"A student's marks are {parts}. What is the weighted mean mark?"
    top = " + ".join(f"{s} \\cdot {w}" for s, w in zip(scores, weights))
    steps = [f"$\\frac{{{top}}}{{{sum(weights)}}} = {num(value)}$."]
    return Problem(q, num(value), steps, "rational", value)
