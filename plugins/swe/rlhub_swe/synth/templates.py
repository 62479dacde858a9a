"""Function templates: the shapes synthetic functions take, leaves and callers.

A *leaf* computes on its arguments alone (a clamp, a filter, a text clean-up); a *caller* is
built from functions of lower modules (apply one then another, add two, branch on one, map one
over a list), which is what gives a synthetic package its call graph across modules. Values are
``int``, ``str`` or ``ints`` (``list[int]``). Each template fills its constants from the task's
random stream and says in its docstring what the function does, so a spec or an issue can be
written from it and a reader can tell a bug from the intent.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

ANNOTATION = {"int": "int", "str": "str", "ints": "list[int]"}


@dataclass
class Shape:
    """What a template made: argument types, return type, body (``{a0}``, ``{a1}`` stand for
    the parameters), docstring, and the callees (function names) the body calls."""

    args: tuple[str, ...]
    ret: str
    body: str
    doc: str
    calls: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Callee:
    """A function a caller may use: its name and signature."""

    name: str
    args: tuple[str, ...]
    ret: str


def _leaf(args: tuple[str, ...], ret: str, body: str, doc: str,
          consts: Callable[[random.Random], dict[str, object]]) -> Callable[[random.Random], Shape]:
    def make(rng: random.Random) -> Shape:
        values = consts(rng)
        return Shape(args, ret, body.format(**values, a0="{a0}", a1="{a1}"),
                     doc.format(**values, a0="{a0}", a1="{a1}"))
    return make


def _word(rng: random.Random) -> str:
    return rng.choice("aeiourstln")


LEAVES: list[Callable[[random.Random], Shape]] = [
    _leaf(("int",), "int", "return {k} * {a0} + {b}", "Return {a0} times {k}, plus {b}.",
          lambda r: {"k": r.randint(2, 5), "b": r.randint(-9, 9)}),
    _leaf(("int",), "int", "return max({lo}, min({hi}, {a0}))",
          "Clamp {a0} into the range [{lo}, {hi}].",
          lambda r: {"lo": r.randint(-10, 0), "hi": r.randint(10, 40)}),
    _leaf(("int",), "int", "if {a0} > {t}:\n    return {a0} - {t}\nreturn {t} - {a0}",
          "Return how far {a0} is from {t}.", lambda r: {"t": r.randint(0, 25)}),
    _leaf(("int",), "int", "return {a0} // {d} * {d}",
          "Round {a0} down to a multiple of {d}.", lambda r: {"d": r.randint(2, 7)}),
    _leaf(("int",), "int", "if {a0} < 0:\n    return 0\nreturn {a0} % {m} + {c}",
          "Return 0 for a negative {a0}, else {a0} modulo {m} plus {c}.",
          lambda r: {"m": r.randint(3, 9), "c": r.randint(1, 5)}),
    _leaf(("str",), "str", "return {a0}.strip().lower()",
          "Return {a0} without surrounding blanks, in lower case.", lambda r: {}),
    _leaf(("str",), "str", "return {a0}.replace({x!r}, {y!r})",
          "Return {a0} with every {x!r} replaced by {y!r}.",
          lambda r: {"x": _word(r), "y": r.choice(["_", "-", "", "+"])}),
    _leaf(("str",), "str", "return '-'.join({a0}.split())",
          "Return the words of {a0} joined by dashes.", lambda r: {}),
    _leaf(("str",), "str", "return {a0}[:{n}]", "Return the first {n} characters of {a0}.",
          lambda r: {"n": r.randint(2, 8)}),
    _leaf(("str",), "str", "return ''.join((ch for ch in {a0} if ch.isalnum()))",
          "Return {a0} keeping letters and digits only.", lambda r: {}),
    _leaf(("str",), "int", "return len({a0}.split())", "Return how many words {a0} has.",
          lambda r: {}),
    _leaf(("str",), "int", "return sum((1 for ch in {a0} if ch in {v!r}))",
          "Return how many characters of {a0} are among {v!r}.",
          lambda r: {"v": "".join(r.sample("aeioulnrst", 3))}),
    _leaf(("str",), "int", "if not {a0}:\n    return {d}\nreturn len({a0}) * {k}",
          "Return {d} for an empty {a0}, else its length times {k}.",
          lambda r: {"d": r.randint(-3, 3), "k": r.randint(2, 4)}),
    _leaf(("ints",), "int", "return sum((v for v in {a0} if v > {t}))",
          "Return the sum of the values of {a0} above {t}.", lambda r: {"t": r.randint(-5, 10)}),
    _leaf(("ints",), "int", "if not {a0}:\n    return {d}\nreturn max({a0})",
          "Return the largest value of {a0}, or {d} when it is empty.",
          lambda r: {"d": r.randint(-5, 0)}),
    _leaf(("ints",), "int", "return len([v for v in {a0} if v % {m} == 0])",
          "Return how many values of {a0} are multiples of {m}.",
          lambda r: {"m": r.randint(2, 5)}),
    _leaf(("ints",), "ints", "return sorted({a0})[:{n}]",
          "Return the {n} smallest values of {a0}, in ascending order.",
          lambda r: {"n": r.randint(1, 4)}),
    _leaf(("ints",), "ints", "return [v * {k} for v in {a0}]",
          "Return every value of {a0} multiplied by {k}.", lambda r: {"k": r.randint(2, 4)}),
    _leaf(("ints",), "ints", "return [v for v in {a0} if v >= {t}]",
          "Return the values of {a0} that are at least {t}, in order.",
          lambda r: {"t": r.randint(-3, 8)}),
    _leaf(("ints",), "ints",
          "seen = []\nfor v in {a0}:\n    if v not in seen:\n        seen.append(v)\nreturn seen",
          "Return the values of {a0} without repeats, first occurrences kept in order.",
          lambda r: {}),
    _leaf(("int", "int"), "int", "return {a0} * {k} + {a1}", "Return {a0} times {k}, plus {a1}.",
          lambda r: {"k": r.randint(2, 4)}),
    _leaf(("int", "int"), "int",
          "if {a0} > {a1}:\n    return {a0} - {a1}\nreturn ({a1} - {a0}) * {k}",
          "Return {a0} minus {a1} when {a0} is larger, else {k} times the difference.",
          lambda r: {"k": r.randint(2, 3)}),
]


# -- callers -------------------------------------------------------------------------------------

def _args(n: int) -> str:
    return ", ".join(f"{{a{i}}}" for i in range(n))


def _chain(rng: random.Random, pool: list[Callee]) -> Shape | None:
    pairs = [(f, g) for f in pool for g in pool
             if g.args == (f.ret,) and f.name != g.name]
    if not pairs:
        return None
    f, g = rng.choice(pairs)
    return Shape(f.args, g.ret, f"return {g.name}({f.name}({_args(len(f.args))}))",
                 f"Apply {f.name} to the input, then {g.name} to its result.", [f.name, g.name])


def _add(rng: random.Random, pool: list[Callee]) -> Shape | None:
    pairs = [(f, g) for f in pool for g in pool
             if f.ret == g.ret == "int" and f.args == g.args and f.name < g.name]
    if not pairs:
        return None
    f, g = rng.choice(pairs)
    k = rng.randint(1, 3)
    args = _args(len(f.args))
    return Shape(f.args, "int", f"return {f.name}({args}) + {k} * {g.name}({args})",
                 f"Return {f.name} of the input plus {k} times {g.name} of it.", [f.name, g.name])


def _branch(rng: random.Random, pool: list[Callee]) -> Shape | None:
    firsts = [f for f in pool if f.ret == "int"]
    thens = [g for g in pool if g.args == ("int",) and g.ret == "int"]
    if not firsts or not thens:
        return None
    f, g = rng.choice(firsts), rng.choice(thens)
    t = rng.randint(0, 20)
    body = (f"value = {f.name}({_args(len(f.args))})\nif value > {t}:\n"
            f"    return {g.name}(value)\nreturn value")
    return Shape(f.args, "int", body, f"Return {f.name} of the input, passed through {g.name} "
                 f"when it exceeds {t}.", [f.name, g.name])


def _map(rng: random.Random, pool: list[Callee]) -> Shape | None:
    fs = [f for f in pool if f.args == ("int",) and f.ret == "int"]
    if not fs:
        return None
    f = rng.choice(fs)
    if rng.random() < 0.5:
        return Shape(("ints",), "ints", f"return [{f.name}(v) for v in {{a0}}]",
                     f"Return {f.name} applied to every value of the list.", [f.name])
    return Shape(("ints",), "int", f"return sum(({f.name}(v) for v in {{a0}}))",
                 f"Return the sum of {f.name} over the values of the list.", [f.name])


def _label(rng: random.Random, pool: list[Callee]) -> Shape | None:
    fs = [f for f in pool if f.args == ("str",) and f.ret == "str"]
    gs = [g for g in pool if g.args == ("str",) and g.ret == "int"]
    if not fs or not gs:
        return None
    f, g = rng.choice(fs), rng.choice(gs)
    sep = rng.choice([":", "/", "#", "="])
    return Shape(("str",), "str", f"return {f.name}({{a0}}) + {sep!r} + str({g.name}({{a0}}))",
                 f"Return {f.name} of the text, {sep!r}, then {g.name} of the text.",
                 [f.name, g.name])


def _best(rng: random.Random, pool: list[Callee]) -> Shape | None:
    pairs = [(f, g) for f in pool for g in pool
             if f.ret == g.ret == "int" and f.args == g.args and f.name != g.name]
    if not pairs:
        return None
    f, g = rng.choice(pairs)
    args = _args(len(f.args))
    pick = rng.choice(["max", "min"])
    return Shape(f.args, "int", f"return {pick}({f.name}({args}), {g.name}({args}))",
                 f"Return the {'larger' if pick == 'max' else 'smaller'} of {f.name} and "
                 f"{g.name} of the input.", [f.name, g.name])


CALLERS = [_chain, _add, _branch, _map, _label, _best]


def make_caller(rng: random.Random, pool: list[Callee]) -> Shape | None:
    """A caller over ``pool``, trying the templates in a random order (None if none fits)."""
    for template in rng.sample(CALLERS, len(CALLERS)):
        shape = template(rng, pool)
        if shape is not None:
            return shape
    return None
