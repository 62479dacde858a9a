"""Forged-label probes: labels a client could send to get paid for its own gold answer.

Each probe goes through :class:`rlhub.labels.LabelGate`, the very path ``rlhub serve`` uses for
``/get_reward``, ``/v1/verify`` and ``/v1/episodes``, with a kit key and this domain served:

* controls: the genuine label (coordinates only) and the genuine signed label, with the gold
  completion, must be accepted and score what ``domain.verify`` gives the gold;
* forgeries, each sent with the completion that would pass the forged task: another task's
  answer and gold put in this task; extra tests or notes in ``meta``; another prompt; this task
  under another task's coordinates; a custom task id with no coordinates; a signature made with
  another key, or copied from another task; the domain not served; a label nested 100,000 deep.

Every forgery must be refused: the range minimum with failure class ``label``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rlhub.domain import Domain
from rlhub.errors import DomainNotFound, LabelError
from rlhub.labels import At, LabelGate, make_label
from rlhub.manifest import Manifest
from rlhub.task import Score, Task
from rlhub.testing.probes import ProbeReport

KIT_KEY = b"rlhub-contract-kit-label-key-0001"
OTHER_KEY = b"someone-else-entirely-0000000001"


class OneDomain:
    """The registry view a :class:`LabelGate` needs, holding one domain."""

    def __init__(self, domain: Domain):
        self.domain = domain

    def manifest(self, domain_id: str) -> Manifest:
        return self.get(domain_id).manifest

    def get(self, domain_id: str) -> Domain:
        if domain_id != self.domain.id:
            raise DomainNotFound(f"unknown domain {domain_id!r}")
        return self.domain


def refusal(manifest: Manifest, exc: LabelError) -> Score:
    """The score of a refused label: the range minimum, failure class ``label``."""
    lo, _ = manifest.reward_range
    return Score(lo, dict.fromkeys(manifest.components, 0.0), False, "", f"LabelError: {exc}",
                 failure="label")


def score_label(gate: LabelGate, domain: Domain, label: Any, completion: str) -> Score:
    """What the server answers for ``(label, completion)``: verified, or a refusal."""
    try:
        task = gate.open(label)
    except LabelError as exc:
        return refusal(domain.manifest, exc)
    return domain.verify(task, completion)


def _forged(task: Task, **changes: Any) -> dict[str, Any]:
    return {**task.to_dict(), **changes}


def forgeries(domain: Domain, task: Task, at: At, other: Task) -> dict[str, tuple[Any, str]]:
    """``{name: (label, completion)}`` for every forgery of ``task`` (see the module docstring)."""
    passing = other.gold or str(other.answer)
    swapped = Task.from_dict(_forged(task, answer=other.answer, gold=other.gold, meta=other.meta))
    extra_meta = Task.from_dict(_forged(task, meta={**task.meta, "tests": "assert True",
                                                    "notes": "any answer is correct"}))
    new_prompt = Task.from_dict(_forged(task, prompt=other.prompt, answer=other.answer,
                                        meta=other.meta))
    custom_id = Task.from_dict(_forged(task, id="my-own-task", answer=other.answer,
                                       gold=other.gold, meta=other.meta))
    copied_sig = make_label(swapped, at=at)
    copied_sig["sig"] = make_label(task, key=KIT_KEY)["sig"]
    nested: Any = "deep"
    for _ in range(100_000):
        nested = [nested]
    return {
        "another task's answer": (make_label(swapped, at=at), passing),
        "another task's answer, no coordinates": (make_label(swapped), passing),
        "extra tests in meta": (make_label(extra_meta, at=at), passing),
        "another prompt": (make_label(new_prompt, at=at), passing),
        "custom id, no coordinates": (make_label(custom_id), passing),
        "signed with another key": (make_label(swapped, key=OTHER_KEY), passing),
        "signature of another task": (copied_sig, passing),
        "label string nested 100,000 deep": (_deep_json(domain.id, task), passing),
        "nested object": ({"domain": domain.id, "task": _forged(task, meta={"x": nested})},
                          passing),
    }


def _deep_json(domain_id: str, task: Task, depth: int = 100_000) -> str:
    text = json.dumps({"domain": domain_id, "task": _forged(task, meta={"x": "@@"})})
    return text.replace('"@@"', "[" * depth + "]" * depth)


def check_forged_labels(domain: Domain, tasks: Sequence[Task],
                        space: Sequence[Task]) -> ProbeReport:
    """The ``forged-label`` class on the domain's first task."""
    report = ProbeReport("forged-label")
    split = domain.manifest.data["splits"][0]
    at = At(split, 0, 0)
    task = domain.task(split, 0, 0)
    other = next((t for t in space if (t.answer, t.gold) != (task.answer, task.gold)), None)
    gate = LabelGate(OneDomain(domain), key=KIT_KEY)
    report.problems += _controls(domain, gate, task, at)
    if other is None:
        return report
    for name, (label, completion) in forgeries(domain, task, at, other).items():
        _expect_refused(domain, gate, name, label, completion, report)
    closed = LabelGate(OneDomain(domain), key=KIT_KEY, domains=())
    _expect_refused(domain, closed, "domain not served", make_label(task, at=at), task.gold or "",
                    report)
    return report


def _controls(domain: Domain, gate: LabelGate, task: Task, at: At) -> list[str]:
    if task.gold is None:
        return []
    expected = domain.verify(task, task.gold).reward
    labels = {"genuine signed label": make_label(task, key=KIT_KEY)}
    if domain.manifest.data["determinism"] == "seeded":
        labels["genuine label"] = make_label(task, at=at)
    problems = []
    for name, label in labels.items():
        score = score_label(gate, domain, label, task.gold)
        if score.failure == "label" or score.reward != expected:
            problems.append(f"{domain.id}: the {name} of task {task.id} scored {score.reward:g} "
                            f"(expected {expected:g}, as verified directly): {score.error}")
    return problems


def _expect_refused(domain: Domain, gate: LabelGate, name: str, label: Any, completion: str,
                    report: ProbeReport) -> None:
    lo, _ = domain.manifest.reward_range
    score = score_label(gate, domain, label, completion)
    report.probes += 1
    report.passed += int(score.passed)
    report.max_reward = max(score.reward, report.max_reward or lo)
    if score.failure != "label" or score.reward > lo:
        report.problems.append(f"{domain.id}: the forged label {name!r} was accepted (reward "
                               f"{score.reward:g}, class {score.failure!r}); it must be refused "
                               f"with the minimum {lo:g} and class 'label'")
