"""Function specs: what a Python synthesis family produces, and how it becomes a task.

A family turns a seeded ``random.Random`` into a :class:`FuncSpec`: the function's name and
signature, a description, a reference solution and the argument tuples to test it on. This module
runs the reference on those arguments (our own code, in this process) and renders the prompt, the
hidden test code for the ``python-tests`` verifier and the gold completion.

Each test is one top-level ``assert same(candidate(...), EXPECTED)`` in ``check(candidate)``, so
the harness counts them one by one; ``same`` compares types as well as values (``True`` is not
``1``, ``2.0`` is not ``2``) and says what was returned when it fails.
"""

from __future__ import annotations

import copy
import random
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SHOWN_EXAMPLES = 2
MIN_DISTINCT = 3

SAME_HELPER = '''\
def _eq(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_eq(a[k], b[k]) for k in a)
    return a == b


def same(got, expected):
    if not _eq(got, expected):
        raise AssertionError(f"returned {got!r}, expected {expected!r}")
    return True
'''


@dataclass(frozen=True)
class FuncSpec:
    """One function to write: name, signature, description, reference solution, test inputs."""

    entry_point: str
    signature: str
    description: str
    solution: str
    cases: list[tuple[Any, ...]]

    def reference(self) -> Any:
        """The reference function, compiled from :attr:`solution`."""
        namespace: dict[str, Any] = {}
        exec(compile(self.solution, f"<reference {self.entry_point}>", "exec"), namespace)
        return namespace[self.entry_point]


def call_repr(entry_point: str, args: tuple[Any, ...]) -> str:
    """``name(arg1, arg2)`` with each argument as a Python literal."""
    return f"{entry_point}({', '.join(repr(a) for a in args)})"


def expected_values(spec: FuncSpec) -> list[Any]:
    """The reference's result on every case (arguments are copied, so mutation cannot leak)."""
    fn = spec.reference()
    return [fn(*copy.deepcopy(args)) for args in spec.cases]


def render_tests(spec: FuncSpec, expected: list[Any]) -> str:
    """The hidden test code: the ``same`` helper and ``check(candidate)``, one assert per case."""
    lines = [SAME_HELPER, "", "def check(candidate):"]
    for args, want in zip(spec.cases, expected):
        lines.append(f"    assert same({call_repr('candidate', args)}, {want!r})")
    return "\n".join(lines) + "\n"


def render_examples(spec: FuncSpec, expected: list[Any], n: int = SHOWN_EXAMPLES) -> str:
    """Doctest-style examples from the first ``n`` cases."""
    return "\n".join(f">>> {call_repr(spec.entry_point, args)}\n{want!r}"
                     for args, want in list(zip(spec.cases, expected))[:n])


def render_prompt(spec: FuncSpec, expected: list[Any]) -> str:
    """The task statement: signature, description, examples and the answer format."""
    return (
        f"Write a Python function with this signature:\n\n    {spec.signature}\n\n"
        f"{textwrap.dedent(spec.description).strip()}\n\n"
        f"Examples:\n{render_examples(spec, expected)}\n\n"
        "Hidden unit tests will call the function with other inputs and compare its return value "
        "exactly (types included). Use only the standard library. Answer with the complete "
        "function in a single ```python code block."
    )


def fenced(code: str) -> str:
    """``code`` as a completion: one python fence."""
    return f"```python\n{code.strip()}\n```"


def informative_spec(make_spec: Callable[[random.Random], FuncSpec], rng: random.Random,
                     tries: int = 20) -> FuncSpec:
    """A spec whose tests expect at least ``MIN_DISTINCT`` different results, so that no
    constant function passes them; redrawn from ``rng`` otherwise."""
    for _ in range(tries):
        spec = make_spec(rng)
        if len({repr(v) for v in expected_values(spec)}) >= MIN_DISTINCT:
            return spec
    raise RuntimeError(f"no spec with {MIN_DISTINCT} distinct expected results in {tries} tries")


def spec_task(spec: FuncSpec, family: str) -> dict[str, Any]:
    """The task dict (prompt, answer, gold, meta) that :class:`rlhub.Domain.generate` returns."""
    expected = expected_values(spec)
    tests = render_tests(spec, expected)
    return {
        "prompt": render_prompt(spec, expected),
        "answer": None,
        "gold": fenced(spec.solution),
        "meta": {"tests": tests, "entry_point": spec.entry_point, "language": "python",
                 "family": family, "n_tests": len(spec.cases)},
    }
