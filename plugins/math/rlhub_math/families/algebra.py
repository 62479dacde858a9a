"""Linear equations, systems of linear equations (Cramer's rule) and linear inequalities."""

from __future__ import annotations

import random
from fractions import Fraction

from rlhub_math.families.common import nonzero
from rlhub_math.latex import linear, num, paren, poly, signed, tup
from rlhub_math.problem import Problem

F = Fraction


def _move(b: int) -> str:
    """The step that removes the constant ``b`` from the left-hand side."""
    if b == 0:
        return "The constant term is already zero"
    return f"Subtract ${b}$ from both sides" if b > 0 else f"Add ${-b}$ to both sides"


def linear_level1(rng: random.Random) -> Problem:
    """``a x + b = c`` with an integer solution."""
    a, x, b = nonzero(rng, -12, 12), rng.randint(-15, 15), rng.randint(-40, 40)
    c = a * x + b
    steps = [f"{_move(b)}: ${num(a)}x = {c - b}$.", f"Divide by ${a}$: $x = {x}$."]
    return Problem(f"Solve for $x$: ${linear(a, b)} = {c}$.", str(x), steps, "rational", F(x))


def linear_level2(rng: random.Random) -> Problem:
    """``a x + b = c x + d`` with an integer solution."""
    a, c = rng.sample([i for i in range(-12, 13) if i], 2)
    x, b = rng.randint(-15, 15), rng.randint(-30, 30)
    d = a * x + b - c * x
    steps = [
        f"Collect $x$ on the left: $({a} - {paren(c)})x = {d} - {paren(b)}$, so ${a - c}x = {d - b}$.",
        f"Divide by ${a - c}$: $x = {x}$.",
    ]
    return Problem(
        f"Solve for $x$: ${linear(a, b)} = {linear(c, d)}$.", str(x), steps, "rational", F(x)
    )


def linear_level3(rng: random.Random) -> Problem:
    r"""``\frac{x + p}{m} + \frac{x + q}{n} = r`` with a rational solution."""
    m, n = rng.sample(range(2, 10), 2)
    p, q, r = nonzero(rng, -9, 9), nonzero(rng, -9, 9), nonzero(rng, -6, 6)
    # n(x + p) + m(x + q) = m n r  ->  (m + n) x = m n r - n p - m q
    x = F(m * n * r - n * p - m * q, m + n)
    q_text = (
        f"Solve for $x$: $\\frac{{{linear(1, p)}}}{{{m}}} + \\frac{{{linear(1, q)}}}{{{n}}} = {r}$."
    )
    steps = [
        f"Multiply both sides by ${m * n}$: ${n}({linear(1, p)}) + {m}({linear(1, q)}) = {m * n * r}$.",
        f"Expand: ${m + n}x{signed(n * p + m * q)} = {m * n * r}$.",
        f"So $x = \\frac{{{m * n * r - n * p - m * q}}}{{{m + n}}}$, that is $x = {num(x)}$.",
    ]
    return Problem(q_text, num(x), steps, "rational", x)


def _det2(a: int, b: int, c: int, d: int) -> int:
    return a * d - b * c


def _det3(m: list[list[int]]) -> int:
    (a, b, c), (d, e, f), (g, h, i) = m
    return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)


def _equation(coeffs: list[int], names: str, rhs: int) -> str:
    terms = [(c, v) for c, v in zip(coeffs, names) if c]
    text = ""
    for i, (c, v) in enumerate(terms):
        mag = "" if abs(c) == 1 else str(abs(c))
        text += (("-" if c < 0 else "") if i == 0 else (" - " if c < 0 else " + ")) + mag + v
    return f"{text} = {rhs}"


def systems_level1(rng: random.Random) -> Problem:
    """Two equations in ``x, y`` with an integer solution."""
    while True:
        a, b, c, d = (rng.randint(-9, 9) for _ in range(4))
        det = _det2(a, b, c, d)
        if det and a and b and c and d:
            break
    x, y = rng.randint(-10, 10), rng.randint(-10, 10)
    e, f = a * x + b * y, c * x + d * y
    q = (
        f"Solve the system of equations: ${_equation([a, b], 'xy', e)}$ and ${_equation([c, d], 'xy', f)}$. "
        "Give the answer as $(x, y)$."
    )
    steps = [
        f"The determinant is ${a} \\cdot {paren(d)} - {paren(b)} \\cdot {paren(c)} = {det}$.",
        f"By Cramer's rule $x = \\frac{{{_det2(e, b, f, d)}}}{{{det}}} = {x}$ and "
        f"$y = \\frac{{{_det2(a, e, c, f)}}}{{{det}}} = {y}$.",
    ]
    return Problem(q, tup([x, y]), steps, "tuple", (x, y))


def systems_level2(rng: random.Random) -> Problem:
    """Three equations in ``x, y, z`` with an integer solution."""
    while True:
        m = [[rng.randint(-5, 5) for _ in range(3)] for _ in range(3)]
        det = _det3(m)
        if det and all(any(row) for row in m):
            break
    sol = [rng.randint(-6, 6) for _ in range(3)]
    rhs = [sum(c * s for c, s in zip(row, sol)) for row in m]
    eqs = ", ".join(f"${_equation(row, 'xyz', r)}$" for row, r in zip(m, rhs))
    q = f"Solve the system of equations {eqs}. Give the answer as $(x, y, z)$."
    dets = []
    for k in range(3):
        mk = [row[:k] + [r] + row[k + 1 :] for row, r in zip(m, rhs)]
        dets.append(_det3(mk))
    steps = [
        f"The coefficient determinant is $D = {det}$.",
        f"Replacing each column by the right-hand side gives $D_x = {dets[0]}$, $D_y = {dets[1]}$, "
        f"$D_z = {dets[2]}$.",
        f"So $x = {sol[0]}$, $y = {sol[1]}$, $z = {sol[2]}$.",
    ]
    return Problem(q, tup(sol), steps, "tuple", tuple(sol))


_REL = {"<": ">", ">": "<", "\\le": "\\ge", "\\ge": "\\le"}


def inequalities_level1(rng: random.Random) -> Problem:
    """``a x + b REL c``, flipping the relation when dividing by a negative ``a``."""
    a, b, c = nonzero(rng, -9, 9), rng.randint(-20, 20), rng.randint(-20, 20)
    rel = rng.choice(sorted(_REL))
    bound = F(c - b, a)
    final = rel if a > 0 else _REL[rel]
    flip = "" if a > 0 else " (the inequality flips because we divide by a negative number)"
    steps = [
        f"{_move(b)}: ${num(a)}x {rel} {c - b}$.",
        f"Divide by ${a}${flip}: $x {final} {num(bound)}$.",
    ]
    answer = f"x {final} {num(bound)}"
    return Problem(
        f"Solve the inequality ${linear(a, b)} {rel} {c}$.",
        answer,
        steps,
        "inequality",
        (final, bound),
    )


def inequalities_level2(rng: random.Random) -> Problem:
    """Count the integers satisfying a quadratic or absolute-value inequality."""
    if rng.random() < 0.5:
        r1, r2 = sorted(rng.sample(range(-12, 13), 2))
        strict = rng.random() < 0.5
        count = r2 - r1 - 1 if strict else r2 - r1 + 1
        rel = "<" if strict else "\\le"
        q = f"How many integers $x$ satisfy ${poly([1, -(r1 + r2), r1 * r2])} {rel} 0$?"
        steps = [
            f"The quadratic factors as $(x{signed(-r1)})(x{signed(-r2)})$ with roots ${r1}$ and ${r2}$.",
            f"It is {'negative' if strict else 'at most zero'} for ${r1} {rel} x {rel} {r2}$, "
            f"which contains ${count}$ integers.",
        ]
        return Problem(q, str(count), steps, "integer", count)
    centre, radius = rng.randint(-20, 20), rng.randint(1, 15)
    strict = rng.random() < 0.5
    count = 2 * radius - 1 if strict else 2 * radius + 1
    rel = "<" if strict else "\\le"
    q = f"How many integers $x$ satisfy $|{linear(1, -centre)}| {rel} {radius}$?"
    steps = [
        f"This means ${centre - radius} {rel} x {rel} {centre + radius}$.",
        f"That interval contains ${count}$ integers.",
    ]
    return Problem(q, str(count), steps, "integer", count)
