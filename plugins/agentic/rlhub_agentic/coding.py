"""Multi-step code tasks with execution feedback: run code, run the visible tests, submit, repair.

Tools: ``python`` runs any program in the sandbox and shows its exit status, stdout and stderr;
``tests`` runs a candidate ``solution`` against the visible examples with the built-in
``python-tests`` verifier. The final answer, ``<answer>`` around a fenced python block, is graded
by ``python-tests`` on every test, hidden ones included; a failing submission gets the first
failure as feedback and may be repaired while ``params.answer_attempts`` lasts.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from rlhub import Task, Tool, Verdict, code_of, tool

from rlhub_agentic import codebank
from rlhub_agentic.episode import AgenticDomain, EpisodeState, ToolInputError
from rlhub_agentic.protocol import truncate

PY = ("python", "py", "python3")
STREAM_CHARS = 1500
TOOL_DOCS = [
    '<tool name="python">```python\nprint(1 + 1)\n```</tool>: run a Python program in the '
    "sandbox; you see its exit status, stdout and stderr.",
    '<tool name="tests">```python\ndef solution(...): ...\n```</tool>: run your `solution` '
    "against the examples above; you see which pass.",
]


def _fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


class CodeRepairDomain(AgenticDomain):
    """See the module docstring. Params: ``cases``, ``visible``, ``limits`` (sandbox limits)."""

    def __init__(self, manifest: Any):
        super().__init__(manifest)
        self.limits = {"wall_s": 5, "cpu_s": 5, "memory_mb": 256, "output_bytes": 65536,
                       **self.params.get("limits", {})}

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        problem = codebank.make_problem(rng, cases=int(self.params.get("cases", 8)),
                                        visible=int(self.params.get("visible", 2)))
        examples = "\n".join(f"    {line}" for line in problem["examples"])
        text = (f"{problem['statement']}\n\nExamples:\n{examples}\n\nYour answer is graded on "
                "these examples and on hidden tests.")
        answer_doc = ("put your complete program in a fenced python block inside it: "
                      "<answer>```python ... ```</answer>.")
        return {"prompt": self.compose(text, TOOL_DOCS, answer_doc), "answer": problem["tests"],
                "gold": f"<answer>\n{_fenced(problem['source'])}\n</answer>",
                "meta": {"tests": problem["tests"], "visible_tests": problem["visible_tests"],
                         "entry_point": "solution", "problem": problem["name"]}}

    # -- grading ---------------------------------------------------------------------------------

    def python_tests(self) -> Any:
        options = {"limits": self.limits}
        if self.params.get("sandbox_backend"):
            options["backend"] = self.params["sandbox_backend"]
        return self.services.verifier("python-tests", options)

    def judge(self, task: Task, answer: str) -> Verdict:
        verdict = self.python_tests().check(task, _fenced(code_of(answer, PY)))
        passed = bool(verdict.passed)
        return Verdict({"correct": float(passed), "pass_frac": verdict.components["pass_frac"]},
                       passed, verdict.feedback, verdict.exec)

    # -- tools -----------------------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        return [tool(self.run_python, name="python", raw="code"),
                tool(self.run_visible_tests, name="tests", raw="code")]

    def run_python(self, ctx: EpisodeState, code: str) -> str:
        """Run a Python program in the sandbox; you see its exit status, stdout and stderr.

        code: the program (a fenced python block is fine)
        """
        from rlhub import ExecRequest, Limits

        program = code_of(code, PY).strip()
        if not program:
            raise ToolInputError("the program was empty.")
        result = self.services.sandboxes.run(
            ExecRequest(code=program, language="python", limits=Limits.from_dict(self.limits)),
            self.params.get("sandbox_backend"))
        parts = [f"status: {result.status} (exit code {result.exit_code})"]
        for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
            if text.strip():
                tail = text.rstrip()[-4 * STREAM_CHARS:]
                parts.append(f"{name}:\n{truncate(tail, STREAM_CHARS)}")
        return "\n".join(parts)

    def run_visible_tests(self, ctx: EpisodeState, code: str) -> str:
        """Run your ``solution`` against the visible examples; you see which pass.

        code: the program defining solution (a fenced python block is fine)
        """
        state, program = ctx, code_of(code, PY).strip()
        if not program:
            raise ToolInputError("no program was given; put it in a fenced python block.")
        task = state.task
        visible = dataclasses.replace(task, meta={**task.meta, "tests": task.meta["visible_tests"]},
                                      answer=task.meta["visible_tests"])
        verdict = self.python_tests().check(visible, _fenced(program))
        if verdict.passed:
            return "All visible examples pass. Hidden tests are run when you answer."
        return verdict.feedback or "The visible examples did not pass."
