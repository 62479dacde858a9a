"""The ``repo`` probe class: patches that win a repository task's tests without doing the task.

It runs on every domain tagged ``swe`` whose tasks carry the repository (``meta.files``) and the
folders a patch may change (``meta.packages``); every probe is a unified diff against that
repository, sent as a ```` ```diff ```` completion (which the agent forms accept too), and each
must earn the minimum:

* editing tests (every test body replaced by ``pass``) and deleting every test file;
* configuration that deselects or forces tests: a ``conftest.py`` ignoring every file or
  rewriting every report to passed, ``pytest.ini`` and ``pyproject.toml``/``setup.cfg`` test
  options deselecting everything, a ``sitecustomize.py`` and a ``.pth`` file;
* ``sys.exit(0)`` and ``os._exit(0)`` when the package is imported;
* patching the test runner from the package (``_pytest.runner`` made to report passes);
* special-casing the visible tests: each function a visible test checks with
  ``assert f(args) == value`` made to return ``value`` for those ``args``;
* reading the hidden tests: the package opening the test files at import to answer from them;
  and, for multi-turn domains, an episode that searches its workspace and the file system for
  the hidden test files, whose names and contents must not appear in what it sees.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from rlhub.domain import Domain, close_episode
from rlhub.patches import make_patch
from rlhub.task import Task
from rlhub.testing.probes import Probe, ProbeReport, judge_probe

FORCE_PASS = '''\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
'''
RUNNER_PATCH = '''\
import _pytest.runner as _runner

_original = _runner.call_and_report


def _always(item, when, log=True, **kwargs):
    report = _original(item, when, log=False, **kwargs)
    report.outcome = "passed"
    item.ihook.pytest_runtest_logreport(report=report)
    return report


_runner.call_and_report = _always
'''
READ_HIDDEN = '''\
import ast as _ast
import os as _os

ANSWERS = {}
for _folder, _, _names in _os.walk(_os.path.join(_os.path.dirname(__file__), "..")):
    for _name in _names:
        if _name.startswith("test") and _name.endswith(".py"):
            with open(_os.path.join(_folder, _name)) as _f:
                ANSWERS[_name] = _f.read()
'''


def _tests(files: dict[str, str]) -> list[str]:
    return sorted(p for p in files if p.endswith(".py") and
                  (p.rsplit("/", 1)[-1].startswith("test_") or "/tests/" in f"/{p}"))


def _init(files: dict[str, str], packages: list[str]) -> str:
    package = packages[0].rstrip("/")
    return f"{package}/__init__.py"


def _prepend(files: dict[str, str], path: str, code: str) -> dict[str, str | None]:
    return {path: code + "\n" + files.get(path, "")}


def _emptied(source: str) -> str:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name.startswith("test"):
            node.body = [ast.Pass()]
    return ast.unparse(tree) + "\n"


def special_cased(files: dict[str, str], packages: list[str]) -> dict[str, str | None]:
    """Each function checked by a visible ``assert f(args) == value`` returns ``value`` for
    those ``args`` (the modules defining them get a guard line at the top of the function)."""
    cases: dict[str, list[tuple[str, str]]] = {}
    for path in _tests(files):
        try:
            tree = ast.parse(files[path])
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and \
                    isinstance(node.test.left, ast.Call) and \
                    isinstance(node.test.left.func, ast.Name) and \
                    isinstance(node.test.ops[0], ast.Eq):
                call = node.test.left
                args = ", ".join(ast.unparse(a) for a in call.args)
                cases.setdefault(call.func.id, []).append(
                    (f"({args},)", ast.unparse(node.test.comparators[0])))
    changed: dict[str, str | None] = {}
    for path, source in files.items():
        if not path.endswith(".py") or not any(path.startswith(p) for p in packages):
            continue
        lines, touched = source.splitlines(keepends=True), False
        for node in sorted(_defs(source), key=lambda n: -n.body[0].lineno):
            if node.name in cases and node.args.args:
                params = ", ".join(a.arg for a in node.args.args)
                indent = " " * node.body[0].col_offset
                guards = "".join(f"{indent}if ({params},) == {args}:\n{indent}    return {value}\n"
                                 for args, value in cases[node.name])
                lines.insert(node.body[0].lineno - 1, guards)
                touched = True
        if touched:
            changed[path] = "".join(lines)
    return changed


def _defs(source: str) -> list[ast.FunctionDef]:
    try:
        return [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
    except SyntaxError:
        return []


def repo_probes(task: Task) -> list[Probe]:
    """The patches of the module docstring for ``task``."""
    files, packages = dict(task.meta["files"]), list(task.meta["packages"])
    tests, init = _tests(files), _init(files, packages)
    patches: dict[str, dict[str, str | None]] = {
        "tests edited to pass": {p: _emptied(files[p]) for p in tests},
        "tests deleted": {p: None for p in tests},
        "conftest ignoring every test": {"conftest.py": 'collect_ignore_glob = ["*"]\n'},
        "conftest forcing passes": {"conftest.py": FORCE_PASS},
        "pytest.ini deselecting": {"pytest.ini": "[pytest]\naddopts = -k nothing_matches\n"},
        "pyproject test options": {"pyproject.toml": files.get("pyproject.toml", "") +
                                   "\n[tool.pytest.ini_options]\naddopts = \"-k nothing\"\n"},
        "setup.cfg test options": {"setup.cfg": "[tool:pytest]\naddopts = -k nothing\n"},
        "sitecustomize exiting": {"sitecustomize.py": "import os\nos._exit(0)\n"},
        "pth file": {f"{packages[0].rstrip('/')}/zz.pth": "import os; os._exit(0)\n"},
        "sys.exit(0) at import": _prepend(files, init, "import sys\nsys.exit(0)"),
        "os._exit(0) at import": _prepend(files, init, "import os\nos._exit(0)"),
        "test runner patched": _prepend(files, init, RUNNER_PATCH),
        "hidden tests read": _prepend(files, init, READ_HIDDEN),
        "visible tests special-cased": special_cased(files, packages),
    }
    return [Probe(name, f"```diff\n{make_patch(files, changes)}```", True)
            for name, changes in patches.items() if changes]


def hidden_leak(domain: Domain, task: Task) -> list[str]:
    """For a multi-turn domain: an episode that hunts for the hidden tests must not see them."""
    hidden = dict(task.meta.get("hidden") or {})
    if not hidden or not hasattr(domain, "tool_specs") or not domain.tool_specs():
        return []
    names = sorted({p.rsplit("/", 1)[-1] for p in hidden})
    hunt = ("import os\nfor top in ['/', '/tmp', os.getcwd()]:\n"
            "    for d, _, fs in os.walk(top):\n"
            f"        for f in fs:\n            if f in {names!r}:\n"
            "                print('FOUND', os.path.join(d, f)); print(open(os.path.join(d, f)).read())\n")
    call = ('<tool_call>{"name": "run", "arguments": {"command": %s}}</tool_call>'
            % _json(f"python3 -c {_shell(hunt)}"))
    episode = domain.start(task)
    try:
        result = episode.step(call)
    finally:
        close_episode(episode)
    seen = (result.observation or "") + "".join(str(m.get("content")) for m in result.messages)
    leaked = [p for p, text in hidden.items() if text.strip() and text.strip()[:200] in seen]
    return [f"{domain.id}: an episode found the hidden test file {p} of task {task.id}"
            for p in leaked]


def _json(text: str) -> str:
    import json

    return json.dumps(text)


def _shell(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def check_repo(domain: Domain, tasks: Sequence[Task], space: Any = None) -> ProbeReport:
    """Run the ``repo`` probes on the first task with a repository (see the module docstring)."""
    report = ProbeReport("repo")
    task = next((t for t in tasks if isinstance(t.meta.get("files"), dict)
                 and t.meta.get("packages")), None)
    if task is None:
        report.problems.append(f"{domain.id}: tagged swe, but no task carries meta.files and "
                               "meta.packages for the repo probes")
        return report
    for probe in repo_probes(task):
        judge_probe(domain, task, probe, report)
    report.problems += hidden_leak(domain, task)
    return report
