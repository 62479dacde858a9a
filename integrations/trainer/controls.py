"""Training controls driven by monitoring: per-domain temperature and learning-rate back-off.

* :class:`TemperatureControl` watches each domain's recent groups. When at least
  ``collapse_frac`` of its last ``window`` groups had zero reward variance (every rollout passed,
  or every one failed: no GRPO gradient), it raises that domain's sampling temperature by
  ``step``, up to ``max``; when the fraction falls to ``release_frac`` or below it steps back
  toward ``base``. A change clears the domain's window, so the next decision sees the new
  temperature only, and waits ``cooldown_steps``.
* :class:`LearningRateControl` reads the reward-shift alarms of
  :class:`rlhub.monitor.ShiftDetector` (a KS test of each domain's recent prompt groups' mean
  rewards against its first ``window`` groups). A *downward* shift (current mean below the reference mean) multiplies
  the learning rate by ``factor``, down to ``min``; an upward shift is the training working and is
  only logged.

Every decision is an :class:`Adjustment`, written by :class:`EventLog` to ``RUN_DIR/events.jsonl``
and to TensorBoard (a scalar per controlled value and a text entry with the reason).
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

EVENTS = "events.jsonl"


@dataclass
class Adjustment:
    """One control decision: what changed, from what to what, and why."""

    step: int
    control: str
    domain: str | None
    old: float
    new: float
    reason: str
    time: float = field(default_factory=time.time)


class EventLog:
    """Appends run events (adjustments, alarms, phases) to ``events.jsonl`` and TensorBoard."""

    def __init__(self, run_dir: str | Path, writer: Any = None):
        self.path = Path(run_dir) / EVENTS
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.writer = writer

    def event(self, kind: str, step: int, **data: Any) -> None:
        line = json.dumps({"kind": kind, "step": step, "time": time.time(), **data},
                          default=str)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def adjustment(self, adj: Adjustment) -> None:
        self.event("adjustment", adj.step, **{k: v for k, v in asdict(adj).items()
                                              if k not in ("step", "time")})
        if self.writer is not None:
            tag = f"control/{adj.control}" + (f"/{adj.domain}" if adj.domain else "")
            self.writer.add_scalar(tag, adj.new, adj.step)
            self.writer.add_text("control/adjustments", f"{tag}: {adj.old:.3g} -> {adj.new:.3g}"
                                 f" ({adj.reason})", adj.step)


class TemperatureControl:
    """Per-domain sampling temperature, raised on zero-variance collapse (see module docstring)."""

    def __init__(self, domains: list[str], *, base: float = 1.0, max: float = 1.5,
                 step: float = 0.1, window: int = 32, collapse_frac: float = 0.9,
                 release_frac: float = 0.5, cooldown_steps: int = 10, enabled: bool = True):
        if not 0 < base <= max:
            raise ValueError(f"temperature control: expected 0 < base <= max, found base {base}, "
                             f"max {max}")
        self.base, self.max, self.step, self.enabled = base, max, step, enabled
        self.window, self.collapse_frac, self.release_frac = window, collapse_frac, release_frac
        self.cooldown = cooldown_steps
        self.values = dict.fromkeys(domains, base)
        self._flags = {d: deque(maxlen=window) for d in domains}
        self._changed = dict.fromkeys(domains, -cooldown_steps)

    def observe(self, domain: str, groups: list[list[float]]) -> None:
        """Record one step's groups of ``domain`` (one inner list of rewards per group)."""
        self._flags[domain].extend(max(g) == min(g) for g in groups if g)

    def update(self, step: int) -> list[Adjustment]:
        """The temperature changes this step calls for (already applied to :attr:`values`)."""
        out: list[Adjustment] = []
        if not self.enabled:
            return out
        for domain, flags in self._flags.items():
            if len(flags) < self.window or step - self._changed[domain] < self.cooldown:
                continue
            frac = sum(flags) / len(flags)
            new = self._target(self.values[domain], frac)
            if new != self.values[domain]:
                out.append(self._change(step, domain, new, frac))
        return out

    def _target(self, current: float, frac: float) -> float:
        if frac >= self.collapse_frac:
            return round(min(self.max, current + self.step), 6)
        if frac <= self.release_frac:
            return round(max(self.base, current - self.step), 6)
        return current

    def _change(self, step: int, domain: str, new: float, frac: float) -> Adjustment:
        old = self.values[domain]
        verb = "raised" if new > old else "lowered"
        rule = (f">= {self.collapse_frac:.0%}" if new > old else f"<= {self.release_frac:.0%}")
        reason = (f"{verb}: {frac:.0%} of the last {len(self._flags[domain])} groups of "
                  f"{domain} had zero reward variance ({rule}; bounds {self.base:g}..{self.max:g})")
        self.values[domain] = new
        self._flags[domain].clear()
        self._changed[domain] = step
        return Adjustment(step, "temperature", domain, old, new, reason)


class LearningRateControl:
    """Backs the learning rate off on downward reward-shift alarms (see module docstring)."""

    def __init__(self, lr: float, *, factor: float = 0.5, min: float = 1e-7,
                 cooldown_steps: int = 20, enabled: bool = True):
        if not 0 < factor < 1:
            raise ValueError(f"learning-rate control: expected 0 < factor < 1, found {factor}")
        self.lr, self.factor, self.min, self.cooldown = lr, factor, min, cooldown_steps
        self.enabled = enabled
        self._changed = -cooldown_steps

    def on_shift(self, step: int, shift: Any) -> Adjustment | None:
        """The back-off a :class:`rlhub.monitor.Shift` calls for, or None (upward, cooling down)."""
        if not self.enabled or shift.current_mean >= shift.reference_mean \
                or self.lr <= self.min:
            return None
        if step - self._changed < self.cooldown:
            return None
        old, self.lr = self.lr, max(self.min, self.lr * self.factor)
        self._changed = step
        reason = (f"reward shift down in {shift.domain}: mean {shift.reference_mean:.3f} -> "
                  f"{shift.current_mean:.3f} (KS D={shift.statistic:.3f}, p={shift.pvalue:.2g}); "
                  f"lr x{self.factor:g}, floor {self.min:g}")
        return Adjustment(step, "learning_rate", None, old, self.lr, reason)


def set_learning_rate(optimizer: Any, lr_scheduler: Any, lr: float) -> None:
    """Set ``lr`` on every param group and on the scheduler's base rates (so it sticks)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
        if "initial_lr" in group:
            group["initial_lr"] = lr
    if lr_scheduler is not None and hasattr(lr_scheduler, "base_lrs"):
        lr_scheduler.base_lrs = [lr for _ in lr_scheduler.base_lrs]


def make_controls(domains: list[str], grpo: Any, controls: Any
                  ) -> tuple[TemperatureControl, LearningRateControl]:
    """The run's controls from its ``train.grpo`` and ``train.controls`` settings."""
    t, lr = controls.temperature, controls.learning_rate
    temps = TemperatureControl(domains, base=grpo.temperature, max=t.max, step=t.step,
                               window=t.window, collapse_frac=t.collapse_frac,
                               release_frac=t.release_frac, cooldown_steps=t.cooldown_steps,
                               enabled=t.enabled)
    return temps, LearningRateControl(grpo.lr, factor=lr.factor, min=lr.min,
                                      cooldown_steps=lr.cooldown_steps, enabled=lr.enabled)
