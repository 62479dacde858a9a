"""Plane geometry: areas and perimeters, Pythagoras, angles, circles, distances and Heron's formula."""

from __future__ import annotations

import random
from fractions import Fraction

from rlhub_math.families.common import chain
from rlhub_math.latex import Surd, num
from rlhub_math.problem import Problem

F = Fraction
_TRIPLES = [(3, 4, 5), (5, 12, 13), (8, 15, 17), (7, 24, 25), (20, 21, 29), (9, 40, 41)]


def level1(rng: random.Random) -> Problem:
    """Area or perimeter of a rectangle, area of a triangle or a trapezoid."""
    kind = rng.randrange(4)
    a, b = rng.randint(2, 40), rng.randint(2, 40)
    if kind == 0:
        value, q = (
            F(a * b),
            f"A rectangle is ${a}$ cm by ${b}$ cm. What is its area in square centimetres?",
        )
        steps = [f"Area $= {a} \\times {b} = {a * b}$."]
    elif kind == 1:
        value, q = (
            F(2 * (a + b)),
            f"A rectangle is ${a}$ m by ${b}$ m. What is its perimeter in metres?",
        )
        steps = [f"Perimeter $= 2({a} + {b}) = {2 * (a + b)}$."]
    elif kind == 2:
        value = F(a * b, 2)
        q = f"A triangle has base ${a}$ cm and height ${b}$ cm. What is its area in square centimetres?"
        steps = [f"Area $= \\frac{{1}}{{2}} \\cdot {a} \\cdot {b} = {num(value)}$."]
    else:
        c = rng.randint(2, 40)
        value = F((a + c) * b, 2)
        q = (
            f"A trapezoid has parallel sides ${a}$ cm and ${c}$ cm and height ${b}$ cm. What is its area in "
            "square centimetres?"
        )
        steps = [f"Area $= \\frac{{({a} + {c}) \\cdot {b}}}{{2}} = {num(value)}$."]
    return Problem(q, num(value), steps, "rational", value)


def level2(rng: random.Random) -> Problem:
    """Pythagoras (exact radical lengths) or angle facts for triangles and polygons."""
    kind = rng.randrange(3)
    if kind == 0:
        a, b = rng.randint(1, 15), rng.randint(1, 15)
        hyp = Surd.sqrt(a * a + b * b)
        q = f"A right triangle has legs ${a}$ and ${b}$. What is the length of its hypotenuse?"
        work = chain(f"\\sqrt{{{a}^2 + {b}^2}}", f"\\sqrt{{{a * a + b * b}}}", hyp.latex())
        steps = [f"$c = {work}$."]
        return Problem(q, hyp.latex(), steps, "surd", hyp)
    if kind == 1:
        x, y, z = rng.choice(_TRIPLES)
        k = rng.randint(1, 6)
        leg, hyp = k * rng.choice([x, y]), k * z
        other = Surd.sqrt(hyp * hyp - leg * leg)
        q = f"A right triangle has hypotenuse ${hyp}$ and one leg ${leg}$. How long is the other leg?"
        work = chain(
            f"\\sqrt{{{hyp}^2 - {leg}^2}}", f"\\sqrt{{{hyp * hyp - leg * leg}}}", other.latex()
        )
        steps = [f"${work}$."]
        return Problem(q, other.latex(), steps, "surd", other)
    n = rng.randint(5, 20)
    value = F(180 * (n - 2), n)
    q = f"What is the measure, in degrees, of each interior angle of a regular polygon with ${n}$ sides?"
    steps = [
        f"The interior angles sum to $180({n} - 2) = {180 * (n - 2)}$ degrees.",
        f"Each angle is ${chain(f'{180 * (n - 2)}/{n}', num(value))}$ degrees.",
    ]
    return Problem(q, num(value), steps, "rational", value)


def level3(rng: random.Random) -> Problem:
    """Circles in terms of pi, distance between points, and Heron's formula."""
    kind = rng.randrange(3)
    if kind == 0:
        r = F(rng.randint(1, 30), rng.choice([1, 1, 2]))
        if rng.random() < 0.5:
            coef, what, formula = r * r, "area", f"\\pi r^2 = \\pi \\left({num(r)}\\right)^2"
        else:
            coef, what, formula = 2 * r, "circumference", f"2\\pi r = 2\\pi \\cdot {num(r)}"
        answer = f"{num(coef)}\\pi" if coef != 1 else "\\pi"
        q = f"A circle has radius ${num(r)}$. What is its {what}?"
        return Problem(q, answer, [f"${formula} = {answer}$."], "pi", coef)
    if kind == 1:
        x1, y1, x2, y2 = (rng.randint(-10, 10) for _ in range(4))
        if (x1, y1) == (x2, y2):
            x2 += rng.randint(1, 5)
        d2 = (x2 - x1) ** 2 + (y2 - y1) ** 2
        dist = Surd.sqrt(d2)
        q = f"What is the distance between the points $({x1}, {y1})$ and $({x2}, {y2})$?"
        work = chain(f"\\sqrt{{({x2 - x1})^2 + ({y2 - y1})^2}}", f"\\sqrt{{{d2}}}", dist.latex())
        steps = [f"$d = {work}$."]
        return Problem(q, dist.latex(), steps, "surd", dist)
    while True:
        a, b, c = sorted(rng.randint(3, 20) for _ in range(3))
        if a + b > c:
            break
    s = F(a + b + c, 2)
    product = s * (s - a) * (s - b) * (s - c)
    area = Surd.sqrt(product)
    q = f"A triangle has sides ${a}$, ${b}$ and ${c}$. What is its area?"
    work = chain("\\sqrt{s(s-a)(s-b)(s-c)}", f"\\sqrt{{{num(product)}}}", area.latex())
    steps = [f"The semi-perimeter is $s = {num(s)}$.", f"By Heron's formula the area is ${work}$."]
    return Problem(q, area.latex(), steps, "surd", area)
