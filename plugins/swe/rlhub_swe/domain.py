"""The swe domains: a repository task answered with one patch, graded by its tests.

:class:`SweDomain` is the single-turn form: the prompt holds the task and the repository's files;
the completion is a unified diff (fenced as ``diff`` or bare) that ``git apply`` accepts; the
gold is the reference patch. Verification applies the patch to the repository
(:mod:`rlhub_swe.diffs`), refuses changes outside the package's source and code that reaches
for the test machinery (:mod:`rlhub_swe.guard`), and grades the rest in a fresh workspace with
the hidden tests (:mod:`rlhub_swe.grading`). The reward is 1 when every fail-to-pass and
pass-to-pass test passes, else 0; ``fail_to_pass``, ``pass_to_pass`` and ``applies`` are kept as
components. Tasks come from a source (:mod:`rlhub_swe.sources`): synthetic repositories or
real registry projects.
"""

from __future__ import annotations

import random
from typing import Any

from rlhub import Domain, Limits, Manifest, Task, Verdict, make_patch

from rlhub_swe import prompts
from rlhub_swe.diffs import PatchError, apply_patch, extract_patch
from rlhub_swe.grading import Grader, Suite
from rlhub_swe.guard import review
from rlhub_swe.sources import source_of

ZERO = {"resolved": 0.0, "fail_to_pass": 0.0, "pass_to_pass": 0.0, "applies": 0.0}
NO_PATCH = ("No unified diff was found: answer with a patch (```diff fenced, or starting with "
            "'diff --git' / '--- a/PATH') that git apply accepts.")


class SweDomain(Domain):
    """See the module docstring. Params: ``source`` (``synthetic`` or ``real``), ``kind``,
    ``level`` (synthetic) or ``project`` (real), ``limits`` of a test run, and
    ``workspace_backend``."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.source = source_of(self.params)
        self.limits = Limits(**{"wall_s": 120.0, "cpu_s": 120.0, "memory_mb": 1024,
                                "processes": 64, "disk_mb": 256, **self.params.get("limits", {})})
        self._grader: Grader | None = None

    @property
    def grader(self) -> Grader:
        if self._grader is None:
            self._grader = Grader(self.services.workspaces, self.limits,
                                  self.params.get("workspace_backend"))
        return self._grader

    # -- tasks ---------------------------------------------------------------------------------

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        made = self.source.make(rng, split, index, self.services)
        gold = make_patch(made.files, made.solution)
        return {"prompt": self.prompt(made), "answer": None,
                "gold": self.gold(gold),
                "meta": {"source": self.source.name, "kind": made.kind, "package": made.package,
                         "statement": made.statement, "files": made.files,
                         "hidden": made.hidden, "fail_to_pass": made.fail_to_pass,
                         "pass_to_pass": made.pass_to_pass, "packages": made.packages,
                         "python_path": made.python_path, "provenance": made.provenance,
                         "patch": gold}}

    def prompt(self, made: Any) -> str:
        return prompts.single_turn(made)

    def gold(self, patch: str) -> str:
        return f"```diff\n{patch}```"

    @staticmethod
    def suite(task: Task) -> Suite:
        meta = task.meta
        return Suite(meta["files"], meta["hidden"], meta["fail_to_pass"], meta["pass_to_pass"],
                     meta["packages"], meta["python_path"])

    # -- verification --------------------------------------------------------------------------

    def check(self, task: Task, completion: str) -> Verdict:
        patch = extract_patch(completion)
        if patch is None:
            return Verdict(dict(ZERO), False, NO_PATCH)
        suite = self.suite(task)
        try:
            changes = apply_patch(patch, suite.files)
        except PatchError as exc:
            return Verdict(dict(ZERO), False, f"The patch does not apply: {exc}")
        return self.grade(task, suite, changes)

    def grade(self, task: Task, suite: Suite, changes: dict[str, str | None]) -> Verdict:
        """Grade changed files: refused (the minimum) when they break a rule, else the tests."""
        if not changes:
            return Verdict({**ZERO, "applies": 1.0}, False, "The patch changes nothing.")
        problem = review(changes, suite.files, suite.packages)
        if problem:
            return Verdict({**ZERO, "applies": 1.0}, False,
                           f"Refused: {problem}. Only the package's source may change, and a fix "
                           "may not reach for the interpreter, the process or the files.")
        return self.grader.grade(task.id, suite, changes)
