"""Tasks over a prepared real project (:mod:`rlhub_swe.real.prepare`).

A task is one of the project's validated bugs, chosen by the task's random stream within its
split (even-numbered bugs train, odd ones test, when there are two or more). ``fix-test`` shows a
failing test of the project's own suite and its failure; ``fix-issue`` describes the bug as a
report and hides every test file holding a fail-to-pass test (they come back at grading).
"""

from __future__ import annotations

import ast
import functools
import random
from typing import TYPE_CHECKING, Any

from rlhub_swe.guard import code_problem
from rlhub_swe.made import Made
from rlhub_swe.real.prepare import load, prepare, prepared
from rlhub_swe.real.projects import Project

if TYPE_CHECKING:
    from rlhub import Services

MAX_SHOWN = 60_000


@functools.lru_cache(maxsize=16)
def _fair_pool(project: Project) -> tuple[dict[str, str], list[dict[str, Any]]]:
    files, pool = load(project)
    return files, [t for t in pool if fair(project, files, t)]


def project_tasks(project: Project, services: Services
                  ) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The project's files and its bugs whose reference fix the guard accepts (prepared first
    if need be; read and checked once per process)."""
    if not prepared(project):
        prepare(project, services.workspaces)
    return _fair_pool(project)


def _test_source(files: dict[str, str], test: str) -> str:
    path, _, name = test.partition("::")
    name = name.split("[")[0].split("::")[-1]
    try:
        tree = ast.parse(files[path])
    except (SyntaxError, KeyError):
        return ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return ast.get_source_segment(files[path], node) or ""
    return ""


def fair(project: Project, files: dict[str, str], task: dict[str, Any]) -> bool:
    """Whether the reference fix passes the guard (a bug that removed an ``open`` call could
    only be fixed by adding one back, which no patch may)."""
    start, end, text = task["edit"]
    original = files[task["file"]]
    buggy = original[:start] + text + original[end:]
    return not code_problem(task["file"], buggy, original, [project.package])


def make(project: Project, kind: str, rng: random.Random, split: str, index: int,
         services: Services) -> Made:
    files, pool = project_tasks(project, services)
    chosen = [t for i, t in enumerate(pool) if len(pool) < 2 or i % 2 == (split != "train")]
    task = rng.choice(chosen)
    start, end, text = task["edit"]
    original = files[task["file"]]
    buggy = {**files, task["file"]: original[:start] + text + original[end:]}
    f2p, p2p = task["fail_to_pass"], task["pass_to_pass"]
    f2p_files = sorted({t.split("::")[0] for t in f2p})
    where = f"`{task['function']}` in `{task['file']}`"
    if kind == "fix-test":
        test = f2p[0]
        statement = (f"A test of {project.name}'s own suite fails: `{test}`.\n\n```python\n"
                     f"{_test_source(files, test)}\n```\n\nWhat pytest reports:\n```\n"
                     f"{task['failure'][:1200]}\n```\n\nThe tests are right: find the bug in "
                     f"the package and fix it without breaking any other test.")
        visible, hidden = buggy, {}  # the failing tests are shown; a patch may not touch them
    else:
        statement = (f"Issue: since the last change, {where} of {project.name} misbehaves; "
                     f"the project's tests report:\n```\n{task['failure'][:600]}\n```\n\n"
                     "Find the bug and fix it without breaking anything else.")
        visible = {p: t for p, t in buggy.items() if p not in f2p_files}
        hidden = {p: files[p] for p in f2p_files}
    shown = [task["file"]] + ([f2p_files[0]] if kind == "fix-test" else [])
    shown = [p for p in shown if p in visible and len(visible[p]) < MAX_SHOWN]
    return Made(statement, visible, hidden, {task["file"]: original}, f2p, p2p, project.name,
                kind=kind, packages=[project.package], python_path=list(project.python_path),
                shown=shown, provenance={
                    "source": "real-project", "project": project.name,
                    "version": project.version, "sdist_sha256": project.sha256,
                    "file": task["file"], "function": task["function"],
                    "operator": task["operator"], "line": task["line"],
                    "original_sha256": task["original_sha256"],
                    "fail_to_pass": f2p, "pass_to_pass_count": len(p2p)})
