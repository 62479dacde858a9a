"""Integrity probes: answers that ignore the task, and how much reward each one gets.

An RL policy is an optimiser: whatever a verifier pays for, it learns. Four probe classes run on
every domain (:data:`PROBE_CLASSES`), each built from the domain's own tasks and golds:

* ``degenerate``: degenerate but compliant, every format rule kept while the task is ignored:
  the prompt's quoted words alone in each common wrapper (lowercase, capitals, quotes, JSON, a
  title), the gold's document with placeholder values, and the gold's final answer or document
  values scrambled (the same pattern, other content);
* ``hedge``: constant and hedged answers from the domain's own answer space: other tasks'
  golds, their final answers and common constants (``0``, ``1``, ``Yes``, ``True``, empty) in
  this task's answer slot; and hedges, this task's answer combined with others (``YesNo``,
  ``True or False``, every digit, every answer of the space at once), except on domains tagged
  ``code``, which face the code probes instead;
* ``oversized``: :mod:`rlhub.testing.probes_oversized`;
* ``forged-label``: :mod:`rlhub.testing.probes_labels`.

Rules. A probe that ignores the task must earn the range minimum, with a trainable failure
class, unless it passes because it happens to be right (a constant ``Yes`` on a task whose answer
is yes). *Strict* probes (prompt words only, placeholder documents) are never right, so they must
not pass either. A hedge is sent twice, its own answer first and last: a
verifier that reads one position passes one order (adding candidates gains nothing), one that
accepts any of them passes both, which is the leak; a hedge earns no partial credit either. Each class reports the probes run, how many passed and
the highest reward a probe that did not pass got; a manifest's ``hackable: [class]`` marks
problems a plugin cannot fix yet as known (they are still reported, never hidden).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlhub.domain import Domain
from rlhub.task import Score, Task
from rlhub.testing.answer_space import (
    answer_slot,
    document_of,
    map_leaves,
    placeholder,
    scramble,
)

PROBE_CLASSES = ("degenerate", "hedge", "oversized", "forged-label")
CONSTANTS = ("0", "1", "-1", "2", "Yes", "No", "yes", "no", "True", "False", "A", "B", "None",
             "[]", "{}", "")
SEPARATORS = ("", " ", ", ", " or ", "/", " = ", "\n")
SPACE_SEED = 4242
_QUOTED = re.compile(r"\"([^\"\n]{1,60})\"")


@dataclass(frozen=True)
class Probe:
    """One probe completion; ``strict`` ones are wrong by construction and must never pass."""

    name: str
    completion: str
    strict: bool


@dataclass
class ProbeReport:
    """What one probe class found on one domain (``rlhub check --json`` prints it)."""

    name: str
    probes: int = 0
    passed: int = 0
    max_reward: float | None = None
    problems: list[str] = field(default_factory=list)
    known: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"probes": self.probes, "passed": self.passed, "max_reward": self.max_reward,
                "problems": self.problems, "hackable": self.known}


def answer_space(domain: Domain, tasks: Sequence[Task], n: int = 8) -> list[Task]:
    """``tasks`` plus ``n`` more of the first split, to read the domain's answers from."""
    split = domain.manifest.data["splits"][0]
    extra = domain.sample(n, split=split, seed=SPACE_SEED)
    return list(tasks) + extra


def judge_probe(domain: Domain, task: Task, probe: Probe, report: ProbeReport) -> Score:
    """Verify one probe and record what it earned and any problem in ``report``."""
    lo, _ = domain.manifest.reward_range
    score = domain.verify(task, probe.completion)
    report.probes += 1
    report.passed += int(score.passed)
    what = f"the {report.name} probe {probe.name!r} on task {task.id}"
    if not score.trainable:
        report.problems.append(f"{domain.id}: {what} failed with class {score.failure!r}, not "
                               f"the answer's (expected 'answer'): {score.error}")
    elif score.passed and probe.strict:
        report.problems.append(f"{domain.id}: {what} passed with reward {score.reward:g}; an "
                               "answer that ignores the task must not pass")
    elif not score.passed and score.reward > lo:
        report.problems.append(f"{domain.id}: {what} earned {score.reward:g} without passing; "
                               f"an answer that ignores the task must earn the minimum {lo:g}")
    if not score.passed or probe.strict:
        report.max_reward = max(score.reward, report.max_reward or lo)
    return score


# -- degenerate but compliant --------------------------------------------------------------------

_WRAPPERS: dict[str, Callable[[str], str]] = {
    "plain": lambda s: s,
    "lowercase": str.lower,
    "capitals": str.upper,
    "quoted": lambda s: f'"{s}"',
    "json": lambda s: json.dumps({"response": s}),
    "title": lambda s: f"<<{s}>>\n{s}",
}


def degenerate_probes(task: Task) -> list[Probe]:
    """Format-compliant completions that do not do ``task`` (see the module docstring)."""
    probes: list[Probe] = []
    gold = task.gold or ""
    slot = answer_slot(gold)
    words = " ".join(dict.fromkeys(_QUOTED.findall(task.prompt_text())))
    if words:  # strict, unless the prompt quotes the answer itself ("Repeat the word "abc"")
        strict = slot is None or _norm(slot.answer) not in _norm(words)
        probes += [Probe(f"prompt words, {name}", wrap(words), strict)
                   for name, wrap in _WRAPPERS.items()]
    document = document_of(gold)
    if document is not None:
        keep = document.language == "csv"
        probes.append(Probe("placeholder document", document.render(
            map_leaves(document.value, placeholder, keep_first_row=keep)), True))
        probes.append(Probe("scrambled document values", document.render(
            map_leaves(document.value, scramble, keep_first_row=keep)), False))
    if slot is not None and scramble(slot.answer) != slot.answer:
        probes.append(Probe("scrambled final answer", slot.fill(scramble(slot.answer)), False))
    return probes


def check_degenerate(domain: Domain, tasks: Sequence[Task], space: Sequence[Task]) -> ProbeReport:
    """The ``degenerate`` class on the first two tasks."""
    report = ProbeReport("degenerate")
    for task in tasks[:2]:
        for probe in degenerate_probes(task):
            judge_probe(domain, task, probe, report)
    return report


# -- constant and hedged answers -----------------------------------------------------------------


def _norm(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def space_answers(space: Sequence[Task]) -> list[str]:
    """The distinct final answers of the golds in ``space`` (in order)."""
    found = [slot.answer.strip() for t in space if (slot := answer_slot(t.gold))]
    return list(dict.fromkeys(a for a in found if a))


def constant_probes(task: Task, space: Sequence[Task]) -> list[Probe]:
    """Other tasks' golds whole, and constants and other answers in this task's answer slot."""
    others = [t.gold for t in space if t.gold and t.id != task.id and t.gold != task.gold]
    probes = [Probe(f"another task's gold #{i + 1}", g, False)
              for i, g in enumerate(dict.fromkeys(others)) if i < 3]
    slot = answer_slot(task.gold)
    if slot is not None:
        values = list(dict.fromkeys([*CONSTANTS, *space_answers(space)]))
        probes += [Probe(f"constant {v!r}", slot.fill(v), False) for v in values
                   if v != slot.answer.strip()]
    return probes


@dataclass(frozen=True)
class Hedge:
    """One hedge in two orders: the task's own answer first, and last.

    A verifier that reads the first (or last) candidate passes one order: the policy gains
    nothing by adding candidates. One that accepts any candidate passes both: that is the leak.
    """

    name: str
    first: str
    last: str


def hedge_probes(task: Task, space: Sequence[Task]) -> list[Hedge]:
    """This task's answer with others at once, and the whole answer space at once."""
    slot = answer_slot(task.gold)
    if slot is None:
        return []
    own = slot.answer.strip()
    others = [a for a in [*space_answers(space), "Yes", "No", "True", "False", "0", "1"]
              if _norm(a) and _norm(a) != _norm(own)]
    others = list(dict.fromkeys(others))[:4]
    pairs = [(f"{own}{sep}{other}", f"{other}{sep}{own}") for other in others
             for sep in SEPARATORS]
    pairs += [(join.join([own, *others]), join.join([*others, own])) for join in (" ", "")]
    pairs += [("0123456789", "9876543210"), ("0 1 2 3 4 5 6 7 8 9", "9 8 7 6 5 4 3 2 1 0")]
    return [Hedge(f"hedge {a!r}", slot.fill(a), slot.fill(b)) for a, b in dict.fromkeys(pairs)
            if _norm(own) not in (_norm(a), _norm(b))]


def judge_hedge(domain: Domain, task: Task, hedge: Hedge, report: ProbeReport) -> None:
    """Verify both orders of a hedge: passing in both, or partial credit, is a problem."""
    lo, _ = domain.manifest.reward_range
    scores = [judge_probe(domain, task, Probe(f"{hedge.name} ({order})", text, False), report)
              for order, text in (("own answer first", hedge.first),
                                  ("own answer last", hedge.last))]
    if all(s.passed for s in scores):
        report.problems.append(f"{domain.id}: the {report.name} probe {hedge.name!r} on task "
                               f"{task.id} passed with its own answer first and last; a verifier "
                               "must not accept whichever of several answers is right")
        report.max_reward = max(scores[0].reward, report.max_reward or lo)


def _is_code(domain: Domain) -> bool:
    """Code domains get no hedges: a program joined with another answer (``prog, True``) is still
    the same program; another task's program as a constant, and the code probes, still apply."""
    return "code" in domain.manifest.tags


def check_hedge(domain: Domain, tasks: Sequence[Task], space: Sequence[Task]) -> ProbeReport:
    """The ``hedge`` class: constants on the first two tasks, hedges on the first."""
    report = ProbeReport("hedge")
    for i, task in enumerate(tasks[:2]):
        for probe in constant_probes(task, space):
            judge_probe(domain, task, probe, report)
        for hedge in hedge_probes(task, space) if i == 0 and not _is_code(domain) else ():
            judge_hedge(domain, task, hedge, report)
    return report
