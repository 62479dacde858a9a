r"""Integer arithmetic: two-operand facts, order of operations, exact division and powers."""

from __future__ import annotations

import random

from rlhub_math.families.common import nonzero
from rlhub_math.latex import paren
from rlhub_math.problem import Problem

_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "\\times": lambda a, b: a * b}


def _compute(expr: str, steps: list[str], value: int) -> Problem:
    return Problem(f"Compute ${expr}$.", str(value), steps, "integer", value)


def level1(rng: random.Random) -> Problem:
    """``a op b`` with two- or three-digit operands."""
    op = rng.choice(sorted(_OPS))
    a, b = (
        (rng.randint(10, 99), rng.randint(10, 99))
        if op == "\\times"
        else (rng.randint(100, 999), rng.randint(10, 999))
    )
    value = _OPS[op](a, b)
    return _compute(f"{a} {op} {b}", [f"${a} {op} {b} = {value}$."], value)


def level2(rng: random.Random) -> Problem:
    """Three or four signed operands where precedence and parentheses matter."""
    a, b, c, d = (nonzero(rng, -20, 20) for _ in range(4))
    shape = rng.randrange(3)
    if shape == 0:
        expr, first, value = f"{a} + {paren(b)} \\times {paren(c)}", b * c, a + b * c
        steps = [
            f"Multiply first: ${paren(b)} \\times {paren(c)} = {first}$.",
            f"Then ${a} + {paren(first)} = {value}$.",
        ]
    elif shape == 1:
        expr, first, value = f"({a} - {paren(b)}) \\times {paren(c)}", a - b, (a - b) * c
        steps = [
            f"Parentheses first: ${a} - {paren(b)} = {first}$.",
            f"Then ${paren(first)} \\times {paren(c)} = {value}$.",
        ]
    else:
        p, q = a * b, c * d
        expr, value = f"{paren(a)} \\times {paren(b)} - {paren(c)} \\times {paren(d)}", p - q
        steps = [f"The products are ${p}$ and ${q}$.", f"So ${p} - {paren(q)} = {value}$."]
    return _compute(expr, steps, value)


def level3(rng: random.Random) -> Problem:
    """Exact division, powers and nested parentheses in one expression."""
    d, k = rng.randint(2, 12), nonzero(rng, -15, 15)
    a, b = rng.randint(2, 15), rng.randint(2, 15)
    c = a * b - d * k
    base, power = rng.randint(2, 6), rng.choice([2, 3])
    m = nonzero(rng, -9, 9)
    pw = base**power
    value = k + m * pw
    expr = f"({a} \\times {b} - {paren(c)}) \\div {d} + {paren(m)} \\times {base}^{{{power}}}"
    steps = [
        f"Inside the parentheses: ${a} \\times {b} - {paren(c)} = {a * b - c}$, and ${a * b - c} \\div {d} = {k}$.",
        f"Next ${base}^{{{power}}} = {pw}$, so ${paren(m)} \\times {pw} = {m * pw}$.",
        f"Finally ${k} + {paren(m * pw)} = {value}$.",
    ]
    return _compute(expr, steps, value)
