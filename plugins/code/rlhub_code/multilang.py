"""Code families in many languages: MultiPL-E style functions, and competitive-programming style
programs reading stdin.

* ``code/poly-<family>-v1``: each task draws a language of :data:`~rlhub_code.polyglot.DIALECTS`
  and asks for the family's function in it; the hidden cases are rendered as calls in that
  language (``polyglot.py``), and the printed results are compared on the host.
* ``code/cp-<family>-v1``: the same function as a whole program, APPS / CodeContests style: T
  cases on stdin, one answer per line on stdout. The solution may be in any language the
  registry has: the completion's fence says which (``cpp``, ``rust``, ``haskell``, ...), else
  the task's ``meta.language``.

Expected values are computed here by the family's reference and never enter the sandbox. A
solution over ``MAX_PROGRAM_BYTES`` (64 KiB, Codeforces' limit) is refused unrun: what a compiler
does with 100 KB of nested brackets costs seconds to minutes of CPU.
"""

from __future__ import annotations

import random
from typing import Any

from rlhub import Domain, ExecRequest, Manifest, Task, Verdict, code_of, last_fence
from rlhub_code.families import family
from rlhub_code.polyglot import DIALECTS, harness, parameters, results
from rlhub_code.polyglot_gold import GOLD
from rlhub_code.spec import FuncSpec, expected_values, informative_spec
from rlhub_code.verdicts import (exec_summary, failed_verdict, manifest_limits, oversized_program,
                                 tests_verdict)

SHOWN = 2


def substitution_cost(spec: FuncSpec) -> int:
    """The edit-distance variant's substitution cost (1 or 2), read off its reference."""
    return int(spec.reference()("a", "b")) if spec.entry_point == "edit_distance" else 1


class FamilyDomain(Domain):
    """A family's specs with their expected values; see the module docstring."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.make_spec = family(self.params["family"])
        self.limits = manifest_limits(manifest)

    def spec(self, rng: random.Random) -> tuple[FuncSpec, list[Any]]:
        spec = informative_spec(self.make_spec, rng)
        return spec, expected_values(spec)

    def sandbox_run(self, code: str, language: str, stdin: str = "") -> Any:
        return self.services.sandboxes.run(ExecRequest(
            code=code, language=language, stdin=stdin, limits=self.limits))


class PolyglotDomain(FamilyDomain):
    """Write the family's function in the task's language (MultiPL-E style)."""

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        spec, expected = self.spec(rng)
        dialect = DIALECTS[rng.choice(sorted(self.params.get("languages", DIALECTS)))]
        name, params, ret = parameters(spec.signature)
        examples = "\n".join(f"{dialect.call_expr(name, params, args)}  ->  {want!r}"
                             for args, want in list(zip(spec.cases, expected))[:SHOWN])
        gold = GOLD[name][dialect.language].strip().replace("__SUB__", str(substitution_cost(spec)))
        fence = dialect.language
        prompt = (f"Write a {dialect.title} function with this signature:\n\n    "
                  f"{dialect.signature(name, params, ret)}\n\n{spec.description.strip()}\n\n"
                  f"Examples:\n{examples}\n\nHidden tests call it with other arguments and compare "
                  f"what it returns. {dialect.note} Answer with the code in a single ```{fence} "
                  "block.").replace("  Answer", " Answer")
        return {"prompt": prompt, "answer": None, "gold": f"```{fence}\n{gold}\n```",
                "meta": {"language": dialect.language, "signature": spec.signature,
                         "cases": [list(c) for c in spec.cases],
                         "expected": [str(v) for v in expected],
                         "family": self.params["family"]}}

    def check(self, task: Task, completion: str) -> Verdict:
        dialect = DIALECTS[task.meta["language"]]
        spec = self.services.languages().get(dialect.language)
        code = code_of(completion, (dialect.language, *spec.fences))
        if refused := oversized_program(code):
            return refused
        cases = [tuple(c) for c in task.meta["cases"]]
        program = dialect.program(code, harness(dialect, task.meta["signature"], cases))
        result = self.sandbox_run(program, dialect.language)
        if result.status in ("infra_error", "compile_error"):
            return failed_verdict(f"{result.status}: {result.stderr.strip() or result.detail}",
                                  exec_summary(result))
        got = results(result.stdout, len(cases))
        failures = [None if g == want else _mismatch(i, g, want, result)
                    for i, (g, want) in enumerate(zip(got, task.meta["expected"]))]
        return tests_verdict(failures, exec_summary(result))


def _mismatch(index: int, got: str | None, want: str, result: Any) -> str:
    if got is None:
        tail = result.stderr.strip()[-300:]
        return (f"test {index}: no single result was printed (the program ended with status "
                f"{result.status})" + (f"; stderr: {tail}" if tail else ""))
    return f"test {index}: returned {got}, expected {want}"


# -- competitive programming: the function as a stdin/stdout program ------------------------------

FORMATS = {
    "int": "an integer",
    "list[int]": "a count n followed by n integers",
    "str": "the string's length followed by the string (nothing more when the length is 0)",
}


def render_input(kinds: list[str], cases: list[tuple[Any, ...]]) -> str:
    """T, then each case's arguments as whitespace-separated tokens, one case per line."""
    lines = [str(len(cases))]
    for args in cases:
        tokens: list[str] = []
        for value, kind in zip(args, kinds):
            if kind == "list[int]":
                tokens += [str(len(value)), *map(str, value)]
            elif kind == "str":
                tokens += [str(len(value))] + ([value] if value else [])
            else:
                tokens.append(str(value))
        lines.append(" ".join(tokens))
    return "\n".join(lines) + "\n"


PY_READER = '''
import sys


def main():
    tokens = iter(sys.stdin.read().split())

    def take(kind):
        if kind == "list[int]":
            return [int(next(tokens)) for _ in range(int(next(tokens)))]
        if kind == "str":
            return next(tokens) if int(next(tokens)) else ""
        return int(next(tokens))

    for _ in range(int(next(tokens))):
        print(__ENTRY__(*[take(kind) for kind in __KINDS__]))


main()
'''


class CompetitiveDomain(FamilyDomain):
    """Solve the family's problem as a whole program in any registered language."""

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        spec, expected = self.spec(rng)
        name, params, _ = parameters(spec.signature)
        kinds = [k for _, k in params]
        layout = "; ".join(f"`{p}` as {FORMATS[k]}" for p, k in params)
        shown = render_input(kinds, spec.cases[:SHOWN])
        shown_out = "".join(f"{v}\n" for v in expected[:SHOWN])
        prompt = (f"Solve this problem with a complete program that reads standard input and "
                  f"writes standard output.\n\nFor each test case, compute what `{name}` below "
                  f"returns:\n\n{spec.description.strip()}\n\nInput: the first line holds T, "
                  f"the number of test cases; each following line is one case: {layout}, "
                  f"separated by spaces.\nOutput: one line per case with the answer.\n\nExample "
                  f"input:\n```\n{shown}```\nExample output:\n```\n{shown_out}```\n\nWrite it in "
                  "any language the sandbox runs (`rlhub sandbox info` lists them: C, C++, Go, "
                  "Rust, Java, Haskell, Python, ...). Answer with the program in a single fenced "
                  "block tagged with its language (```cpp, ```rust, ...).")
        gold = (spec.solution + PY_READER.replace("__ENTRY__", name)
                .replace("__KINDS__", repr(kinds)))
        return {"prompt": prompt, "answer": None, "gold": f"```python\n{gold.strip()}\n```",
                "meta": {"language": "python", "stdin": render_input(kinds, spec.cases),
                         "expected": [str(v) for v in expected],
                         "family": self.params["family"]}}

    def check(self, task: Task, completion: str) -> Verdict:
        fence = last_fence(completion)
        language = task.meta["language"]
        if fence and fence[0]:
            found = self.services.languages().by_fence(fence[0])
            if found is None:
                return failed_verdict(f"the fence names {fence[0]!r}, which is no language here; "
                                      f"use one of {self.services.languages().names()}")
            language = found.name
        code = fence[1] if fence else completion
        if refused := oversized_program(code):
            return refused
        result = self.sandbox_run(code, language, task.meta["stdin"])
        if result.status != "ok":
            return failed_verdict(f"{result.status}: {result.stderr.strip()[-600:] or result.detail}",
                                  exec_summary(result))
        got = result.stdout.split()
        failures = [None if i < len(got) and got[i] == want else
                    f"test {i}: expected {want}, got {got[i] if i < len(got) else 'nothing'}"
                    for i, want in enumerate(task.meta["expected"])]
        if len(got) > len(task.meta["expected"]):
            failures.append(f"{len(got) - len(task.meta['expected'])} more answers than cases")
        return tests_verdict(failures, exec_summary(result))


def make_polyglot(manifest: Manifest) -> PolyglotDomain:
    """Factory named by the ``code/poly-*`` manifests."""
    return PolyglotDomain(manifest)


def make_competitive(manifest: Manifest) -> CompetitiveDomain:
    """Factory named by the ``code/cp-*`` manifests."""
    return CompetitiveDomain(manifest)
