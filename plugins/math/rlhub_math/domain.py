r"""The math domain: one class serves every (family, level) of the catalog.

``generate`` draws a :class:`~rlhub_math.problem.Problem` from the family's generator using only the
seeded ``rng``. Train and test are disjoint: every problem has a canonical identity whose hash puts
it in exactly one split (1 in ``TEST_SHARE`` problems belongs to test), and the generator is
redrawn from the same ``rng`` until the problem belongs to the requested split.

``check`` is the named ``math`` verifier (math-verify on the last ``\boxed{}``) followed by the
final-form gate of :mod:`rlhub_math.forms`, so that a boxed copy of the question's expression
(``\boxed{\binom{10}{5}}``) does not earn the reward even though it evaluates to the answer.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict, last_boxed
from rlhub_math.families import Generator, generator
from rlhub_math.forms import unevaluated
from rlhub_math.problem import Problem

TEST_SHARE = 8
MAX_DRAWS = 400


def split_of(identity: str) -> str:
    """The split a problem belongs to, from a stable hash of its identity."""
    bucket = int.from_bytes(hashlib.sha256(identity.encode()).digest()[:8], "big") % TEST_SHARE
    return "test" if bucket == 0 else "train"


class MathDomain(Domain):
    """A procedural math domain; ``params`` names the ``family`` and ``level`` of the catalog."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.family = str(self.params["family"])
        self.level = int(self.params["level"])
        self._generate: Generator = generator(self.family, self.level)

    def draw(self, rng: random.Random, split: str) -> Problem:
        """A problem of ``split``, redrawing from ``rng`` until the problem's hash puts it there."""
        for _ in range(MAX_DRAWS):
            problem = self._generate(rng)
            if split_of(problem.identity) == split:
                return problem
        raise RuntimeError(
            f"domain {self.id!r}: found no {split!r} problem in {MAX_DRAWS} draws; "
            "the family's problem space is too small for its split share"
        )

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        problem = self.draw(rng, split)
        return {
            "prompt": problem.prompt(),
            "answer": problem.answer,
            "gold": problem.gold(),
            "meta": {
                "family": self.family,
                "level": self.level,
                "form": problem.form,
                "question": problem.question,
            },
        }

    def check(self, task: Task, completion: str) -> Verdict:
        verdict = super().check(task, completion)
        if not verdict.passed:
            return verdict
        boxed = (last_boxed(completion) or "").strip()
        reason = unevaluated(boxed, str(task.meta.get("form", "rational")))
        if reason is None:
            return verdict
        feedback = (
            f"The boxed answer {boxed[:120]!r} has the right value but is not a final result: "
            f"{reason}. Carry out the computation and box only the simplified value."
        )
        return Verdict({**verdict.components, "correct": 0.0}, False, feedback, verdict.exec)


def make(manifest: Manifest) -> MathDomain:
    """The factory named by every rlhub-math manifest."""
    return MathDomain(manifest)
