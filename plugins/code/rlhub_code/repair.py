"""Code repair: fix a buggy Python function, given the program and a failing test's output.

A task takes a function spec from a random synthesis family and plants one bug in its reference
solution by an AST mutation (a flipped comparison, a swapped arithmetic operator, an off-by-one
constant, ``min`` for ``max``). The mutant must fail at least one of the spec's tests; the prompt
shows it with the first failure, and the hidden tests are the spec's full suite, judged by
``python-tests``. Mutants run here, at generation, under a line-event budget, so a mutation that
loops forever is simply rejected.
"""

from __future__ import annotations

import ast
import copy
import random
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

from rlhub import Domain, Manifest
from rlhub_code.families import FAMILIES
from rlhub_code.spec import (FuncSpec, call_repr, expected_values, fenced, informative_spec,
                             spec_task)

LINE_BUDGET = 200_000
SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq, ast.Add: ast.Sub, ast.Sub: ast.Add, ast.FloorDiv: ast.Mod,
    ast.Mod: ast.FloorDiv,
}
NAME_SWAPS = {"min": "max", "max": "min"}


class BudgetExceeded(Exception):
    """The mutant ran more lines than :data:`LINE_BUDGET`."""


def mutation_sites(tree: ast.AST) -> list[tuple[int, str]]:
    """``(node index, kind)`` for every place one mutation can be planted."""
    sites = []
    for i, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Compare) and type(node.ops[0]) in SWAPS:
            sites.append((i, "compare"))
        elif isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
            sites.append((i, "binop"))
        elif isinstance(node, ast.Constant) and type(node.value) is int and 0 <= node.value <= 100:
            sites.append((i, "constant"))
        elif isinstance(node, ast.Name) and node.id in NAME_SWAPS:
            sites.append((i, "name"))
    return sites


def mutate(source: str, site: tuple[int, str], rng: random.Random) -> str:
    """``source`` with the mutation at ``site`` applied."""
    tree = ast.parse(source)
    node = list(ast.walk(tree))[site[0]]
    if site[1] == "compare":
        node.ops[0] = SWAPS[type(node.ops[0])]()
    elif site[1] == "binop":
        node.op = SWAPS[type(node.op)]()
    elif site[1] == "constant":
        node.value += rng.choice([-1, 1])
    else:
        node.id = NAME_SWAPS[node.id]
    return ast.unparse(tree) + "\n"


def run_bounded(spec: FuncSpec, args: tuple[Any, ...]) -> Any:
    """Call the spec's function on ``args`` with at most :data:`LINE_BUDGET` line events."""
    left = [LINE_BUDGET]

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        left[0] -= 1
        if left[0] < 0:
            raise BudgetExceeded(f"more than {LINE_BUDGET} lines")
        return tracer

    fn = spec.reference()
    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        return fn(*copy.deepcopy(args))
    finally:
        sys.settrace(previous)


def first_failure(spec: FuncSpec, buggy: FuncSpec, expected: list[Any]) -> str | None:
    """The harness-style message of the mutant's first failing test, or None if all pass."""
    for args, want in zip(spec.cases, expected):
        test = f"assert same({call_repr('candidate', args)}, {want!r})"
        try:
            got = run_bounded(buggy, args)
        except BudgetExceeded:
            return f"{test}: TimeoutError: the candidate did not answer in time"
        except Exception as exc:  # noqa: BLE001 - the mutant's exception is the failure shown
            return f"{test}: {type(exc).__name__}: {str(exc)[:300]}"
        if repr(got) != repr(want) or type(got) is not type(want):
            return f"{test}: AssertionError: returned {got!r}, expected {want!r}"
    return None


def candidate_bugs(spec: FuncSpec, rng: random.Random) -> Iterator[tuple[str, str]]:
    """``(buggy source, failure message)`` for mutants that fail a test, in random order."""
    expected = expected_values(spec)
    sites = mutation_sites(ast.parse(spec.solution))
    rng.shuffle(sites)
    for site in sites:
        source = mutate(spec.solution, site, rng)
        try:
            compile(source, "<mutant>", "exec")
        except SyntaxError:
            continue
        buggy = FuncSpec(spec.entry_point, spec.signature, "", source, [])
        message = first_failure(spec, buggy, expected)
        if message and "TimeoutError" not in message:
            yield source, message


class RepairDomain(Domain):
    """Fix the planted bug; see the module docstring."""

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        for _ in range(20):
            name = rng.choice(sorted(FAMILIES))
            spec = informative_spec(FAMILIES[name], rng)
            bug = next(candidate_bugs(spec, rng), None)
            if bug is not None:
                break
        else:
            raise RuntimeError("no family yielded a failing mutant in 20 tries")
        task = spec_task(spec, name)
        buggy, failure = bug
        task["prompt"] = (
            f"This Python function should satisfy the specification below, but it has a bug.\n\n"
            f"Specification of `{spec.signature}`:\n{textwrap.dedent(spec.description).strip()}\n\n"
            f"Buggy program:\n{fenced(buggy)}\n\nA failing test:\n```\n{failure}\n```\n\n"
            "Fix the bug. Hidden unit tests (the failing one and others) compare the return value "
            "exactly, types included. Answer with the complete corrected function in a single "
            "```python code block.")
        task["meta"].update({"task": "repair", "buggy": buggy, "failure": failure})
        return task


def make(manifest: Manifest) -> RepairDomain:
    """Factory named by the ``code/py-repair`` manifest."""
    return RepairDomain(manifest)
