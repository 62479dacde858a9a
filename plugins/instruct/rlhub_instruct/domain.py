"""The instruction-following domain: one class serves every family and the combinations.

Manifest ``params`` choose the constraints: ``{"kinds": ["no_commas"]}`` gives those kinds in
every task, ``{"combine": 3}`` draws three compatible kinds per task. Every task also carries the
``topic`` constraint (mention the topic word), so empty, garbage and off-topic text never pass.

Reward components: ``constraints`` is the fraction of the task's constraints satisfied, and
``all_ok`` is 1 when every one is; their weights live in the manifest (see ``plugin.py``).
"""

from __future__ import annotations

import random
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict
from rlhub_instruct.compose import Built, build, failures, pick_kinds
from rlhub_instruct.constraints import KINDS, Constraint, from_dict

MAX_ATTEMPTS = 20


class InstructDomain(Domain):
    """IFEval-style tasks: a writing request plus verifiable constraints on the response."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.kinds: list[str] = list(self.params.get("kinds", []))
        self.combine: int = int(self.params.get("combine", 0))
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown or bool(self.kinds) == bool(self.combine):
            raise ValueError(f"domain {self.id!r}: expected params with either 'kinds' (a list of "
                             f"{sorted(KINDS)}) or 'combine' (an int); found {self.params!r}")

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        for _ in range(MAX_ATTEMPTS):
            built = build(rng, self.kinds or pick_kinds(rng, self.combine))
            broken = failures(built.constraints, built.gold)
            if broken:
                raise RuntimeError(f"{self.id}: gold completion fails {broken} (generator bug)")
            if failures(built.constraints, built.prompt):  # an echoed prompt must not pass
                return self._task(built)
        raise RuntimeError(f"{self.id}: {MAX_ATTEMPTS} draws in a row let the echoed prompt pass")

    @staticmethod
    def _task(built: Built) -> dict[str, Any]:
        return {
            "prompt": built.prompt,
            "answer": {"constraints": [c.to_dict() for c in built.constraints]},
            "gold": built.gold,
            "meta": {"kinds": [c.kind for c in built.constraints],
                     "request": built.request.to_dict()},
        }

    def check(self, task: Task, completion: str) -> Verdict:
        constraints = constraints_of(task)
        failed = failures(constraints, completion)
        ok = not failed
        fraction = 1.0 - len(failed) / len(constraints)
        return Verdict({"constraints": fraction, "all_ok": float(ok)}, ok, feedback(failed, constraints))


def constraints_of(task: Task) -> list[Constraint]:
    """The constraints stored in ``task.answer``."""
    answer = task.answer
    if not isinstance(answer, dict) or not answer.get("constraints"):
        raise ValueError(f"instruct: expected task.answer = {{'constraints': [...]}}, found {answer!r}")
    return [from_dict(item) for item in answer["constraints"]]


def feedback(failed: list[tuple[Constraint, str]], constraints: list[Constraint]) -> str:
    """One line per failed instruction, naming it, restating it and saying what was found."""
    if not failed:
        return ""
    lines = [f"{len(failed)} of {len(constraints)} instructions were not followed:"]
    lines += [f"- {c.label}: {reason}. (Instruction: {c.instruction()})" for c, reason in failed]
    return "\n".join(lines)


def make(manifest: Manifest) -> InstructDomain:
    """The factory named by every manifest of this plugin."""
    return InstructDomain(manifest)
