"""Task kinds over synthetic repositories.

Every kind starts from a generated repository (the reference) and derives what the model sees
(the repository with a bug, a missing feature or an old name, and the visible tests), the hidden
tests, which tests must go from failing to passing and which must keep passing, and the reference
solution. The expected test values come from running the reference code; which tests a bug
breaks, from running the buggy variant (:mod:`rlhub_swe.synth.loader`).

* ``fix-test``: a bug in one function; the prompt shows a visible test it breaks and its failure.
* ``fix-issue``: the same kind of bug reported as an issue (a call, what it returns, what it
  should); every test it breaks is hidden.
* ``feature``: a function is missing; the prompt gives its signature, docstring and examples.
* ``rename``: a function called from other modules must be renamed, every call site with it.
* ``dont-break``: a function is off by a constant and its callers in other modules compensate;
  the issue asks for the function fixed, and the callers' tests must keep passing, so the
  obvious local fix breaks them unless the compensations go too.
"""

from __future__ import annotations

import ast
import random
import re

from rlhub_swe import mutate
from rlhub_swe.made import Made
from rlhub_swe.synth.loader import RAISED
from rlhub_swe.synth.repo import Function, Level, Repo, build

HIDDEN = "tests/test_hidden.py"
KINDS = ("fix-test", "fix-issue", "feature", "rename", "dont-break")


class NoTask(Exception):
    """This repository offers no task of the kind asked for; build another."""


def test_id(module: str, name: str, k: int) -> str:
    return f"tests/test_{module}.py::test_{name}_{k}"


def hidden_id(name: str) -> str:
    return f"{HIDDEN}::test_{name}_hidden"


def hidden_tests(repo: Repo, expected: dict[str, list[object]], names: list[str],
                 rename: dict[str, str] | None = None) -> str:
    """The hidden file: each function's last (unseen) case, under its new name if renamed."""
    rename = rename or {}
    by_module: dict[str, list[str]] = {}
    for name in names:
        by_module.setdefault(repo.functions[name].module, []).append(name)
    lines = ['"""Hidden tests (added by the grader after the candidate\'s changes)."""']
    lines += [f"from {repo.package}.{m} import {', '.join(rename.get(n, n) for n in ns)}"
              for m, ns in sorted(by_module.items())]
    for name in names:
        args, value = repo.cases[name][-1], expected[name][-1]
        call = f"{rename.get(name, name)}({', '.join(map(repr, args))})"
        lines.append(f"\n\ndef test_{name}_hidden():\n    assert {call} == {value!r}")
    return "\n".join(lines) + "\n"


def visible_tests(repo: Repo, expected: dict[str, list[object]],
                  drop: set[tuple[str, int]] = frozenset(), skip: set[str] = frozenset()
                  ) -> dict[str, str]:
    """The visible test files: every case but each function's last, minus ``drop`` (function,
    case) pairs and the functions in ``skip``."""
    files = {}
    for module in repo.modules:
        funcs = [f for f in repo.in_module(module) if f.name not in skip]
        cases = {f.name: [k for k in range(repo.level.cases) if (f.name, k) not in drop]
                 for f in funcs}
        funcs = [f for f in funcs if cases[f.name]]
        lines = [f'"""Tests of {repo.package}.{module}."""']
        if funcs:
            lines.append(f"from {repo.package}.{module} import "
                         f"{', '.join(f.name for f in funcs)}")
        for func in funcs:
            for k in cases[func.name]:
                call = f"{func.name}({', '.join(map(repr, repo.cases[func.name][k]))})"
                lines.append(f"\n\ndef test_{func.name}_{k}():\n    assert {call} == "
                             f"{expected[func.name][k]!r}")
        files[f"tests/test_{module}.py"] = "\n".join(lines) + "\n"
    return files


def visible_ids(repo: Repo, drop: set[tuple[str, int]] = frozenset(),
                skip: set[str] = frozenset()) -> list[str]:
    return [test_id(f.module, f.name, k) for f in repo.functions.values() if f.name not in skip
            for k in range(repo.level.cases) if (f.name, k) not in drop]


def _changed(before: dict[str, list[object]], after: dict[str, list[object]]
             ) -> set[tuple[str, int]]:
    return {(name, k) for name in before for k, (a, b) in enumerate(zip(before[name], after[name]))
            if a != b}


def _shown(value: object) -> str:
    if isinstance(value, str) and value.startswith(RAISED):
        return f"raises {value[len(RAISED):]}"
    return f"returns {value!r}"


# -- bugs ------------------------------------------------------------------------------------------

def inject_bug(rng: random.Random, repo: Repo, sources: dict[str, str],
               expected: dict[str, list[object]], need_visible: bool
               ) -> tuple[Function, dict[str, str], set[tuple[str, int]], mutate.Edit]:
    """A bug in one function that breaks some tests (a visible one when ``need_visible``)."""
    for func in rng.sample(list(repo.functions.values()), len(repo.functions)):
        path = f"{repo.package}/{func.module}.py"
        for edit in mutate.pick(rng, mutate.sites(sources[path], func.name))[:6]:
            buggy = {**sources, path: edit.apply(sources[path])}
            broken = _changed(expected, repo.expected(buggy))
            visible = {b for b in broken if b[1] < repo.level.cases}
            if broken and (visible or not need_visible):
                return func, buggy, broken, edit
    raise NoTask("no bug of this repository breaks a test")


def fix_task(rng: random.Random, repo: Repo, shown: bool) -> Made:
    sources, expected = repo.sources(), repo.expected()
    func, buggy, broken, edit = inject_bug(rng, repo, sources, expected, need_visible=shown)
    bugged = repo.expected(buggy)
    path = f"{repo.package}/{func.module}.py"
    hidden = {HIDDEN: hidden_tests(repo, expected, list(repo.functions))}
    in_hidden = [hidden_id(n) for n, k in sorted(broken) if k == repo.level.cases]
    if shown:
        dropped: set[tuple[str, int]] = set()
        name, k = sorted(b for b in broken if b[1] < repo.level.cases)[0]
        statement = _failing_test_statement(repo, name, k, expected, bugged)
        f2p = sorted(in_hidden + [test_id(repo.functions[n].module, n, k) for n, k in broken
                                  if k < repo.level.cases])
    else:  # every broken visible case moves to a hidden file of its own
        dropped = {b for b in broken if b[1] < repo.level.cases}
        name, k = sorted(broken)[0]
        statement = _issue_statement(repo, name, k, expected, bugged)
        hidden.update(_moved_cases(repo, expected, broken))
        f2p = sorted(in_hidden + _moved_ids(repo, broken))
    everything = set(visible_ids(repo, drop=dropped)) | {hidden_id(n) for n in repo.functions}
    return Made(statement, {**buggy, **visible_tests(repo, expected, drop=dropped)}, hidden,
                {path: sources[path]}, f2p, sorted(everything - set(f2p)), repo.package,
                {"function": f"{func.module}.{func.name}", "operator": edit.operator,
                 "line": edit.line})


def _moved_cases(repo: Repo, expected: dict[str, list[object]], broken: set[tuple[str, int]]
                 ) -> dict[str, str]:
    visible = sorted(b for b in broken if b[1] < repo.level.cases)
    if not visible:
        return {}
    modules = sorted({repo.functions[n].module for n, _ in visible})
    lines = ['"""Hidden tests: the cases the issue is about."""']
    for module in modules:
        names = sorted({n for n, _ in visible if repo.functions[n].module == module})
        lines.append(f"from {repo.package}.{module} import {', '.join(names)}")
    for name, k in visible:
        call = f"{name}({', '.join(map(repr, repo.cases[name][k]))})"
        lines.append(f"\n\ndef test_{name}_{k}():\n    assert {call} == {expected[name][k]!r}")
    return {"tests/test_hidden_issue.py": "\n".join(lines) + "\n"}


def _moved_ids(repo: Repo, broken: set[tuple[str, int]]) -> list[str]:
    return [f"tests/test_hidden_issue.py::test_{n}_{k}" for n, k in sorted(broken)
            if k < repo.level.cases]


def _failing_test_statement(repo: Repo, name: str, k: int, expected: dict[str, list[object]],
                            bugged: dict[str, list[object]]) -> str:
    func = repo.functions[name]
    call = f"{name}({', '.join(map(repr, repo.cases[name][k]))})"
    return (f"The test `{test_id(func.module, name, k)}` fails:\n\n```python\n"
            f"def test_{name}_{k}():\n    assert {call} == {expected[name][k]!r}\n```\n\n"
            f"`{call}` {_shown(bugged[name][k])}. The tests are right: find the bug in the "
            f"package and fix it, without breaking any other test.")


def _issue_statement(repo: Repo, name: str, k: int, expected: dict[str, list[object]],
                     bugged: dict[str, list[object]]) -> str:
    func = repo.functions[name]
    call = f"{name}({', '.join(map(repr, repo.cases[name][k]))})"
    doc = func.shape.doc.format(**{f"a{i}": p for i, p in enumerate(func.params)})
    return (f"Issue: `{repo.package}.{func.module}.{call}` {_shown(bugged[name][k])}, but it "
            f"should return `{expected[name][k]!r}`.\n\nIts documentation says: \"{doc}\"\n\n"
            "Find the cause (it may be in a function it calls) and fix it without breaking "
            "anything else.")


# -- features, renames, compensated bugs --------------------------------------------------------------

def feature_task(rng: random.Random, repo: Repo) -> Made:
    sources, expected = repo.sources(), repo.expected()
    leaves = [f for f in repo.functions.values() if not repo.callers_of(f.name)]
    func = rng.choice(leaves)
    path = f"{repo.package}/{func.module}.py"
    trimmed = Repo(repo.kind, repo.level, repo.modules, repo.layers,
                   {n: f for n, f in repo.functions.items() if n != func.name}, repo.cases)
    files = {**sources, path: trimmed.module_source(func.module),
             **visible_tests(repo, expected, skip={func.name})}
    f2p = [f"tests/test_feature.py::test_{func.name}_{k}" for k in range(repo.level.cases + 1)]
    others = [n for n in repo.functions if n != func.name]
    hidden = {HIDDEN: hidden_tests(repo, expected, others),
              "tests/test_feature.py": _feature_tests(repo, func, expected)}
    p2p = sorted(set(visible_ids(repo, skip={func.name}))
                 | {hidden_id(n) for n in repo.functions if n != func.name})
    signature = func.source().split("\n", 1)[0].rstrip(":")
    doc = func.shape.doc.format(**{f"a{i}": p for i, p in enumerate(func.params)})
    examples = "\n".join(f"- `{func.name}({', '.join(map(repr, repo.cases[func.name][k]))})` "
                         f"returns `{expected[func.name][k]!r}`" for k in range(2))
    statement = (f"Add a function to `{path}`:\n\n```python\n{signature}\n```\n\n{doc}\n\n"
                 f"Examples:\n{examples}\n\nIt may use the package's other functions.")
    return Made(statement, files, hidden, {path: sources[path]}, f2p, p2p, repo.package,
                {"function": f"{func.module}.{func.name}"})


def _feature_tests(repo: Repo, func: Function, expected: dict[str, list[object]]) -> str:
    lines = [f"from {repo.package}.{func.module} import {func.name}"]
    for k in range(repo.level.cases + 1):
        call = f"{func.name}({', '.join(map(repr, repo.cases[func.name][k]))})"
        lines.append(f"\n\ndef test_{func.name}_{k}():\n    assert {call} == "
                     f"{expected[func.name][k]!r}")
    return "\n".join(lines) + "\n"


def _fresh_name(rng: random.Random, repo: Repo) -> str:
    for _ in range(100):
        name = f"{rng.choice(repo.kind.verbs)}_{rng.choice(repo.kind.nouns)}_{rng.randint(2, 9)}"
        if name not in repo.functions:
            return name
    raise NoTask("no fresh name")


def rename_task(rng: random.Random, repo: Repo) -> Made:
    sources, expected = repo.sources(), repo.expected()
    called = [f for f in repo.functions.values()
              if any(c.module != f.module for c in repo.callers_of(f.name))]
    if not called:
        raise NoTask("no function is called from another module")
    func = max(rng.sample(called, len(called)), key=lambda f: len(repo.callers_of(f.name)))
    new = _fresh_name(rng, repo)
    word = re.compile(rf"\b{re.escape(func.name)}\b")
    solution = {p: word.sub(new, text) for p, text in sources.items() if word.search(text)}
    files = {**sources, **visible_tests(repo, expected, skip={func.name})}
    module = f"{repo.package}.{func.module}"
    gone = (f"\n\ndef test_{func.name}_is_gone():\n    import {module}\n\n"
            f"    assert not hasattr({module}, {func.name!r})\n")
    others = [n for n in repo.functions if n != func.name]
    renamed = hidden_tests(repo, expected, [func.name], {func.name: new}) + gone
    hidden = {HIDDEN: hidden_tests(repo, expected, others), "tests/test_renamed.py": renamed}
    f2p = [f"tests/test_renamed.py::test_{func.name}_hidden",
           f"tests/test_renamed.py::test_{func.name}_is_gone"]
    p2p = sorted(set(visible_ids(repo, skip={func.name})) | {hidden_id(n) for n in others})
    sites = sorted({f"{c.module}.{c.name}" for c in repo.callers_of(func.name)})
    statement = (f"Rename the function `{func.name}` of `{repo.package}/{func.module}.py` to "
                 f"`{new}`, and update every place that uses it (it is called from "
                 f"{len(sites)} function(s) in the package). The old name must not remain.")
    return Made(statement, files, hidden, solution, f2p, p2p, repo.package,
                {"function": f"{func.module}.{func.name}", "new_name": new})


def _call_edits(source: str, name: str, k: int) -> str:
    """``source`` with every call ``name(...)`` replaced by ``(name(...) - k)``."""
    tree = ast.parse(source)
    offsets = mutate._Offsets(source)
    spans = sorted((offsets.span(n) for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Name) and n.func.id == name), reverse=True)
    for start, end in spans:
        source = f"{source[:start]}({source[start:end]} - {k}){source[end:]}"
    return source


def _return_edits(source: str, qualname: str, k: int) -> str:
    tree = ast.parse(source)
    func = mutate.find_function(tree, qualname)
    offsets = mutate._Offsets(source)
    spans = sorted((offsets.span(n.value) for n in ast.walk(func) if isinstance(n, ast.Return)
                    and n.value is not None), reverse=True)  # type: ignore[arg-type]
    for start, end in spans:
        source = f"{source[:start]}({source[start:end]}) + {k}{source[end:]}"
    return source


def dont_break_task(rng: random.Random, repo: Repo) -> Made:
    sources, expected = repo.sources(), repo.expected()
    candidates = [f for f in repo.functions.values() if f.shape.ret == "int"
                  and any(c.module != f.module for c in repo.callers_of(f.name))]
    if not candidates:
        raise NoTask("no int function with callers in other modules")
    func = rng.choice(candidates)
    k = rng.randint(1, 3)
    path = f"{repo.package}/{func.module}.py"
    files = dict(sources)
    files[path] = _return_edits(files[path], func.name, k)
    callers = {f"{repo.package}/{c.module}.py" for c in repo.callers_of(func.name)}
    for caller in callers:
        files[caller] = _call_edits(files[caller], func.name, k)
    bugged = repo.expected(files)
    broken = _changed(expected, bugged)
    if {n for n, _ in broken} != {func.name}:
        raise NoTask("the compensation does not hold")
    case = min(c for n, c in broken)
    statement = _issue_statement(repo, func.name, case, expected, bugged) + \
        "\nOther parts of the package call it: keep them working."
    hidden = {HIDDEN: hidden_tests(repo, expected, list(repo.functions))}
    hidden.update(_moved_cases(repo, expected, broken))
    f2p = sorted(_moved_ids(repo, broken) + [hidden_id(func.name)])
    p2p = sorted(set(visible_ids(repo, drop=broken))
                 | {hidden_id(n) for n in repo.functions if n != func.name})
    solution = {p: sources[p] for p in callers | {path}}
    return Made(statement, {**files, **visible_tests(repo, expected, drop=broken)}, hidden,
                solution, f2p, p2p, repo.package,
                {"function": f"{func.module}.{func.name}", "offset": k,
                 "compensated_in": sorted(callers)})


MAKERS = {"fix-test": lambda rng, repo: fix_task(rng, repo, shown=True),
          "fix-issue": lambda rng, repo: fix_task(rng, repo, shown=False),
          "feature": feature_task, "rename": rename_task, "dont-break": dont_break_task}


def make(rng: random.Random, kind: str, level: Level) -> tuple[Repo, Made]:
    """A task of ``kind`` on a repository of ``level``, drawn from ``rng`` (a repository that
    offers no such task is replaced by the next one the stream gives)."""
    for _ in range(20):
        repo = build(rng, level)
        try:
            return repo, MAKERS[kind](rng, repo)
        except NoTask:
            continue
    raise NoTask(f"no {kind} task in 20 repositories of level {level.name}")
