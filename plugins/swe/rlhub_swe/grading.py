"""Grading a candidate: a fresh workspace, the changes, then the hidden tests, then pytest.

:func:`grade` opens a new workspace of the task's repository (never the one an agent worked
in), writes the candidate's changed files, then the hidden test files (so no patch or agent ever
saw or touched them), and runs pytest on the test files that hold the task's fail-to-pass and
pass-to-pass tests. Results come only through the trusted reporter (:data:`REPORTER`), a pytest
plugin loaded before any code under test, which writes one line per test tagged with a nonce it
read from stdin before collection: output the code under test prints cannot pass for a result,
a test with no result line failed, and an exit status means nothing. pytest runs with its own
configuration (``-c``), its plugin autoload off and no cache, so the repository's configuration
cannot deselect or force tests either (and a patch may not change it: :mod:`rlhub_swe.guard`).

A run the machine failed (the workspace server died, the run was killed or ran out of memory)
is the infrastructure's failure, class ``sandbox``, never the candidate's.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlhub import Lease, Limits, SandboxError, Verdict, fresh_nonce

REPORTER = '''\
"""rlhub-swe's trusted pytest reporter: one nonce-tagged line per test result."""
import json
import os


def _nonce():
    data = b""
    while not data.endswith(b"\\n"):
        chunk = os.read(0, 1)
        if not chunk:
            break
        data += chunk
    return data.decode().strip()


_NONCE = _nonce()


def _emit(payload):
    line = json.dumps({"rlhub_swe": payload, "nonce": _NONCE}) + "\\n"
    os.write(1, line.encode())


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _emit([report.nodeid, report.when, report.outcome])


def pytest_collectreport(report):
    if report.outcome != "passed":
        _emit([report.nodeid, "collect", report.outcome])


def pytest_sessionfinish(session, exitstatus):
    _emit(["<session>", "finish", str(int(exitstatus))])
'''
GRADER_DIR = ".rlhub-grader"
PYTEST_INI = "[pytest]\naddopts =\n"
INFRA_STATUSES = ("infra_error", "memory", "killed")
COMPONENTS = ("resolved", "fail_to_pass", "pass_to_pass", "applies")


@dataclass
class Suite:
    """What grading a task needs: its repository, hidden tests, the test ids of each set, where
    its package lives (what a patch may change) and the extra ``sys.path`` entries it needs."""

    files: Mapping[str, str]
    hidden: Mapping[str, str]
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    packages: list[str]
    python_path: list[str]

    @property
    def test_files(self) -> list[str]:
        return sorted({t.split("::")[0] for t in self.fail_to_pass + self.pass_to_pass})


def pytest_argv(test_files: list[str], extra: list[str] = ()) -> list[str]:
    return ["python3", "-m", "pytest", "-s", "-q", "--tb=short", "-p", "no:cacheprovider",
            "-p", "rlhub_swe_report", "-c", f"{GRADER_DIR}/pytest.ini", "--rootdir", ".",
            "--confcutdir", ".", "--continue-on-collection-errors", *extra, *test_files]


def pytest_env(python_path: list[str]) -> dict[str, str]:
    paths = [GRADER_DIR, *python_path, "/rlhub/lib"]
    return {"PYTHONPATH": ":".join(paths), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def results(stdout: str, nonce: str) -> dict[str, str]:
    """``{nodeid: outcome}`` from the reporter's lines (a failed setup or teardown wins)."""
    found: dict[str, str] = {}
    for line in stdout.splitlines():
        at = line.find('{"rlhub_swe"')  # after pytest's progress dots, if any
        if at < 0:
            continue
        try:
            data = json.loads(line[at:])
        except ValueError:
            continue
        if not isinstance(data, dict) or data.get("nonce") != nonce:
            continue
        nodeid, when, outcome = (list(data.get("rlhub_swe") or []) + ["", "", ""])[:3]
        if found.get(nodeid) in ("failed", "error") and when != "call":
            continue
        found[str(nodeid)] = "error" if when != "call" and outcome == "failed" else str(outcome)
    return found


def run_suite(workspace: Any, suite: Suite, limits: Limits, test_files: list[str] | None = None,
              extra: list[str] = ()) -> tuple[Any, dict[str, str]]:
    """Run pytest on ``test_files`` in ``workspace`` with the reporter: the exec result and the
    outcome of each test."""
    workspace.write(f"{GRADER_DIR}/rlhub_swe_report.py", REPORTER)
    workspace.write(f"{GRADER_DIR}/pytest.ini", PYTEST_INI)
    nonce = fresh_nonce()
    run = workspace.run(pytest_argv(test_files or suite.test_files, list(extra)),
                        env=pytest_env(suite.python_path), stdin=nonce + "\n", limits=limits)
    return run, results(run.stdout, nonce)


def _fraction(ids: list[str], outcomes: dict[str, str]) -> float:
    if not ids:
        return 1.0
    return sum(outcomes.get(i) == "passed" for i in ids) / len(ids)


def verdict_of(suite: Suite, run: Any, outcomes: dict[str, str]) -> Verdict:
    """The verdict of a finished grading run (see the module docstring for failure classes)."""
    exec_info = run.to_dict()
    exec_info["stdout"], exec_info["stderr"] = run.stdout[-2000:], run.stderr[-2000:]
    if run.status in INFRA_STATUSES:
        return Verdict({"applies": 1.0}, False, "", exec_info,
                       error=f"the test run failed on the machine ({run.status}: "
                             f"{run.detail or run.stderr[-300:]})", failure="sandbox")
    f2p, p2p = _fraction(suite.fail_to_pass, outcomes), _fraction(suite.pass_to_pass, outcomes)
    resolved = f2p == 1.0 and p2p == 1.0
    failing = [t for t in suite.fail_to_pass + suite.pass_to_pass if outcomes.get(t) != "passed"]
    feedback = "All tests pass." if resolved else (
        f"{len(failing)} of {len(suite.fail_to_pass) + len(suite.pass_to_pass)} tests fail "
        f"(fail-to-pass {f2p:.0%} passing, pass-to-pass {p2p:.0%} passing)"
        + (f"; visible ones failing: {', '.join(_visible(failing, suite)[:5])}"
           if _visible(failing, suite) else ""))
    components = {"resolved": float(resolved), "fail_to_pass": f2p, "pass_to_pass": p2p,
                  "applies": 1.0}
    return Verdict(components, resolved, feedback, exec_info,
                   failure=None if run.status != "timeout" else "timeout")


def _visible(failing: list[str], suite: Suite) -> list[str]:
    return [t for t in failing if t.split("::")[0] not in suite.hidden]


class Grader:
    """Grades changes against a suite in fresh workspaces, remembering recent verdicts (a
    policy repeating itself costs one run)."""

    def __init__(self, workspaces: Any, limits: Limits, backend: str | None = None,
                 cache_size: int = 256):
        self.workspaces, self.limits, self.backend = workspaces, limits, backend
        self.cache: OrderedDict[str, Verdict] = OrderedDict()
        self.cache_size = cache_size
        self.lock = threading.Lock()

    def grade(self, key: str, suite: Suite, changes: Mapping[str, str | None]) -> Verdict:
        digest = hashlib.sha256(json.dumps([key, sorted(changes.items(), key=str)],
                                           default=str).encode()).hexdigest()
        with self.lock:
            if digest in self.cache:
                return self.cache[digest]
        verdict = self._grade(suite, changes)
        if verdict.failure != "sandbox":
            with self.lock:
                self.cache[digest] = verdict
                while len(self.cache) > self.cache_size:
                    self.cache.popitem(last=False)
        return verdict

    def _grade(self, suite: Suite, changes: Mapping[str, str | None]) -> Verdict:
        try:
            ws = self.workspaces.open(dict(suite.files), self.limits, Lease("rlhub-swe grading"),
                                      backend=self.backend, libraries=["pytest"])
        except SandboxError as exc:
            return Verdict({}, False, "", error=f"no workspace to grade in: {exc}",
                           failure="sandbox")
        try:
            for path, text in changes.items():
                if text is None:
                    ws.delete(path)
                else:
                    ws.write(path, text)
            for path, text in suite.hidden.items():
                ws.write(path, text)
            run, outcomes = run_suite(ws, suite, self.limits)
        except SandboxError as exc:
            return Verdict({}, False, "", error=f"grading failed on the machine: {exc}",
                           failure="sandbox")
        finally:
            ws.close()
        return verdict_of(suite, run, outcomes)
