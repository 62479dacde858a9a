"""Word problems: shopping and sharing, rates and meeting times, joint work, mixtures and ages."""

from __future__ import annotations

import random
from fractions import Fraction

from rlhub_math.families.common import chain
from rlhub_math.latex import dec, num
from rlhub_math.problem import Problem

F = Fraction
_NAMES = [
    "Ava",
    "Ben",
    "Chen",
    "Dara",
    "Eli",
    "Fatima",
    "Goran",
    "Hana",
    "Ivan",
    "Jin",
    "Kofi",
    "Lena",
]
_ITEMS = ["notebooks", "pens", "apples", "tickets", "stickers", "mugs", "plants", "candles"]


def level1(rng: random.Random) -> Problem:
    """Two-step problems about buying with change, or sharing leftovers equally."""
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    if rng.random() < 0.5:
        count, price = rng.randint(2, 15), F(rng.randint(50, 1500), 100)
        cost = count * price
        paid = (int(cost) // 10 + 1) * 10 + rng.choice([0, 10, 20])
        change = paid - cost
        q = (
            f"{name} buys ${count}$ {item} at ${dec(price)}$ dollars each and pays with ${paid}$ dollars. "
            "How much change, in dollars, does "
            f"{name} get?"
        )
        steps = [
            f"The cost is ${count} \\times {dec(price)} = {dec(cost)}$.",
            f"The change is ${paid} - {dec(cost)} = {dec(change)}$.",
        ]
        return Problem(q, dec(change), steps, "decimal", change)
    friends, each, left = rng.randint(2, 9), rng.randint(3, 40), rng.randint(0, 30)
    total = friends * each + left
    q = (
        f"{name} has ${total}$ {item}, keeps ${left}$, and shares the rest equally among ${friends}$ friends. "
        "How many does each friend get?"
    )
    steps = [
        f"${total} - {left} = {total - left}$ are shared.",
        f"${total - left} \\div {friends} = {each}$.",
    ]
    return Problem(q, str(each), steps, "decimal", F(each))


def level2(rng: random.Random) -> Problem:
    """Meeting times, joint work, mixtures and ages (answers exact, possibly fractional)."""
    kind = rng.randrange(4)
    a, b = rng.sample(_NAMES, 2)
    if kind == 0:
        v1, v2, dist = rng.randint(30, 90), rng.randint(30, 90), rng.randint(50, 600)
        t = F(dist, v1 + v2)
        q = (
            f"Two trains start ${dist}$ km apart and travel towards each other at ${v1}$ km/h and ${v2}$ km/h. "
            "After how many hours do they meet?"
        )
        steps = [
            f"They close the gap at ${v1} + {v2} = {v1 + v2}$ km/h.",
            f"Time $= {chain(f'{dist}/{v1 + v2}', num(t))}$ hours.",
        ]
        return Problem(q, num(t), steps, "rational", t)
    if kind == 1:
        h1, h2 = rng.sample(range(2, 16), 2)
        t = F(h1 * h2, h1 + h2)
        q = (
            f"{a} can paint a fence in ${h1}$ hours and {b} can paint it in ${h2}$ hours. Working together, how "
            "many hours do they take?"
        )
        steps = [
            f"Together they paint $\\frac{{1}}{{{h1}}} + \\frac{{1}}{{{h2}}} = {num(1 / t)}$ of the fence per hour.",
            f"So they take ${num(t)}$ hours.",
        ]
        return Problem(q, num(t), steps, "rational", t)
    if kind == 2:
        p1, p2 = sorted(rng.sample(range(5, 95, 5), 2))
        v1, v2 = rng.randint(1, 20), rng.randint(1, 20)
        pct = F(p1 * v1 + p2 * v2, v1 + v2)
        q = (
            f"${v1}$ litres of a ${p1}\\%$ salt solution are mixed with ${v2}$ litres of a ${p2}\\%$ salt solution. "
            "What is the salt concentration of the mixture, in percent?"
        )
        steps = [
            f"Salt: ${dec(F(p1 * v1, 100))} + {dec(F(p2 * v2, 100))} = {dec(F(p1 * v1 + p2 * v2, 100))}$ litres "
            f"in ${v1 + v2}$ litres.",
            f"Concentration $= {num(pct)}\\%$.",
        ]
        return Problem(q, num(pct), steps, "rational", pct)
    child, k, years = rng.randint(3, 20), rng.randint(2, 5), rng.randint(2, 15)
    parent = k * child
    q = (
        f"{a} is ${k}$ times as old as {b}. In ${years}$ years their ages will add up to "
        f"${parent + child + 2 * years}$. How old is {b} now?"
    )
    steps = [
        f"Let {b} be $x$; then ${k}x + x + {2 * years} = {parent + child + 2 * years}$.",
        f"So ${k + 1}x = {parent + child}$ and $x = {child}$.",
    ]
    return Problem(q, str(child), steps, "integer", child)
