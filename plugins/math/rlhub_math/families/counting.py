"""Combinatorics and probability: counting arrangements and selections, exact probabilities."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from math import comb, factorial, perm

from rlhub_math.latex import num
from rlhub_math.problem import Problem

F = Fraction
_COLOURS = ["red", "blue", "green", "yellow", "white", "black"]


def combinatorics_level1(rng: random.Random) -> Problem:
    """A plain selection (combinations) or ordered selection (permutations)."""
    n = rng.randint(5, 30)
    k = rng.randint(2, min(6, n - 1))
    if rng.random() < 0.5:
        value = comb(n, k)
        q = f"In how many ways can a committee of ${k}$ people be chosen from ${n}$ people?"
        steps = [f"Order does not matter: $\\binom{{{n}}}{{{k}}} = {value}$."]
    else:
        value = perm(n, k)
        q = (
            f"In a race with ${n}$ runners, in how many ways can the first ${k}$ places be awarded "
            "(no ties)?"
        )
        steps = [f"Order matters: ${n}!/{n - k}! = {value}$."]
    return Problem(q, str(value), steps, "integer", value)


def combinatorics_level2(rng: random.Random) -> Problem:
    """Arrangements of letters with repeats, or committees with a composition constraint."""
    if rng.random() < 0.5:
        letters = rng.sample("ABCDEFGHKLMNPRST", rng.randint(3, 5))
        word = "".join(ch * rng.randint(2 if i == 0 else 1, 3) for i, ch in enumerate(letters))
        word = "".join(rng.sample(word, len(word)))
        counts = Counter(word)
        value = factorial(len(word))
        for c in counts.values():
            value //= factorial(c)
        denom = " \\cdot ".join(f"{c}!" for _, c in sorted(counts.items()))
        q = f"How many distinct arrangements of the letters of the string {word} are there?"
        repeats = ", ".join(f"{ch} ${c}$ times" for ch, c in sorted(counts.items()))
        steps = [
            f"There are ${len(word)}$ letters: {repeats}.",
            f"So the count is $\\frac{{{len(word)}!}}{{{denom}}} = {value}$.",
        ]
        return Problem(q, str(value), steps, "integer", value)
    women, men = rng.randint(3, 10), rng.randint(3, 10)
    kw, km = rng.randint(1, min(4, women)), rng.randint(1, min(4, men))
    value = comb(women, kw) * comb(men, km)
    q = (
        f"A club has ${women}$ women and ${men}$ men. In how many ways can a committee of exactly "
        f"${kw}$ {'woman' if kw == 1 else 'women'} and ${km}$ {'man' if km == 1 else 'men'} be formed?"
    )
    steps = [
        f"Choose the women and the men independently: $\\binom{{{women}}}{{{kw}}} \\cdot "
        f"\\binom{{{men}}}{{{km}}} = {comb(women, kw)} \\cdot {comb(men, km)} = {value}$."
    ]
    return Problem(q, str(value), steps, "integer", value)


def _derangements(n: int) -> int:
    d = [1, 0]
    for i in range(2, n + 1):
        d.append((i - 1) * (d[-1] + d[-2]))
    return d[n]


def combinatorics_level3(rng: random.Random) -> Problem:
    """Stars and bars, inclusion-exclusion, derangements, lattice paths."""
    kind = rng.randrange(4)
    if kind == 0:
        n, k = rng.randint(5, 20), rng.randint(2, 5)
        value = comb(n + k - 1, k - 1)
        q = (
            f"How many solutions in non-negative integers does ${' + '.join(f'x_{i}' for i in range(1, k + 1))} "
            f"= {n}$ have?"
        )
        steps = [f"By stars and bars the count is $\\binom{{{n} + {k - 1}}}{{{k - 1}}} = {value}$."]
    elif kind == 1:
        n = rng.randint(50, 1000)
        a, b = rng.sample([2, 3, 5, 7, 11, 13], 2)
        value = n // a + n // b - n // (a * b)
        q = f"How many integers from $1$ to ${n}$ are divisible by ${a}$ or by ${b}$?"
        steps = [
            f"Inclusion-exclusion: $\\lfloor {n}/{a} \\rfloor + \\lfloor {n}/{b} \\rfloor - "
            f"\\lfloor {n}/{a * b} \\rfloor = {n // a} + {n // b} - {n // (a * b)} = {value}$."
        ]
    elif kind == 2:
        n = rng.randint(4, 9)
        value = _derangements(n)
        q = (
            f"${n}$ letters are put into ${n}$ addressed envelopes, one per envelope. In how many ways can "
            "this be done so that no letter is in its own envelope?"
        )
        steps = [
            "This counts derangements: $D_n = (n - 1)(D_{n-1} + D_{n-2})$ with $D_1 = 0$, $D_2 = 1$.",
            f"So $D_{{{n}}} = {value}$.",
        ]
    else:
        r, c = rng.randint(2, 9), rng.randint(2, 9)
        value = comb(r + c, r)
        q = (
            f"On a grid, how many shortest paths go from $(0, 0)$ to $({c}, {r})$ moving only one unit right "
            "or up at a time?"
        )
        steps = [
            f"Choose which ${r}$ of the ${r + c}$ moves go up: $\\binom{{{r + c}}}{{{r}}} = {value}$."
        ]
    return Problem(q, str(value), steps, "integer", value)


def probability_level1(rng: random.Random) -> Problem:
    """One draw from a bag of coloured balls, or one roll of a fair die."""
    if rng.random() < 0.5:
        colours = rng.sample(_COLOURS, 3)
        counts = [rng.randint(1, 12) for _ in colours]
        target = rng.randrange(3)
        value = F(counts[target], sum(counts))
        bag = ", ".join(f"{n} {c}" for n, c in zip(counts, colours))
        q = f"A bag holds {bag} balls. One ball is drawn at random. What is the probability that it is {colours[target]}?"
        steps = [
            f"There are ${sum(counts)}$ balls, ${counts[target]}$ of them {colours[target]}.",
            f"The probability is ${num(value)}$.",
        ]
        return Problem(q, num(value), steps, "rational", value)
    sides = rng.choice([6, 8, 10, 12, 20])
    k = rng.randint(1, sides - 1)
    value = F(sides - k, sides)
    q = f"A fair ${sides}$-sided die numbered $1$ to ${sides}$ is rolled. What is the probability of rolling more than ${k}$?"
    steps = [
        f"The faces ${k + 1}$ to ${sides}$ exceed ${k}$: ${sides - k}$ of ${sides}$, so the probability is ${num(value)}$."
    ]
    return Problem(q, num(value), steps, "rational", value)


def probability_level2(rng: random.Random) -> Problem:
    """A condition on the sum of two dice, or two draws without replacement."""
    if rng.random() < 0.5:
        sides = rng.choice([4, 6, 8])
        s = rng.randint(3, 2 * sides - 1)
        rel, test = rng.choice(
            [
                ("equal to", lambda t: t == s),
                ("at least", lambda t: t >= s),
                ("at most", lambda t: t <= s),
            ]
        )
        ways = sum(1 for a in range(1, sides + 1) for b in range(1, sides + 1) if test(a + b))
        value = F(ways, sides * sides)
        q = (
            f"Two fair ${sides}$-sided dice numbered $1$ to ${sides}$ are rolled. What is the probability "
            f"that the sum is {rel} ${s}$?"
        )
        steps = [
            f"${ways}$ of the ${sides * sides}$ equally likely outcomes have a sum {rel} ${s}$, so the "
            f"probability is ${num(value)}$."
        ]
        return Problem(q, num(value), steps, "rational", value)
    red, blue = rng.randint(2, 15), rng.randint(2, 15)
    total = red + blue
    event = rng.choice(["both red", "both blue", "one of each colour"])
    if event == "one of each colour":
        value = 2 * F(red * blue, total * (total - 1))
        calc = f"2 \\cdot \\frac{{{red}}}{{{total}}} \\cdot \\frac{{{blue}}}{{{total - 1}}}"
    else:
        k = red if event == "both red" else blue
        value = F(k * (k - 1), total * (total - 1))
        calc = f"\\frac{{{k}}}{{{total}}} \\cdot \\frac{{{k - 1}}}{{{total - 1}}}"
    q = (
        f"A box has ${red}$ red and ${blue}$ blue marbles. Two marbles are drawn without replacement. "
        f"What is the probability of drawing {event}?"
    )
    steps = [f"${calc} = {num(value)}$."]
    return Problem(q, num(value), steps, "rational", value)


def probability_level3(rng: random.Random) -> Problem:
    """Binomial probabilities, or Bayes' rule for a diagnostic test."""
    if rng.random() < 0.5:
        n = rng.randint(3, 8)
        k = rng.randint(0, n)
        p = rng.choice([F(1, 2), F(1, 3), F(2, 3), F(1, 4), F(3, 4), F(1, 5), F(2, 5)])
        value = comb(n, k) * p**k * (1 - p) ** (n - k)
        q = (
            f"A biased coin shows heads with probability ${num(p)}$. It is tossed ${n}$ times. What is the "
            f"probability of exactly ${k}$ heads?"
        )
        steps = [
            f"$\\binom{{{n}}}{{{k}}} \\left({num(p)}\\right)^{{{k}}} \\left({num(1 - p)}\\right)^{{{n - k}}} = {num(value)}$."
        ]
        return Problem(q, num(value), steps, "rational", value)
    prior = F(rng.randint(1, 20), 100)
    sens, fpr = F(rng.randint(80, 99), 100), F(rng.randint(1, 15), 100)
    evidence = prior * sens + (1 - prior) * fpr
    value = prior * sens / evidence
    q = (
        f"A condition affects ${num(prior * 100)}\\%$ of a population. A test detects it in ${num(sens * 100)}\\%$ "
        f"of people who have it and wrongly flags ${num(fpr * 100)}\\%$ of people who do not. A person tests "
        "positive. What is the probability that they have the condition?"
    )
    steps = [
        f"$P(+) = {num(prior)} \\cdot {num(sens)} + {num(1 - prior)} \\cdot {num(fpr)} = {num(evidence)}$.",
        f"By Bayes' rule the probability is $\\frac{{{num(prior * sens)}}}{{{num(evidence)}}} = {num(value)}$.",
    ]
    return Problem(q, num(value), steps, "rational", value)
