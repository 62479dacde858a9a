"""Near-miss wrong answers for a problem: the hard negatives a math reward must reject.

Used by the plugin's tests (every gold must pass and every near miss must fail under math-verify)
and useful for probing a reward model. Each negative differs from the gold answer in one place:
a value off by one, a root dropped or changed, tuple entries swapped, an inequality loosened.
"""

from __future__ import annotations

from fractions import Fraction

from rlhub_math.latex import Surd, dec, matrix, num, roots, tup
from rlhub_math.problem import Problem

_LOOSER = {"<": "\\le", ">": "\\ge", "\\le": "<", "\\ge": ">"}


def _scalar(x: object, form: str) -> str:
    if isinstance(x, Surd):
        return x.latex()
    return dec(Fraction(x)) if form == "decimal" else num(Fraction(x))  # type: ignore[arg-type]


def _bump(x: object) -> object:
    return x + 1 if isinstance(x, Surd) else Fraction(x) + 1  # type: ignore[operator,arg-type]


def near_misses(problem: Problem) -> list[str]:
    """LaTeX answers close to, but different from, the problem's gold answer."""
    v, form = problem.value, problem.form
    if form == "roots":
        xs = list(v)
        out = [roots([_bump(xs[0]), *xs[1:]])]
        if len(xs) > 1:
            out.append(roots(xs[1:]))
        return out
    if form == "tuple":
        out = [tup([Fraction(v[0]) + 1, *v[1:]])]
        if v[0] != v[1]:
            out.append(tup([v[1], v[0], *v[2:]]))
        return out
    if form == "matrix":
        return [matrix([[v[0][0] + 1, v[0][1]], v[1]])]
    if form == "inequality":
        rel, bound = v
        return [f"x {_LOOSER[rel]} {num(bound)}", f"x {rel} {num(bound + 1)}"]
    if form == "pi":
        return [f"{num(Fraction(v) + 1)}\\pi", num(Fraction(v))]
    return [_scalar(_bump(v), form)]
