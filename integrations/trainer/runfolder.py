"""A local training run's folder, read back: what its report and its summary are made of.

The trainer (:mod:`rlhub.integrations.trainer.local`) writes ``run.json``, ``events.jsonl``,
``scheduler.jsonl``, ``trajectories/``, and at the end ``heldout.json`` and ``summary.json``.
:func:`read_run` reads what is there, so an unfinished run (no summary yet) can be looked at too.
A GRPO trajectory's job key names the step that generated it (:func:`job_key`), so rewards and
zero-variance groups are taken per step from the trajectories themselves. Imports no torch.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlhub.errors import RlhubError
from rlhub.failures import is_trainable
from rlhub.integrations.trainer.controls import EVENTS

SUMMARY = "summary.json"
HELDOUT = "heldout.json"  # per-item held-out rewards before and after, for paired statistics
CURVE = "heldout_curve.jsonl"  # one line per held-out evaluation (before, in-run, after)
STEP_MARK = "#step"
SAMPLE_COLUMNS = ["job_key", "domain", "task_id", "reward", "failure"]


def job_key(task_id: str, step: int, sample: int) -> str:
    """The job key of sample ``sample`` of ``task_id`` generated at GRPO step ``step`` (from 0)."""
    return f"{task_id}{STEP_MARK}{step}/{sample}"


def step_of(key: str) -> int | None:
    """The GRPO step of a trajectory, counted from 1 as the trainer's logs count (the key holds
    TRL's global step before the update); None for a key :func:`job_key` did not make."""
    _, mark, rest = key.rpartition(STEP_MARK)
    step = rest.split("/", 1)[0]
    return int(step) + 1 if mark and step.isdigit() else None


def is_training_run(path: str | Path) -> bool:
    """Whether ``path`` holds a training run (the trainer's event log or summary)."""
    return (Path(path) / EVENTS).is_file() or (Path(path) / SUMMARY).is_file()


@dataclass
class Group:
    """One prompt group of one GRPO step: its trainable rewards and its faults."""

    step: int
    domain: str
    rewards: list[float] = field(default_factory=list)
    faults: dict[str, int] = field(default_factory=dict)

    @property
    def zero_variance(self) -> bool:
        """Every scored sample got the same reward: no GRPO signal."""
        return len(self.rewards) > 1 and max(self.rewards) == min(self.rewards)


@dataclass
class TrainingRun:
    """Everything a training run folder holds, read once (see :func:`read_run`)."""

    path: Path
    run: dict[str, Any]
    summary: dict[str, Any] | None
    heldout: dict[str, Any] | None
    events: list[dict[str, Any]]
    weights: list[dict[str, Any]]
    groups: list[Group]

    @property
    def domains(self) -> list[str]:
        return list(self.run.get("domains") or dict.fromkeys(g.domain for g in self.groups))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("kind") == kind]


def read_run(path: str | Path) -> TrainingRun:
    """Read the training run at ``path``; what the trainer has not written yet is None or empty."""
    from rlhub.scheduler import read_weights
    from rlhub.scheduler.runlog import log_path

    path = Path(path)
    if not is_training_run(path):
        raise RlhubError(f"{path}: expected a training run ({EVENTS} or {SUMMARY} from `rlhub "
                         "train`), found neither")
    return TrainingRun(path, _json(path / "run.json") or {}, _json(path / SUMMARY),
                       _json(path / HELDOUT), _jsonl(path / EVENTS),
                       read_weights(path) if log_path(path).is_file() else [], _groups(path))


def _json(path: Path) -> Any:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise RlhubError(f"{path}: expected JSON, found {exc}") from exc


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for n, line in enumerate(lines, 1):
        try:
            out.append(json.loads(line))
        except ValueError:
            if n < len(lines):  # a run still writing may have cut its last line short
                raise RlhubError(f"{path} line {n}: expected a JSON object, found "
                                 f"{line[:120]!r}") from None
    return out


def _groups(path: Path) -> list[Group]:
    """The GRPO groups of the stored trajectories, in step order."""
    from rlhub.store import TrajectoryStore

    table = TrajectoryStore(str(path)).read_table().select(SAMPLE_COLUMNS).to_pylist()
    groups: dict[tuple[int, str, str], Group] = {}
    for row in table:
        step = step_of(row["job_key"])
        if step is None:
            continue
        group = groups.setdefault((step, row["domain"], row["task_id"]),
                                  Group(step, row["domain"]))
        if is_trainable(row["failure"]):
            group.rewards.append(float(row["reward"]))
        else:
            group.faults[row["failure"]] = group.faults.get(row["failure"], 0) + 1
    return sorted(groups.values(), key=lambda g: g.step)


@dataclass
class Point:
    """One bin of steps of one domain: the mean of its groups' mean rewards with a 95% normal
    interval over the groups, and the share of its groups with zero reward variance."""

    step: float
    mean: float
    lo: float
    hi: float
    zero_variance: float
    groups: int


def curves(groups: list[Group], bins: int = 30) -> dict[str, list[Point]]:
    """Per domain, training reward and zero-variance share over steps, in at most ``bins`` bins.

    A prompt group is the unit (its samples share a prompt and are not independent), so the
    interval is mean +- 1.96 standard errors over the bin's group means.
    """
    last = max((g.step for g in groups), default=0)
    width = max(1, math.ceil(last / bins))
    binned: dict[str, dict[int, list[Group]]] = {}
    for g in groups:
        binned.setdefault(g.domain, {}).setdefault((g.step - 1) // width, []).append(g)
    return {d: [_point(b, width, gs) for b, gs in sorted(by_bin.items())]
            for d, by_bin in binned.items()}


def _point(index: int, width: int, groups: list[Group]) -> Point:
    means = np.array([np.mean(g.rewards) for g in groups if g.rewards])
    zero = sum(g.zero_variance for g in groups) / len(groups)
    mid = index * width + (width + 1) / 2
    if means.size == 0:
        return Point(mid, math.nan, math.nan, math.nan, zero, 0)
    half = 1.959964 * means.std(ddof=1) / math.sqrt(means.size) if means.size > 1 else 0.0
    return Point(mid, float(means.mean()), float(means.mean() - half),
                 float(means.mean() + half), zero, int(means.size))


def bootstrap_mean(values: list[float | None], seed: int = 0, resamples: int = 2000
                   ) -> tuple[float, float, float] | None:
    """Mean of the finite ``values`` and its 95% percentile-bootstrap interval; None if none."""
    data = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if data.size == 0:
        return None
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, (resamples, data.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(data.mean()), float(lo), float(hi)
