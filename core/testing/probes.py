"""Integrity probes: answers that ignore the task, and how much reward each one gets.

An RL policy is an optimiser: whatever a verifier pays for, it learns. The probe classes
(:data:`PROBE_CLASSES`) run on every domain, each built from the domain's own tasks and golds:

* ``degenerate``: degenerate but compliant, every format rule kept while the task is ignored:
  the prompt's quoted words alone in each common wrapper (lowercase, capitals, quotes, JSON, a
  title), the gold's document with placeholder values, and the gold's final answer or document
  values scrambled (the same pattern, other content);
* ``constant``: :mod:`rlhub.testing.probes_constant`, one answer for every task, searched in the
  domain's own answer space;
* ``hedge``: this task's answer combined with others (``YesNo``, ``True or False``, a value
  joined to a set, every digit, every answer of the space at once), except on domains tagged
  ``code``, which face the code probes instead;
* ``template``: :mod:`rlhub.testing.probes_template`, text built from the prompt's visible parts;
* ``players``: :mod:`rlhub.testing.probes_games`, degenerate players of a game domain;
* ``oversized``: :mod:`rlhub.testing.probes_oversized`;
* ``forged-label``: :mod:`rlhub.testing.probes_labels`.

Rules. A probe that ignores the task must earn the range minimum, with a trainable failure
class, unless it passes because it happens to be right (a constant ``Yes`` on a task whose answer
is yes). *Strict* probes (prompt words only, placeholder documents, templates) are never right, so
they must not pass either. A hedge is sent twice, its own answer first and last: a
verifier that reads one position passes one order (adding candidates gains nothing), one that
accepts any of them passes both, which is the leak; a hedge earns no partial credit either. Each
class reports the probes run, how many passed and the highest reward a probe that did not pass
got; a class that cannot run on a domain (no golds to read answers from, a game, a code domain)
says so and why (``ran: false``), never passing in silence. A manifest's ``hackable: [class]``
marks problems a plugin cannot fix yet as known (they are still reported, never hidden).
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

PROBE_CLASSES = ("degenerate", "constant", "hedge", "template", "players", "oversized",
                 "forged-label")
SEPARATORS = ("", " ", ", ", " or ", "/", " = ", "\n")
#: Joins that make a set or a disjunction of two values, the second a set literal.
SET_JOINS = (" \\cup ", " \\lor ")
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
    ran: bool = True
    reason: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"ran": self.ran, "reason": self.reason, "probes": self.probes,
                "passed": self.passed, "max_reward": self.max_reward,
                "problems": self.problems, "hackable": self.known,
                "seconds": round(self.seconds, 3)}


def cannot_run(name: str, reason: str) -> ProbeReport:
    """The report of a class that cannot run on a domain, saying why."""
    return ProbeReport(name, ran=False, reason=reason)


def ran_or_not(report: ProbeReport, reason: str) -> ProbeReport:
    """``report``, marked as not run (with ``reason``) when it ran no probe at all."""
    if report.probes == 0 and report.ran:
        report.ran, report.reason = False, reason
    return report


def is_game(domain: Domain) -> bool:
    """A game bridged from another ecosystem: its episodes are played move by move."""
    from rlhub.bridges import GameDomain

    return isinstance(domain, GameDomain)


def answer_space(domain: Domain, tasks: Sequence[Task], n: int = 16) -> list[Task]:
    """``tasks`` plus up to ``n`` more of the first split, to read the domain's answers from (a
    task the generator fails to make is left out: the kit's own sample already checks that)."""
    split = domain.manifest.data["splits"][0]
    extra = []
    for index in range(n):
        try:
            extra.append(domain.task(split, SPACE_SEED, index))
        except Exception:  # noqa: BLE001, S112 - a generator's failure is not a probe's finding
            continue
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
    return ran_or_not(report, "the prompts quote no words and the golds hold no document or "
                              "short final answer to imitate")


# -- constant and hedged answers -----------------------------------------------------------------


def _norm(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def space_answers(space: Sequence[Task]) -> list[str]:
    """The distinct final answers of the golds in ``space`` (in order)."""
    found = [slot.answer.strip() for t in space if (slot := answer_slot(t.gold))]
    return list(dict.fromkeys(a for a in found if a))


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
    pairs += [(f"{own}{join}\\{{{other}\\}}", f"\\{{{other}\\}}{join}{own}")
              for other in others[:2] for join in SET_JOINS]
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
    """The ``hedge`` class on the first task with a short final answer."""
    if _is_code(domain):
        return cannot_run("hedge", "a code domain: a program joined with another answer is still "
                                   "the same program; the code probes cover it")
    report = ProbeReport("hedge")
    for task in [t for t in tasks if answer_slot(t.gold)][:1]:
        for hedge in hedge_probes(task, space):
            judge_hedge(domain, task, hedge, report)
    return ran_or_not(report, "no gold has a short final answer to hedge")
