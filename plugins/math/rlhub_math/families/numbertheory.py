"""Number theory: gcd and lcm, modular arithmetic, base conversion, divisors, inverses, primes."""

from __future__ import annotations

import random
from math import gcd, lcm

from rlhub_math.problem import Problem


def _digits(n: int, base: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, base)
        out = str(r) + out
    return out or "0"


def _primes_upto(n: int) -> list[int]:
    return [p for p in range(2, n + 1) if all(p % d for d in range(2, int(p**0.5) + 1))]


def _factorise(n: int) -> dict[int, int]:
    out: dict[int, int] = {}
    d = 2
    while d * d <= n:
        while n % d == 0:
            out[d] = out.get(d, 0) + 1
            n //= d
        d += 1
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


def _factor_text(n: int) -> str:
    return " \\cdot ".join(
        f"{p}^{{{e}}}" if e > 1 else str(p) for p, e in sorted(_factorise(n).items())
    )


def level1(rng: random.Random) -> Problem:
    """The gcd or lcm of two numbers that share a factor."""
    g = rng.randint(2, 30)
    a, b = g * rng.randint(2, 20), g * rng.randint(2, 20)
    if a == b:
        b += g
    if rng.random() < 0.5:
        value, what = gcd(a, b), "greatest common divisor"
    else:
        value, what = lcm(a, b), "least common multiple"
    steps = [
        f"${a} = {_factor_text(a)}$ and ${b} = {_factor_text(b)}$.",
        f"Taking the {'lowest' if what.startswith('greatest') else 'highest'} power of each prime gives ${value}$.",
    ]
    return Problem(f"Find the {what} of ${a}$ and ${b}$.", str(value), steps, "integer", value)


def level2(rng: random.Random) -> Problem:
    """A power modulo ``m``, or a conversion between base ten and a base from 2 to 9."""
    kind = rng.randrange(3)
    if kind == 0:
        a, e, m = rng.randint(2, 30), rng.randint(10, 200), rng.randint(3, 23)
        value = pow(a, e, m)
        steps = [
            f"Reduce the base: ${a} \\equiv {a % m} \\pmod{{{m}}}$, then use repeated squaring.",
            f"${a}^{{{e}}} \\equiv {value} \\pmod{{{m}}}$.",
        ]
        q = f"What is the remainder when ${a}^{{{e}}}$ is divided by ${m}$?"
        return Problem(q, str(value), steps, "integer", value)
    base, n = rng.randint(2, 9), rng.randint(20, 2000)
    digits = _digits(n, base)
    if kind == 1:
        q = (
            f"Write the base-ten number ${n}$ in base ${base}$. Give just the digits, for example "
            "$\\boxed{1011}$."
        )
        steps = [
            f"Repeated division by ${base}$ gives the remainders, read from last to first: ${digits}$."
        ]
        return Problem(q, digits, steps, "integer", int(digits))
    q = f"The number ${digits}_{{{base}}}$ is written in base ${base}$. What is it in base ten?"
    power_terms = " + ".join(
        f"{d} \\cdot {base}^{{{len(digits) - 1 - i}}}" for i, d in enumerate(digits)
    )
    steps = [f"${digits}_{{{base}}} = {power_terms} = {n}$."]
    return Problem(q, str(n), steps, "integer", n)


def level3(rng: random.Random) -> Problem:
    """Modular inverses, linear congruences, divisor counts and prime counts."""
    kind = rng.randrange(4)
    if kind == 0:
        m = rng.choice(_primes_upto(97)[4:])
        a = rng.randint(2, m - 1)
        value = pow(a, -1, m)
        q = f"Find the integer $x$ with $0 \\le x < {m}$ such that ${a}x \\equiv 1 \\pmod{{{m}}}$."
        steps = [
            f"By the extended Euclidean algorithm, ${a} \\cdot {value} = {a * value} \\equiv 1 \\pmod{{{m}}}$."
        ]
        return Problem(q, str(value), steps, "integer", value)
    if kind == 1:
        m = rng.randint(7, 60)
        a = rng.choice([x for x in range(2, m) if gcd(x, m) == 1])
        x0 = rng.randint(1, m - 1)
        b = a * x0 % m
        q = f"Find the smallest positive integer $x$ with ${a}x \\equiv {b} \\pmod{{{m}}}$."
        inv = pow(a, -1, m)
        steps = [
            f"The inverse of ${a}$ modulo ${m}$ is ${inv}$.",
            f"So $x \\equiv {inv} \\cdot {b} \\equiv {x0} \\pmod{{{m}}}$.",
        ]
        return Problem(q, str(x0), steps, "integer", x0)
    if kind == 2:
        n = rng.choice([2, 3, 4, 6, 8, 9, 10, 12, 18]) * rng.randint(5, 60)
        count = 1
        for e in _factorise(n).values():
            count *= e + 1
        q = f"How many positive divisors does ${n}$ have?"
        exps = " \\cdot ".join(f"({e} + 1)" for e in _factorise(n).values())
        steps = [f"${n} = {_factor_text(n)}$.", f"The number of divisors is ${exps} = {count}$."]
        return Problem(q, str(count), steps, "integer", count)
    lo, hi = sorted(rng.sample(range(2, 300), 2))
    primes = [p for p in _primes_upto(hi) if p >= lo]
    q = f"How many prime numbers $p$ satisfy ${lo} \\le p \\le {hi}$?"
    listed = (
        ", ".join(map(str, primes))
        if len(primes) <= 12
        else f"{primes[0]}, {primes[1]}, \\ldots, {primes[-1]}"
    )
    steps = [f"The primes in the range are ${listed}$.", f"There are ${len(primes)}$ of them."]
    return Problem(q, str(len(primes)), steps, "integer", len(primes))
