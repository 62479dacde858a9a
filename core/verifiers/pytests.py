"""The ``python-tests`` verifier: the candidate program against the task's ``check(candidate)``.

The candidate is the last fenced code block of the completion (or the whole completion when it has
no fences); with ``include_prompt: true`` the task prompt is prepended (HumanEval style). The
program and the tests run in the sandbox through ``pyharness.py``, which decides a pass through a
channel the candidate cannot forge (see that module): the verdict line must carry a fresh random
nonce that only the harness's parent process ever sees. Components: ``pass_frac`` (fraction of tests
passed) and ``all_pass``; the feedback is the first failing test's message, truncated.
"""

from __future__ import annotations

import functools
import json
import secrets
from importlib import resources
from typing import Any

from rlhub.domain import Verdict
from rlhub.extract import code_of
from rlhub.task import Task

FEEDBACK_CHARS = 600


@functools.cache
def harness_source() -> str:
    return resources.files("rlhub.verifiers").joinpath("pyharness.py").read_text()


def parse_verdict(stdout: str, nonce: str = "") -> dict[str, Any] | None:
    """The harness's verdict from the last verdict line of its stdout carrying ``nonce``, or None.

    Lines with another nonce (a candidate guessing the format) are ignored.
    """
    for line in reversed(stdout.splitlines()):
        if line.startswith('{"rlhub_verdict"'):
            try:
                data = json.loads(line)
                if data.get("nonce", "") == nonce:
                    return data["rlhub_verdict"]
            except (ValueError, KeyError, AttributeError):
                continue
    return None


class PythonTests:
    """See the module docstring.

    Options: ``include_prompt``, ``limits``, ``backend``, ``call_timeout_s`` (per call of the
    candidate; default ``limits.wall_s``), ``libraries`` (installed distributions the candidate
    may import, as the domain's ``sandbox.libraries`` declares them).
    """

    def __init__(self, options: dict[str, Any]):
        from rlhub.sandbox import Limits
        from rlhub.sandbox.channel import warm_program

        warm_program(harness_source())  # sandboxes started after this compile it only once
        self.include_prompt = bool(options.get("include_prompt", False))
        self.limits = Limits.from_dict({"wall_s": 10, "cpu_s": 10, **options.get("limits", {})})
        self.backend = options.get("backend")
        self.libraries = list(options.get("libraries", []))
        self.call_timeout_s = float(options.get("call_timeout_s", self.limits.wall_s))

    def request(self, task: Task, completion: str, nonce: str = "") -> Any:
        """The sandbox job that runs ``completion`` against ``task``'s tests."""
        from rlhub.sandbox import ExecRequest

        program = code_of(completion, ("python", "py", "python3"))
        if self.include_prompt:
            program = task.prompt_text() + "\n" + program
        meta = task.meta or {}
        job = {"candidate": program, "tests": meta.get("tests") or task.answer,
               "entry_point": meta.get("entry_point", "solution"),
               "call_timeout_s": self.call_timeout_s, "nonce": nonce}
        return ExecRequest(code=harness_source(), language="python", stdin=json.dumps(job),
                           limits=self.limits, libraries=self.libraries)

    def judge(self, result: Any, nonce: str = "") -> Verdict:
        """Turn the sandbox's result into a verdict; only the harness's verdict line can pass."""
        exec_info = result.to_dict()
        exec_info["stdout"] = exec_info["stdout"][-2000:]
        exec_info["stderr"] = exec_info["stderr"][-2000:]
        verdict = parse_verdict(result.stdout, nonce) if result.exit_code == 0 else None
        if verdict is None:
            why = f"The program did not finish the tests (status {result.status})."
            tail = result.stderr.strip()[-FEEDBACK_CHARS:]
            return Verdict({"pass_frac": 0.0, "all_pass": 0.0}, False,
                           why + (f"\n{tail}" if tail else ""), exec_info)
        if verdict["load_error"]:
            return Verdict({"pass_frac": 0.0, "all_pass": 0.0}, False,
                           "The program failed to load:\n" + verdict["load_error"][-FEEDBACK_CHARS:],
                           exec_info)
        total, passed = max(1, int(verdict["total"])), int(verdict["passed"])
        all_pass = passed == total and not verdict["failures"]
        feedback = "" if all_pass else (
            f"{total - passed} of {total} tests failed. First failure: "
            + (verdict["failures"][0] if verdict["failures"] else "unknown")[:FEEDBACK_CHARS])
        return Verdict({"pass_frac": passed / total, "all_pass": float(all_pass)}, all_pass,
                       feedback, exec_info)

    def check(self, task: Task, completion: str) -> Verdict:
        from rlhub import sandbox

        nonce = secrets.token_hex(16)
        return self.judge(sandbox.run(self.request(task, completion, nonce), self.backend), nonce)
