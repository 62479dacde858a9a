"""Bug injection, the way SWE-smith makes tasks: one small edit inside one function.

Each operator finds *sites* in a function's AST and turns one into a text edit at its exact
source position, so the rest of the file (comments, formatting) is untouched and the fix is a
one-hunk diff. Operators:

* ``swap_operator``: ``+`` and ``-``, ``*`` and ``//``, ``and`` and ``or``;
* ``off_by_one``: a comparison loosened or tightened (``<`` and ``<=``, ``>`` and ``>=``,
  ``==`` and ``!=``), or an integer constant moved by one;
* ``drop_branch``: an ``if`` without ``else`` removed (its body never runs);
* ``swap_arguments``: the first two positional arguments of a call exchanged;
* ``wrong_default``: a parameter's constant default changed;
* ``negate``: a ``not`` removed, or a condition negated.

:func:`sites` lists every candidate edit of a function; whether one is a *task* (it breaks
tests that the original passes) is decided by running the tests, not here.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass

_SWAPS = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"),
          ast.FloorDiv: ("//", "*")}
_CMP = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
        ast.Eq: ("==", "!="), ast.NotEq: ("!=", "==")}
OPERATORS = ("swap_operator", "off_by_one", "drop_branch", "swap_arguments", "wrong_default",
             "negate")


@dataclass(frozen=True)
class Edit:
    """Replace ``source[start:end]`` with ``text``; ``operator`` and ``line`` say what and where."""

    start: int
    end: int
    text: str
    operator: str
    line: int

    def apply(self, source: str) -> str:
        return source[: self.start] + self.text + source[self.end:]


class _Offsets:
    """Character offsets of (line, column) positions of one source text."""

    def __init__(self, source: str):
        self.source = source
        self.starts = [0]
        for line in source.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def of(self, line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets
        text = self.source[self.starts[line - 1]: self.starts[line]]
        return self.starts[line - 1] + len(text.encode()[:col].decode(errors="ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.of(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                self.of(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]


def find_function(tree: ast.Module, qualname: str) -> ast.FunctionDef | None:
    """The (async) function ``name`` or ``Class.name`` at the top of ``tree``."""
    parts = qualname.split(".")
    nodes: list[ast.stmt] = tree.body
    for part in parts[:-1]:
        cls = next((n for n in nodes if isinstance(n, ast.ClassDef) and n.name == part), None)
        if cls is None:
            return None
        nodes = cls.body
    return next((n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == parts[-1]), None)


def functions(source: str) -> list[str]:
    """Qualified names of the top-level functions and methods of classes in ``source``."""
    tree = ast.parse(source)
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef):
            names += [f"{node.name}.{n.name}" for n in node.body
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return names


def _between(offsets: _Offsets, left: ast.AST, right: ast.AST, token: str,
             replacement: str, operator: str) -> Edit | None:
    """The edit replacing ``token`` in the gap between two nodes (an operator's text)."""
    start, end = offsets.span(left)[1], offsets.span(right)[0]
    gap = offsets.source[start:end]
    at = gap.find(token)
    if at < 0 or "#" in gap:
        return None
    return Edit(start + at, start + at + len(token), replacement, operator,
                left.end_lineno or 0)  # type: ignore[attr-defined]


def _operator_sites(offsets: _Offsets, func: ast.AST) -> list[Edit]:
    edits: list[Edit | None] = []
    for node in ast.walk(func):
        if isinstance(node, ast.BinOp) and type(node.op) in _SWAPS:
            old, new = _SWAPS[type(node.op)]
            edits.append(_between(offsets, node.left, node.right, old, new, "swap_operator"))
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            edits.append(_between(offsets, node.values[0], node.values[1], old, new,
                                  "swap_operator"))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
            old, new = _CMP[type(node.ops[0])]
            edits.append(_between(offsets, node.left, node.comparators[0], old, new,
                                  "off_by_one"))
    return [e for e in edits if e is not None]


def _constant_sites(offsets: _Offsets, func: ast.FunctionDef) -> list[Edit]:
    edits = []
    defaults = {id(d) for d in func.args.defaults + func.args.kw_defaults if d is not None}
    for node in ast.walk(func):
        if isinstance(node, ast.Constant) and type(node.value) is int and id(node) not in defaults:
            start, end = offsets.span(node)
            if offsets.source[start:end].isdigit():
                edits.append(Edit(start, end, str(node.value + 1), "off_by_one", node.lineno))
    for node in func.args.defaults + [d for d in func.args.kw_defaults if d is not None]:
        if isinstance(node, ast.Constant) and type(node.value) in (int, bool) \
                or isinstance(node, ast.Constant) and node.value is None:
            start, end = offsets.span(node)
            value = node.value
            new = {True: "False", False: "True", None: "0"}.get(value) if type(value) is not int \
                else str(value + 1)
            edits.append(Edit(start, end, str(new), "wrong_default", node.lineno))
    return edits


def _branch_sites(offsets: _Offsets, func: ast.FunctionDef) -> list[Edit]:
    edits = []
    for node in ast.walk(func):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or node is not func and not isinstance(
                node, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            continue
        for index, stmt in enumerate(body):
            if isinstance(stmt, ast.If) and not stmt.orelse and index < len(body) - 1:
                start = offsets.starts[stmt.lineno - 1]
                end = offsets.starts[stmt.end_lineno]  # type: ignore[index]
                edits.append(Edit(start, end, "", "drop_branch", stmt.lineno))
    return edits


def _call_and_negation_sites(offsets: _Offsets, func: ast.AST) -> list[Edit]:
    edits = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and len(node.args) >= 2 and not any(
                isinstance(a, ast.Starred) for a in node.args[:2]):
            a, b = (offsets.source[slice(*offsets.span(n))] for n in node.args[:2])
            if a != b and "\n" not in a + b:
                start, end = offsets.span(node.args[0])[0], offsets.span(node.args[1])[1]
                gap = offsets.source[offsets.span(node.args[0])[1]:offsets.span(node.args[1])[0]]
                edits.append(Edit(start, end, b + gap + a, "swap_arguments", node.lineno))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            start, end = offsets.span(node)
            inner = offsets.source[slice(*offsets.span(node.operand))]
            edits.append(Edit(start, end, inner, "negate", node.lineno))
    return edits


def sites(source: str, qualname: str) -> list[Edit]:
    """Every candidate bug of function ``qualname`` in ``source``, in source order, each one
    whose result still parses."""
    tree = ast.parse(source)
    func = find_function(tree, qualname)
    if func is None:
        return []
    offsets = _Offsets(source)
    body_start = func.body[0]
    if isinstance(body_start, ast.Expr) and isinstance(body_start.value, ast.Constant):
        func_body: list[ast.stmt] = func.body[1:]  # leave the docstring alone
    else:
        func_body = func.body
    found = (_operator_sites(offsets, func) + _constant_sites(offsets, func)
             + _branch_sites(offsets, func) + _call_and_negation_sites(offsets, func))
    lo = offsets.starts[func_body[0].lineno - 1] if func_body else 0
    found = [e for e in found if e.start >= lo or e.operator == "wrong_default"]
    return sorted((e for e in found if _parses(e.apply(source))), key=lambda e: e.start)


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def pick(rng: random.Random, edits: list[Edit]) -> list[Edit]:
    """``edits`` in a random order that spreads over operators (one of each kind first)."""
    by_kind: dict[str, list[Edit]] = {}
    for edit in rng.sample(edits, len(edits)):
        by_kind.setdefault(edit.operator, []).append(edit)
    order = []
    while any(by_kind.values()):
        for kind in rng.sample(sorted(by_kind), len(by_kind)):
            if by_kind[kind]:
                order.append(by_kind[kind].pop())
    return order
