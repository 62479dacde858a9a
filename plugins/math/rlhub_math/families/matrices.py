"""Matrices: determinants by cofactor expansion and products of small integer matrices."""

from __future__ import annotations

import random

from rlhub_math.latex import matrix, paren
from rlhub_math.problem import Problem


def _random(rng: random.Random, n: int, bound: int) -> list[list[int]]:
    return [[rng.randint(-bound, bound) for _ in range(n)] for _ in range(n)]


def _det(m: list[list[int]]) -> int:
    if len(m) == 1:
        return m[0][0]
    return sum(
        (-1) ** j * m[0][j] * _det([row[:j] + row[j + 1 :] for row in m[1:]]) for j in range(len(m))
    )


def level1(rng: random.Random) -> Problem:
    """The determinant of a 2 by 2 matrix."""
    m = _random(rng, 2, 12)
    (a, b), (c, d) = m
    value = _det(m)
    q = f"Compute the determinant of ${matrix(m)}$."
    steps = [f"$ad - bc = {a} \\cdot {paren(d)} - {paren(b)} \\cdot {paren(c)} = {value}$."]
    return Problem(q, str(value), steps, "integer", value)


def level2(rng: random.Random) -> Problem:
    """The determinant of a 3 by 3 matrix, or the product of two 2 by 2 matrices."""
    if rng.random() < 0.5:
        m = _random(rng, 3, 6)
        value = _det(m)
        minors = [_det([row[:j] + row[j + 1 :] for row in m[1:]]) for j in range(3)]
        expansion = " - ".join(
            [
                f"{paren(m[0][0])} \\cdot {paren(minors[0])}",
                f"{paren(m[0][1])} \\cdot {paren(minors[1])}",
            ]
        )
        q = f"Compute the determinant of ${matrix(m)}$."
        steps = [
            f"Expand along the first row; the minors are ${minors[0]}$, ${minors[1]}$, ${minors[2]}$.",
            f"$\\det = {expansion} + {paren(m[0][2])} \\cdot {paren(minors[2])} = {value}$.",
        ]
        return Problem(q, str(value), steps, "integer", value)
    a, b = _random(rng, 2, 9), _random(rng, 2, 9)
    product = [[sum(a[i][k] * b[k][j] for k in range(2)) for j in range(2)] for i in range(2)]
    q = f"Compute the matrix product $AB$ for $A = {matrix(a)}$ and $B = {matrix(b)}$."
    steps = [f"Each entry is a row of $A$ times a column of $B$, giving ${matrix(product)}$."]
    return Problem(q, matrix(product), steps, "matrix", product)
