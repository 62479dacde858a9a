"""The ``python-tests`` verifier: the candidate program against the task's tests.

A task's ``meta`` gives the tests in one of the shapes public code benchmarks use:

* ``tests``: test code, a ``check(candidate)`` function called with ``entry_point`` (HumanEval)
  and/or top-level asserts; it sees the program's globals, as in the standard harnesses;
* ``asserts``: a list of assert statements calling the function by name, with optional ``setup``
  code run first (MBPP's ``test_list`` and ``test_setup_code``);
* ``cases``: stdin/stdout cases for a whole program (APPS, CodeContests, LiveCodeBench): a list of
  ``{"input", "output"}`` or ``{"inputs": [...], "outputs": [...]}``, as data or as a JSON string
  (:func:`io_cases` reads them).

The candidate is the last fenced code block of the completion (or the whole completion when it has
no fences); with ``include_prompt: true`` the task prompt is prepended (HumanEval style), and the
prompt's own helpers are the ones the tests see. The program and the tests run in the sandbox
through ``pyharness.py``, which decides a pass through a channel the candidate cannot forge (see
that module): the verdict line must carry a fresh random nonce that only the harness's parent
process ever sees. Components: ``pass_frac`` (fraction of tests or cases passed) and ``all_pass``;
the feedback is the first failure's message, truncated. Test code that is itself broken raises
:class:`~rlhub.errors.VerifierError` (failure class ``verifier``), never a wrong answer.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import TYPE_CHECKING, Any

from rlhub.domain import Verdict
from rlhub.errors import VerifierError
from rlhub.extract import code_of
from rlhub.sandbox.verdict import fresh_nonce, tagged_line
from rlhub.task import Task

if TYPE_CHECKING:
    from rlhub.protocols import ServicesLike

FEEDBACK_CHARS = 600


@functools.cache
def harness_source() -> str:
    return resources.files("rlhub.verifiers").joinpath("pyharness.py").read_text()


def parse_verdict(stdout: str, nonce: str = "") -> dict[str, Any] | None:
    """The harness's verdict from the last verdict line of its stdout carrying ``nonce``, or None
    (:mod:`rlhub.sandbox.verdict`)."""
    return tagged_line(stdout, "rlhub_verdict", nonce)  # type: ignore[no-any-return]


def io_cases(value: Any) -> list[dict[str, str]]:
    """Stdin/stdout cases as ``[{"input", "output"}]`` from the shapes datasets store them in.

    Accepts a list of ``{"input", "output"}`` mappings, a mapping of parallel lists under
    ``inputs``/``outputs`` (or ``input``/``output``), either as a JSON string, and a list of such
    values (public and private cases from two columns); an output given as a list of lines is
    joined with newlines.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"stdin/stdout cases: expected JSON, found {value[:80]!r}") from exc
    if isinstance(value, dict):
        ins = value.get("inputs", value.get("input"))
        outs = value.get("outputs", value.get("output"))
        if not isinstance(ins, list) or not isinstance(outs, list) or len(ins) != len(outs):
            raise ValueError("stdin/stdout cases: expected parallel lists under inputs/outputs "
                             f"(or input/output), found keys {sorted(value)}")
        return [_case(i, o) for i, o in zip(ins, outs)]
    if isinstance(value, list):
        return [c for item in value for c in (
            [_case(item["input"], item["output"])] if _is_case(item) else io_cases(item))]
    raise ValueError(f"stdin/stdout cases: expected a list or a mapping, found "
                     f"{type(value).__name__}")


def _is_case(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("input"), str)


def _case(given: Any, expected: Any) -> dict[str, str]:
    if isinstance(expected, list):
        expected = "\n".join(map(str, expected))
    if not isinstance(given, str) or not isinstance(expected, str):
        raise ValueError("stdin/stdout cases: expected text input and output, found "
                         f"{type(given).__name__} and {type(expected).__name__}")
    return {"input": given, "output": expected}


def entry_point_of(meta: dict[str, Any]) -> str | None:
    """``meta["entry_point"]``, else the first function the asserts call that is neither a builtin
    nor defined by the setup code (MBPP names none), else ``"solution"`` for test code."""
    if meta.get("entry_point"):
        return str(meta["entry_point"])
    asserts = meta.get("asserts")
    if not asserts:
        return "solution"
    import ast
    import builtins

    source = "\n".join([asserts] if isinstance(asserts, str) else map(str, asserts))
    try:
        setup = {n.name for n in ast.parse(meta.get("setup") or "").body
                 if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        calls = [n.func.id for n in ast.walk(ast.parse(source))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    except SyntaxError:
        return None
    return next((c for c in calls if not hasattr(builtins, c) and c not in setup), None)


def tests_module(meta: dict[str, Any], answer: Any) -> str:
    """One test module from ``setup``, ``tests`` (or the task's answer) and ``asserts``."""
    asserts = meta.get("asserts") or []
    if isinstance(asserts, str):
        asserts = [asserts]
    parts = [meta.get("setup") or "", meta.get("tests") or ("" if asserts else answer or ""),
             *asserts]
    return "\n".join(str(p) for p in parts if p)


class PythonTests:
    """See the module docstring.

    Jobs run on ``services``' sandbox backends. Options: ``include_prompt``, ``limits``,
    ``backend`` (default: the services'), ``call_timeout_s`` (per call of the
    candidate, or per stdin/stdout case; default ``limits.wall_s``), ``float_tolerance``
    (relative, for numbers in stdin/stdout cases; default 0: equal by value, ``2.0`` is ``2``),
    ``max_output_bytes`` (per case; default 4 MiB) and ``libraries`` (installed distributions the
    candidate may import, as the domain's ``sandbox.libraries`` declares them).
    """

    def __init__(self, options: dict[str, Any], services: ServicesLike):
        from rlhub.sandbox import Limits
        from rlhub.sandbox.channel import warm_program

        warm_program(harness_source())  # sandboxes started after this compile it only once
        self.services = services
        self.include_prompt = bool(options.get("include_prompt", False))
        self.limits = Limits.from_dict({"wall_s": 10, "cpu_s": 10, **options.get("limits", {})})
        self.backend = options.get("backend")
        self.libraries = list(options.get("libraries", []))
        self.call_timeout_s = float(options.get("call_timeout_s", self.limits.wall_s))
        self.io_options = {"float_tolerance": float(options.get("float_tolerance", 0.0)),
                           "max_output_bytes": int(options.get("max_output_bytes", 1 << 22))}

    def request(self, task: Task, completion: str, nonce: str = "") -> Any:
        """The sandbox job that runs ``completion`` against ``task``'s tests."""
        from rlhub.sandbox import ExecRequest

        program = code_of(completion, ("python", "py", "python3"))
        if self.include_prompt:
            program = task.prompt_text() + "\n" + program
        meta = task.meta or {}
        job: dict[str, Any] = {"candidate": program, "call_timeout_s": self.call_timeout_s,
                               "nonce": nonce}
        if meta.get("cases") is not None:
            job.update(mode="io", cases=io_cases(meta["cases"]), **self.io_options)
        else:
            job.update(mode="calls", tests=tests_module(meta, task.answer),
                       entry_point=entry_point_of(meta),
                       trusted=task.prompt_text() if self.include_prompt else None)
        return ExecRequest(code=harness_source(), language="python", stdin=json.dumps(job),
                           limits=self.limits, libraries=self.libraries)

    def judge(self, result: Any, nonce: str = "", task_id: str = "") -> Verdict:
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
        if verdict.get("tests_error"):
            raise VerifierError(f"task {task_id}: the task's own tests are broken: "
                                f"{verdict['tests_error']}")
        if verdict["load_error"]:
            return Verdict({"pass_frac": 0.0, "all_pass": 0.0}, False,
                           "The program failed to load:\n" + verdict["load_error"][-FEEDBACK_CHARS:],
                           exec_info)
        total, passed = max(1, int(verdict["total"])), int(verdict["passed"])
        all_pass = passed == total and not verdict["failures"]
        feedback = "" if all_pass else (
            f"{total - passed} of {total} tests failed. First failure: "
            + (verdict["failures"][0] if verdict["failures"] else "unknown")[:FEEDBACK_CHARS])
        slow = not all_pass and verdict.get("timeouts") == total - passed
        return Verdict({"pass_frac": passed / total, "all_pass": float(all_pass)}, all_pass,
                       feedback, exec_info, failure="timeout" if slow else None)

    def check(self, task: Task, completion: str) -> Verdict:
        nonce = fresh_nonce()
        result = self.services.sandboxes.run(self.request(task, completion, nonce), self.backend)
        return self.judge(result, nonce, task.id)
