"""The ``constant`` probe class: one answer given to every task, searched in the domain's own
answer space.

A policy that finds one answer paid on many tasks stops reading them: a reasoning-gym scorer that
credits a matching prefix of the printed number paid ``0`` in full on every probability below one.
So the candidates come from the domain itself (:func:`~rlhub.testing.answer_space.answer_candidates`:
the final answers of the golds of many tasks, their most common values and prefixes, digits,
signs, options), each put in the answer slot of the task's gold, and on domains without golds
alone and in the usual answer wrappers. Other tasks' golds are sent whole as well.

Rules, on top of :func:`~rlhub.testing.probes.judge_probe`'s (a probe that does not pass earns
the minimum): a candidate is first tried on the first two tasks; one that earns more than the
minimum on either is tried on up to :data:`SPREAD` more, and **any single answer that earns reward
on two tasks whose gold answers differ is a hack, whatever the scorer's ``passed`` says**. Golds
differ when neither passes on the other's task (``0.5`` and ``1/2`` are one answer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rlhub.domain import Domain
from rlhub.task import Task
from rlhub.testing.answer_space import Slot, answer_candidates, answer_slot
from rlhub.testing.probes import (
    Probe,
    ProbeReport,
    _norm,
    cannot_run,
    is_game,
    judge_probe,
    ran_or_not,
)

SPREAD = 6
BARE = 24  # candidates per wrapper on a domain without golds
#: How a bare candidate is sent when the domain has no gold to take the format from.
WRAPPERS: dict[str, Callable[[str], str]] = {
    "alone": lambda c: c, "in answer tags": lambda c: f"<answer>{c}</answer>",
    "boxed": lambda c: f"\\boxed{{{c}}}", "on an answer line": lambda c: f"Answer: {c}"}


@dataclass(frozen=True)
class Shot:
    """A task and how a candidate is written for it (its gold's slot, or a wrapper)."""

    task: Task
    fill: Callable[[str], str]
    own: str | None  # the task's own final answer, when its gold shows one


def shots(tasks: Sequence[Task], wrap: Callable[[str], str] | None = None) -> list[Shot]:
    """Each task with its gold's slot, else with ``wrap`` (left out when there is neither)."""
    found = []
    for task in tasks:
        slot: Slot | None = answer_slot(task.gold)
        if slot is not None:
            found.append(Shot(task, slot.fill, slot.answer.strip()))
        elif wrap is not None:
            found.append(Shot(task, wrap, None))
    return found


def check_constant(domain: Domain, tasks: Sequence[Task], space: Sequence[Task]) -> ProbeReport:
    """The ``constant`` class (see the module docstring)."""
    if is_game(domain):
        return cannot_run("constant", "a game: its players probe plays constant moves")
    report = ProbeReport("constant")
    _other_golds(domain, tasks, space, report)
    golds = [slot.answer for t in space if (slot := answer_slot(t.gold))]
    firsts = {t.id for t in tasks[:2]}
    pool = [t for t in space if t.id not in firsts]
    if golds:
        for candidate in answer_candidates(golds):
            _search(domain, candidate, "", shots(tasks[:2]), shots(pool), report)
    elif not domain.manifest.data["gold"] and "code" not in domain.manifest.tags:
        for label, wrap in WRAPPERS.items():
            for candidate in answer_candidates(_short_answers(tasks))[:BARE]:
                _search(domain, candidate, label, shots(tasks[:2], wrap), shots(pool, wrap),
                        report)
    return ran_or_not(report, "its golds show no short final answer for a constant to replace, "
                              "and no task's gold differs from another's")


def _other_golds(domain: Domain, tasks: Sequence[Task], space: Sequence[Task],
                 report: ProbeReport) -> None:
    """Other tasks' golds, whole, on the first two tasks (at most three each)."""
    for task in tasks[:2]:
        others = [t.gold for t in space if t.gold and t.gold != task.gold and t.id != task.id]
        for i, gold in enumerate(list(dict.fromkeys(others))[:3]):
            judge_probe(domain, task, Probe(f"another task's gold #{i + 1}", gold, False), report)


def _short_answers(tasks: Sequence[Task]) -> list[str]:
    """Without golds, the candidates' seeds: the tasks' answers when they are short strings."""
    return [str(t.answer) for t in tasks if isinstance(t.answer, (str, int, float))
            and 0 < len(str(t.answer)) <= 40]


def _search(domain: Domain, candidate: str, label: str, first: list[Shot], rest: list[Shot],
            report: ProbeReport) -> None:
    """Try ``candidate`` on the first shots, then spread it when it earned anything."""
    lo, _ = domain.manifest.reward_range
    name = f"constant {candidate!r}" + (f" {label}" if label else "")
    earned = {id(s): _earned(domain, s, candidate, name, report) for s in first}
    if max(earned.values(), default=lo) <= lo:
        return
    earned |= {id(s): _earned(domain, s, candidate, name, report) for s in rest[:SPREAD]}
    differing = _differing(domain, [s for s in first + rest[:SPREAD] if earned[id(s)] > lo])
    if len(differing) >= 2:
        ids = ", ".join(s.task.id for s in differing[:4])
        report.problems.append(f"{domain.id}: the constant probe {name!r} earned reward on "
                               f"{len(differing)} tasks whose gold answers differ ({ids}); a "
                               "single answer that ignores the task must not be paid, whatever "
                               "the scorer's 'passed' says")
        report.max_reward = max([report.max_reward or lo, *(earned[id(s)] for s in differing)])


def _earned(domain: Domain, shot: Shot, candidate: str, name: str, report: ProbeReport) -> float:
    """The reward ``candidate`` earns on ``shot`` (the minimum when it is the task's own answer,
    which is not tried)."""
    if shot.own is not None and _norm(shot.own) == _norm(candidate):
        return domain.manifest.reward_range[0]
    probe = Probe(name, shot.fill(candidate), False)
    return judge_probe(domain, shot.task, probe, report).reward


def _differing(domain: Domain, paid: list[Shot]) -> list[Shot]:
    """The largest set of ``paid`` shots whose golds are pairwise different answers."""
    kept: list[Shot] = []
    for shot in paid:
        if all(_golds_differ(domain, shot, other) for other in kept):
            kept.append(shot)
    return kept


def _golds_differ(domain: Domain, a: Shot, b: Shot) -> bool:
    """Whether two tasks have different answers: neither's gold passes on the other's task.
    Two ids that name one task (an infinite stream may give every seed the same tasks) share it."""
    if _same_task(a.task, b.task):
        return False
    if a.own is None or b.own is None:
        return a.task.answer != b.task.answer or a.task.answer is None
    if _norm(a.own) == _norm(b.own):
        return False
    return not (domain.verify(b.task, b.fill(a.own)).passed
                or domain.verify(a.task, a.fill(b.own)).passed)


def _same_task(a: Task, b: Task) -> bool:
    """Whether two tasks differ only in their ids."""
    return (a.domain, a.prompt, a.answer, a.gold, a.meta) == (b.domain, b.prompt, b.answer,
                                                              b.gold, b.meta)
