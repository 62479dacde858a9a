"""Unit conversion with exact factors (metric prefixes, time, area, speed, inches, temperature)."""

from __future__ import annotations

import random
from fractions import Fraction

from rlhub_math.latex import dec, num
from rlhub_math.problem import Problem

F = Fraction
# Units of one quantity, each with its size in the quantity's base unit.
_METRIC: dict[str, dict[str, Fraction]] = {
    "length": {"km": F(1000), "m": F(1), "cm": F(1, 100), "mm": F(1, 1000)},
    "mass": {"kg": F(1000), "g": F(1), "mg": F(1, 1000)},
    "volume": {"L": F(1), "mL": F(1, 1000)},
    "time": {"h": F(3600), "min": F(60), "s": F(1)},
}
_COMPOUND = [
    ("km/h", "m/s", F(1000, 3600)),
    ("m/s", "km/h", F(3600, 1000)),
    ("m^2", "cm^2", F(10_000)),
    ("cm^2", "m^2", F(1, 10_000)),
    ("km^2", "m^2", F(10**6)),
    ("in", "cm", F(254, 100)),
    ("ft", "cm", F(12 * 254, 100)),
    ("L", "cm^3", F(1000)),
]


def _amount(rng: random.Random) -> Fraction:
    """A measurement with at most two decimal places."""
    return F(rng.randint(1, 99_999), rng.choice([1, 10, 100]))


def _unit(name: str) -> str:
    return f"\\text{{{name}}}" if "^" not in name else f"\\text{{{name[:-2]}}}^{name[-1]}"


def level1(rng: random.Random) -> Problem:
    """Convert between units of one metric quantity (or of time), answer as an exact decimal."""
    quantity = rng.choice(sorted(_METRIC))
    src, dst = rng.sample(sorted(_METRIC[quantity]), 2)
    factor = _METRIC[quantity][src] / _METRIC[quantity][dst]
    amount = _amount(rng) if quantity != "time" else F(rng.randint(1, 500))
    while not _terminates(amount * factor):  # only time conversions can repeat (1 s = 1/60 min)
        amount += 1
    value = amount * factor
    factor_text = dec(factor) if _terminates(factor) else num(factor)
    q = f"Convert ${dec(amount)}\\ {_unit(src)}$ to {dst}."
    steps = [
        f"$1\\ {_unit(src)} = {factor_text}\\ {_unit(dst)}$.",
        f"So ${dec(amount)}\\ {_unit(src)} = {dec(value)}\\ {_unit(dst)}$.",
    ]
    return Problem(q, dec(value), steps, "decimal", value)


def _terminates(x: Fraction) -> bool:
    d = x.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def level2(rng: random.Random) -> Problem:
    """Compound or non-metric units with exact factors, or a temperature conversion."""
    if rng.random() < 0.2:
        f = rng.randint(-40, 250)
        c = F(f - 32) * F(5, 9)
        q = f"Convert ${f}$ degrees Fahrenheit to degrees Celsius."
        steps = [f"$C = \\frac{{5}}{{9}}(F - 32) = \\frac{{5}}{{9}} \\cdot {f - 32} = {num(c)}$."]
        return Problem(q, num(c), steps, "rational", c)
    src, dst, factor = rng.choice(_COMPOUND)
    amount = F(rng.randint(1, 400)) if src in ("km/h", "m/s") else _amount(rng)
    value = amount * factor
    shown = dec(value) if _terminates(value) else num(value)
    q = f"Convert ${dec(amount)}\\ {_unit(src)}$ to ${_unit(dst)}$."
    factor_text = dec(factor) if _terminates(factor) else num(factor)
    steps = [
        f"$1\\ {_unit(src)} = {factor_text}\\ {_unit(dst)}$.",
        f"So ${dec(amount)}\\ {_unit(src)} = {dec(amount)} \\times {factor_text} = {shown}\\ {_unit(dst)}$.",
    ]
    return Problem(q, shown, steps, "decimal" if _terminates(value) else "rational", value)
