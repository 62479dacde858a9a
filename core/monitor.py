"""Run monitoring: TensorBoard scalars per domain and reward-distribution shift detection.

:class:`Monitor` takes finished trajectories (``observe``) and, on ``flush``, writes
``reward/<domain>/mean``, ``reward/<domain>/std``, ``pass_rate/<domain>`` (over the trajectories
since the last flush), cumulative ``sandbox/<status>`` counts and cumulative
``failures/<domain>/<class>`` counts of every failure class that is not the model's to TensorBoard
event files. Such a trajectory (:mod:`rlhub.failures`) is counted there and nowhere else: its
reward says nothing about the model, so it stays out of the reward scalars and the shift test.

:class:`ShiftDetector` keeps, per domain, a reference window (the first ``window`` values) and a
sliding current window of the latest ``window`` values; every ``stride`` new values it runs a
two-sample Kolmogorov-Smirnov test (:func:`ks_2samp`, SciPy's, imported on first use). A p-value
below ``alpha`` logs a warning naming the domain on the ``rlhub.monitor`` logger, once per shift
episode (it re-arms when the windows agree again).

The test assumes independent values. The rollouts of one GRPO prompt group are not: they share a
prompt, and a prompt the policy can or cannot solve makes all of them pass or fail together. A
trainer therefore builds its monitor with ``shift_unit="group"`` and feeds one value per group
(its mean reward, :meth:`Monitor.observe_group`); tested as 64 independent rewards, 8 groups of 8
raised false alarms whenever a few hard prompts came in a row (real demo runs halved the learning
rate three times on a domain whose reward had not moved). ``rlhub eval`` tests trajectories.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass
from typing import Any

from rlhub.failures import is_trainable

log = logging.getLogger("rlhub.monitor")
SHIFT_UNITS = ("trajectory", "group")


def ks_2samp(a: list[float], b: list[float]) -> tuple[float, float]:
    """``(D, p)``: SciPy's two-sample Kolmogorov-Smirnov statistic and p-value."""
    from scipy import stats

    res = stats.ks_2samp(a, b)
    return float(res.statistic), float(res.pvalue)


@dataclass
class Shift:
    """A detected shift: which domain, the test's statistic and p-value, and the window means."""

    domain: str
    statistic: float
    pvalue: float
    reference_mean: float
    current_mean: float


class ShiftDetector:
    """Windowed two-sample test of each domain's rewards against its reference window."""

    def __init__(self, window: int = 64, stride: int | None = None, alpha: float = 0.01):
        self.window = max(2, window)
        self.stride = stride or max(1, self.window // 4)
        self.alpha = alpha
        self.reference: dict[str, list[float]] = {}
        self.current: dict[str, deque[float]] = {}
        self._since: dict[str, int] = {}
        self._alarmed: set[str] = set()

    def add(self, domain: str, reward: float) -> Shift | None:
        """Record one reward; return a :class:`Shift` when this reward triggers a new alarm."""
        ref = self.reference.setdefault(domain, [])
        if len(ref) < self.window:
            ref.append(reward)
            return None
        cur = self.current.setdefault(domain, deque(maxlen=self.window))
        cur.append(reward)
        self._since[domain] = self._since.get(domain, 0) + 1
        if len(cur) < self.window or self._since[domain] < self.stride:
            return None
        self._since[domain] = 0
        return self._test(domain, ref, list(cur))

    def _test(self, domain: str, ref: list[float], cur: list[float]) -> Shift | None:
        d, p = ks_2samp(ref, cur)
        if p >= self.alpha:
            self._alarmed.discard(domain)
            return None
        if domain in self._alarmed:
            return None
        self._alarmed.add(domain)
        shift = Shift(domain, d, p, sum(ref) / len(ref), sum(cur) / len(cur))
        log.warning("reward distribution shift in domain %s: KS D=%.3f p=%.2g (reference mean "
                    "%.3f, current mean %.3f)", domain, d, p, shift.reference_mean,
                    shift.current_mean)
        return shift


class Monitor:
    """TensorBoard logging plus shift detection for a stream of trajectories."""

    def __init__(self, logdir: str, *, window: int = 64, alpha: float = 0.01,
                 shift_unit: str = "trajectory"):
        from torch.utils.tensorboard import SummaryWriter

        if shift_unit not in SHIFT_UNITS:
            raise ValueError(f"monitor: expected shift_unit in {SHIFT_UNITS}, found {shift_unit!r}")
        self.shift_unit = shift_unit
        self.writer = SummaryWriter(log_dir=logdir)
        self.detector = ShiftDetector(window=window, alpha=alpha)
        self.step = 0
        self.pending: dict[str, list[tuple[float, bool]]] = {}
        self.sandbox: dict[str, int] = {}
        self.failures: dict[str, dict[str, int]] = {}
        self.shifts: list[Shift] = []

    def observe(self, traj: Any) -> None:
        """Take one finished trajectory (anything with domain, reward, passed, turns, failure)."""
        self.step += 1
        for turn in traj.turns:
            status = getattr(turn, "exec_status", None)
            if status:
                self.sandbox[status] = self.sandbox.get(status, 0) + 1
        failure = getattr(traj, "failure", "none")
        if not is_trainable(failure):
            counts = self.failures.setdefault(traj.domain, {})
            counts[failure] = counts.get(failure, 0) + 1
            return
        self.pending.setdefault(traj.domain, []).append((float(traj.reward), bool(traj.passed)))
        if self.shift_unit == "trajectory":
            self._test_shift(traj.domain, float(traj.reward))

    def observe_group(self, domain: str, rewards: list[float]) -> None:
        """One prompt group's trainable rewards: its mean is one value of the shift test
        (``shift_unit="group"``; the trajectories themselves still go to :meth:`observe`)."""
        if rewards and self.shift_unit == "group":
            self._test_shift(domain, sum(rewards) / len(rewards))

    def _test_shift(self, domain: str, value: float) -> None:
        shift = self.detector.add(domain, value)
        if shift is not None:
            self.shifts.append(shift)
            self.writer.add_scalar(f"shift/{domain}/pvalue", shift.pvalue, self.step)

    def flush(self) -> None:
        """Write the scalars of everything observed since the last flush."""
        for domain, items in self.pending.items():
            rewards = [r for r, _ in items]
            mean = sum(rewards) / len(rewards)
            std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
            self.writer.add_scalar(f"reward/{domain}/mean", mean, self.step)
            self.writer.add_scalar(f"reward/{domain}/std", std, self.step)
            self.writer.add_scalar(f"pass_rate/{domain}", sum(p for _, p in items) / len(items),
                                   self.step)
        for status, count in self.sandbox.items():
            self.writer.add_scalar(f"sandbox/{status}", count, self.step)
        for domain, counts in self.failures.items():
            for failure, count in counts.items():
                self.writer.add_scalar(f"failures/{domain}/{failure}", count, self.step)
        from rlhub.verifiers.endpoints import judge_scalars

        for tag, value in judge_scalars().items():
            self.writer.add_scalar(tag, value, self.step)
        self.pending.clear()
        self.writer.flush()

    def close(self) -> None:
        self.flush()
        self.writer.close()
