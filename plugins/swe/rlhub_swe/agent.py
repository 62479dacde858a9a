"""The agent form of the swe domains: an episode in a workspace with tools.

The episode opens a workspace of the task's repository (the visible files only: the hidden tests
never enter it) and serves the tools below, declared once as typed functions (:mod:`rlhub.tools`):
``list_files``, ``read_file`` (line ranges), ``search``, ``apply_patch``, ``write_file``,
``run_tests`` (the visible tests, or one), ``run`` (a command) and ``submit``. ``submit`` grades
what the workspace changed since its snapshot (plus a last patch it may carry) exactly as the
single-turn form grades a patch: in a fresh workspace, with the hidden tests. A failed
submission is fed back and may be repaired (``params.answer_attempts``), at the discounted
reward; ``run_tests`` output is the closed loop's feedback before that.

Tool turns score the minimum and are not attempts; files the agent leaves outside the package
that are neither Python files nor test configuration (notes, caches) are not part of its answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from rlhub import (
    Episode,
    Lease,
    SandboxError,
    Score,
    StepResult,
    Task,
    Tool,
    ToolCall,
    ToolError,
    Toolset,
    Verdict,
    assistant_message,
    tool,
    tool_message,
)
from rlhub.tools import visible_text

from rlhub_swe import prompts
from rlhub_swe.diffs import PatchError, apply_patch, extract_patch, touched_paths
from rlhub_swe.domain import ZERO, SweDomain
from rlhub_swe.grading import pytest_env
from rlhub_swe.guard import CONFIG_FILES, is_test_path

MAX_OUTPUT = 6000
MAX_LINES = 400
SCRATCH = re.compile(r"(^|/)(__pycache__|\.pytest_cache|\.rlhub-grader)(/|$)|\.pyc$")
SEARCH = r'''
import os, re, sys
pattern, top, regex = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
match = re.compile(pattern).search if regex else (lambda line: pattern in line)
hits = 0
for dirpath, dirnames, filenames in os.walk(top):
    dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".pytest_cache"))
    for name in sorted(filenames):
        path = os.path.normpath(os.path.join(dirpath, name))
        try:
            lines = open(path, encoding="utf-8").read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(lines, 1):
            if match(line):
                print(f"{path}:{number}: {line[:200]}")
                hits += 1
                if hits >= 200:
                    print("(stopped at 200 matches)")
                    sys.exit(0)
print(f"({hits} matches)")
'''


def _clip(text: str, limit: int = MAX_OUTPUT) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 3] + f"\n... ({len(text) - limit} characters cut) ...\n" + \
        text[-2 * limit // 3:]


@dataclass
class Context:
    """What the tools act on: the episode's task, domain and workspace."""

    task: Task
    domain: SweAgentDomain
    workspace: Any
    submitted: Verdict | None = None


@tool
def list_files(ctx: Context, path: str = ".") -> str:
    """List the files of the repository (or of one folder of it).

    path: a folder, relative to the repository root
    """
    files = ctx.workspace.files(path)
    shown = files[:MAX_LINES]
    more = f"\n({len(files) - len(shown)} more)" if len(files) > len(shown) else ""
    return "\n".join(shown) + more if files else f"no files under {path!r}"


@tool
def read_file(ctx: Context, path: str, start: int = 1, end: int | None = None) -> str:
    """Show a file's lines start to end (numbered; at most 400 lines at once).

    path: the file, relative to the repository root
    start: the first line to show (1-based)
    end: the last line to show (default: 400 lines from start)
    """
    lines = ctx.workspace.read_text(path).splitlines()
    first = max(1, start)
    last = min(len(lines), end if end is not None else first + MAX_LINES - 1,
               first + MAX_LINES - 1)
    shown = "\n".join(f"{n:5d}  {lines[n - 1]}" for n in range(first, last + 1))
    return f"{path} (lines {first}-{last} of {len(lines)})\n{shown}"


@tool
def search(ctx: Context, pattern: str, path: str = ".", regex: bool = False) -> str:
    """Find lines containing a text (or matching a regular expression) in the repository.

    pattern: the text or regular expression
    path: a folder or file to search in
    regex: treat pattern as a regular expression
    """
    result = ctx.workspace.run(["python3", "-c", SEARCH, pattern, path, "1" if regex else "0"],
                               limits=ctx.domain.tool_limits)
    return _clip(result.stdout or result.stderr)


@tool(name="apply_patch")
def apply_patch_tool(ctx: Context, patch: str) -> str:
    """Apply a unified diff (as git apply would) to the repository.

    patch: the diff, paths relative to the repository root (--- a/PATH, +++ b/PATH)
    """
    files = {}
    for path in touched_paths(patch):
        try:
            files[path] = ctx.workspace.read_text(path)
        except SandboxError:
            continue  # a file the patch makes
    try:
        changes = apply_patch(patch, files)
    except PatchError as exc:
        raise ToolError(str(exc)) from None
    for path, text in changes.items():
        ctx.workspace.delete(path) if text is None else ctx.workspace.write(path, text)
    return "applied: " + ", ".join(sorted(changes)) if changes else "the patch changed nothing"


@tool
def write_file(ctx: Context, path: str, content: str) -> str:
    """Write a whole file (made if new).

    path: the file, relative to the repository root
    content: its new text
    """
    ctx.workspace.write(path, content)
    return f"wrote {path} ({len(content)} characters)"


@tool
def run_tests(ctx: Context, test: str | None = None) -> str:
    """Run the visible tests with pytest, or one test file or test id.

    test: e.g. tests/test_orders.py or tests/test_orders.py::test_total_0 (default: all)
    """
    argv = ["python3", "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider"]
    argv += [test] if test else []
    result = ctx.workspace.run(argv, env=pytest_env(ctx.task.meta["python_path"]),
                               limits=ctx.domain.limits)
    return f"exit code {result.exit_code} ({result.status})\n" + _clip(result.stdout +
                                                                      result.stderr)


@tool
def run(ctx: Context, command: str) -> str:
    """Run a shell command in the repository (no network; 60 s).

    command: the command line, e.g. python3 -c "import pkg; print(pkg.__doc__)"
    """
    result = ctx.workspace.run(command, limits=ctx.domain.tool_limits)
    return f"exit code {result.exit_code} ({result.status})\n" + _clip(result.stdout +
                                                                      result.stderr)


@tool
def submit(ctx: Context, patch: str | None = None) -> str:
    """Submit your changes for grading by the hidden tests (applying a last patch first).

    patch: an optional unified diff to apply before grading
    """
    if patch:
        apply_patch_tool.fn(ctx, patch)
    ctx.submitted = ctx.domain.grade_workspace(ctx.task, ctx.workspace)
    return ctx.submitted.feedback or "submitted"


TOOLS = [list_files, read_file, search, apply_patch_tool, write_file, run_tests, run, submit]


class SweAgentDomain(SweDomain):
    """The agent form (see the module docstring). Params as :class:`SweDomain`, plus
    ``calls_per_turn`` and ``answer_attempts``."""

    toolset = Toolset(TOOLS)

    def __init__(self, manifest: Any):
        super().__init__(manifest)
        from rlhub import Limits

        self.tool_limits = Limits(wall_s=60, cpu_s=60, memory_mb=1024, processes=64,
                                  disk_mb=self.limits.disk_mb)
        self.calls_per_turn = int(self.params.get("calls_per_turn", 4))
        self.answer_attempts = int(self.params.get("answer_attempts", 2))

    def prompt(self, made: Any) -> str:
        return prompts.agent(made, self.toolset.describe(), self.manifest.max_turns)

    def gold(self, patch: str) -> str:
        import json

        call = {"name": "submit", "arguments": {"patch": patch}}
        return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"

    def tool_specs(self) -> list[dict[str, Any]]:
        return self.toolset.specs()

    def check(self, task: Task, completion: str) -> Verdict:
        """One-shot verification: the patch a completion submits (or holds) is graded."""
        patch = next((c.arguments.get("patch") for c in self.toolset.parse(completion)
                      if c.name in ("submit", "apply_patch") and c.arguments.get("patch")),
                     None) or extract_patch(visible_text(completion))
        if not patch:
            return Verdict(dict(ZERO), False, "No patch was submitted: call submit with a "
                           "patch, or change the files and call submit.")
        return super().check(task, f"```diff\n{patch}\n```")

    def grade_workspace(self, task: Task, workspace: Any) -> Verdict:
        """Grade what ``workspace`` changed since its snapshot (see the module docstring)."""
        written, deleted = workspace.changes()
        changes: dict[str, str | None] = {p: None for p in deleted if _counts(p)}
        for path in written:
            if _counts(path):
                try:
                    changes[path] = workspace.read_text(path)
                except SandboxError:
                    changes[path] = None
        return self.grade(task, self.suite(task), changes)

    def start(self, task: Task) -> SweEpisode:
        return SweEpisode(self, task)


def _counts(path: str) -> bool:
    """Whether a changed path is part of the answer (scratch files and caches are not)."""
    if SCRATCH.search(path):
        return False
    name = path.rsplit("/", 1)[-1]
    return path.endswith(".py") or is_test_path(path) or name in CONFIG_FILES or \
        name.endswith(".pth")


class SweEpisode(Episode):
    """One agent episode: tool calls against a workspace, then graded submissions."""

    domain: SweAgentDomain

    def __init__(self, domain: SweAgentDomain, task: Task):
        super().__init__(domain, task)
        snapshot = dict(task.meta["files"])
        self.workspace = domain.services.workspaces.open(
            snapshot, domain.limits, Lease(f"swe episode {task.id}"),
            backend=domain.params.get("workspace_backend"), libraries=["pytest"])
        self.context = Context(task, domain, self.workspace)
        self.failed = 0
        self.tool_calls = 0
        self.final: StepResult | None = None

    def step(self, completion: str) -> StepResult:
        if self.final is not None:
            return self.final
        self.turn += 1
        calls = self.domain.toolset.parse(completion, self.turn)
        if not calls:
            patch = extract_patch(visible_text(completion))
            calls = [ToolCall("submit", {"patch": patch}, f"call_{self.turn}_0")] if patch else []
        if not calls:
            return self._end_or(self._idle("No tool call was found. " + SYNTAX))
        return self._end_or(self._calls(calls[: self.domain.calls_per_turn], completion))

    def _calls(self, calls: list[ToolCall], completion: str) -> StepResult:
        results = []
        for call in calls:
            self.tool_calls += 1
            self.context.submitted = None
            results.append(self.domain.toolset.run(call, self.context))
            if self.context.submitted is not None:
                calls = calls[: len(results)]
                return self._submitted(self.context.submitted, calls, results, completion)
        return self._observe(calls, results, completion, self._idle_score(), attempt=False)

    def _submitted(self, verdict: Verdict, calls: list[ToolCall], results: list[str],
                   completion: str) -> StepResult:
        score = self._counted(self.domain.finalize(verdict))
        left = self.domain.answer_attempts - self.failed - 1
        if score.passed or left <= 0 or not score.trainable:
            return StepResult(None, score, True, self._info(True), [])
        self.failed += 1
        results[-1] += (f"\nThe submission did not pass. You may keep working and submit "
                        f"again ({left} more attempt{'s' if left > 1 else ''}).")
        return self._observe(calls, results, completion, score, attempt=True)

    def _observe(self, calls: list[ToolCall], results: list[str], completion: str,
                 score: Score, attempt: bool) -> StepResult:
        note = f"(turn {self.turn} of {self.domain.manifest.max_turns})"
        results = [_clip(r) for r in results]
        results[-1] = f"{results[-1]}\n{note}"
        text = "\n".join(f'<tool_response name="{c.name}">\n{r}\n</tool_response>'
                         for c, r in zip(calls, results))
        messages = [assistant_message(visible_text(completion), calls)]
        messages += [tool_message(c, r) for c, r in zip(calls, results)]
        return StepResult(text, score, False, self._info(attempt), messages)

    def _idle(self, message: str) -> StepResult:
        return StepResult(f"{message}\n(turn {self.turn} of {self.domain.manifest.max_turns})",
                          self._idle_score(message), False, self._info(False))

    def _end_or(self, result: StepResult) -> StepResult:
        """``result``, unless the turns are used up: then the workspace as it is is graded."""
        if not result.done and self.turn >= self.domain.manifest.max_turns:
            verdict = self.domain.grade_workspace(self.task, self.workspace)
            score = self._counted(self.domain.finalize(verdict))
            feedback = f"The episode ended after {self.turn} turns. {score.feedback}"
            result = StepResult(None, replace(score, feedback=feedback), True, self._info(True))
        if result.done:
            self.final = result
            self.close()
        return result

    def _idle_score(self, feedback: str = "") -> Score:
        return self._counted(self.domain.finalize(Verdict(dict(ZERO), False, feedback)))

    def _counted(self, score: Score) -> Score:
        return replace(score, components={**score.components,
                                          "tool_calls": float(self.tool_calls)})

    def _info(self, attempt: bool) -> dict[str, Any]:
        return {"attempt": attempt, "turn": self.turn, "repair": self.failed,
                "tool_calls": self.tool_calls}

    def close(self) -> None:
        self.workspace.close()


SYNTAX = ('Call a tool as <tool_call>{"name": "read_file", "arguments": {"path": "..."}}'
          "</tool_call>, or submit with a patch.")
