"""The instruction-following domain: one class serves every family and the combinations.

Manifest ``params`` choose the constraints: ``{"kinds": ["no_commas"]}`` gives those kinds in
every task, ``{"combine": 3}`` draws three compatible kinds per task. Every task also carries the
``topic`` constraint (mention the topic word) and the ``content`` constraint (a floor of words
and sentences, mostly distinct words).

Content first: a response that misses the topic or the content floor, or that copies one of the
prompt's instruction sentences instead of following it, earns nothing at all, however many format
rules it keeps (a one-word lowercase answer keeps "no commas", "all lowercase" and "at most 60
words"). It must also be prose in the request's language (v3), not a template meeting the counts
with filler: no run of :data:`MAX_CODED_RUN` or more numbered tokens or identifiers, at least
:data:`MIN_FUNCTION_SHARE` of its words English function words, and at most
:data:`MAX_COPIED_SHARE` of its content words copied from the prompt (a shuffled prompt is no
answer). Golds are far inside each bound (``tests/test_generation.py``). Only then do the format
instructions pay.

Reward components: ``constraints`` is the fraction of the task's constraints satisfied, ``all_ok``
is 1 when every one is, ``content`` is 1 when the content gate is met (logged); their weights live
in the manifest (see ``plugin.py``).
"""

from __future__ import annotations

import random
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict
from rlhub_instruct.compose import Built, build, failures, pick_kinds
from rlhub_instruct import text as tx
from rlhub_instruct.constraints import KINDS, Constraint, from_dict

MAX_ATTEMPTS = 20
GATE = ("topic", "content")  # constraints a response must meet before any other one pays
MAX_CHARS = 20_000  # characters; every gold is far shorter, and longer text is not measured
MAX_CODED_RUN = 3  # golds: at most 1 ("## Part 1"); numbered filler: dozens
MIN_FUNCTION_SHARE = 0.12  # golds: at least 0.2; numbered filler and keyword lists: about 0.06
MAX_COPIED_SHARE = 0.8  # golds: at most 0.6; a shuffled prompt: 0.9 and more


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
            if content_gate(built.constraints, built.prompt, ""):  # an echoed prompt earns nothing
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
        if len(completion) > MAX_CHARS:
            return Verdict({"constraints": 0.0, "all_ok": 0.0, "content": 0.0}, False,
                           f"The response is {len(completion)} characters long; these tasks need "
                           f"far fewer (at most {MAX_CHARS} are read).")
        missing = content_gate(constraints, completion, task.prompt_text())
        if missing:
            lines = ["The response does not do the task yet, so no instruction counts:"]
            lines += [f"- {reason}" for reason in missing]
            return Verdict({"constraints": 0.0, "all_ok": 0.0, "content": 0.0}, False,
                           "\n".join(lines))
        failed = failures(constraints, completion)
        ok = not failed
        fraction = 1.0 - len(failed) / len(constraints)
        return Verdict({"constraints": fraction, "all_ok": float(ok), "content": 1.0}, ok,
                       feedback(failed, constraints))


def content_gate(constraints: list[Constraint], text: str, prompt: str) -> list[str]:
    """Why ``text`` does not do the task at all (empty when it does; see the module docstring).

    ``prompt`` is the task's prompt (empty: the copy check is left out, as when the generator
    checks that the echoed prompt itself fails the rest of the gate)."""
    reasons = [f"{c.label}: {reason}. (Instruction: {c.instruction()})"
               for c, reason in failures([c for c in constraints if c.kind in GATE], text)]
    reasons += prose_problems(text, prompt)
    folded = text.casefold()
    copied = [c.instruction() for c in constraints
              if len(c.instruction().split()) >= 5 and c.instruction().casefold() in folded]
    if copied:
        reasons.append(f"the response copies the instruction {copied[0]!r} instead of following it")
    return reasons


def prose_problems(text: str, prompt: str) -> list[str]:
    """Why ``text`` is not prose in the request's language (see the module docstring)."""
    problems = []
    run = tx.longest_coded_run(text)
    if run >= MAX_CODED_RUN:
        problems.append(f"prose: {run} numbered tokens or identifiers in a row; write words")
    share = tx.function_share(text)
    if share < MIN_FUNCTION_SHARE:
        problems.append(f"prose: only {share:.0%} of the words are English function words (the, "
                        f"of, and, ...; expected at least {MIN_FUNCTION_SHARE:.0%}); write "
                        "sentences, not a list of words")
    copied = tx.copied_share(text, prompt) if prompt else 0.0
    if copied > MAX_COPIED_SHARE:
        problems.append(f"prose: {copied:.0%} of the content words are copied from the prompt; "
                        "write your own text")
    return problems


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
