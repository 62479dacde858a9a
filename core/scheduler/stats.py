"""Per-domain statistics of a scheduler: pending group summaries, EMAs, eval history, counts.

Observations arrive one call per domain (``observe``) and are summarised in plain Python, which is
faster than numpy for the handful of groups a domain gets per step; they are folded into the EMAs
once per mixture decision (:meth:`DomainStats.fold`), vectorised over every domain.

Rewards are normalised per domain before any statistic is taken (``x' = (x - lo) / (hi - lo)``),
with ``[lo, hi]`` the declared reward range (``range``), the range seen so far (``running``), or
``[0, 1]`` (``none``); ``auto`` means ``range`` when the range is known and ``running`` otherwise.
So a domain scored in [0, 10] weighs no more than one scored in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlhub.errors import SchedulerError

EPS = 1e-9
PENDING = ("groups", "informative", "absadv", "reward", "all_pass", "all_fail")
EMAS = ("learn", "inform", "zero_pass", "zero_fail", "fast", "slow")
COUNTS = ("sampled", "refilled", "groups", "zero_variance", "all_pass", "all_fail")
EVALS = ("h_last", "se_last", "h_best", "se_best", "evals")


class DomainStats:
    """Everything the strategies read about each domain, as arrays indexed like ``ids``."""

    def __init__(self, ids: Sequence[str], specs: dict[str, dict[str, Any]]):
        self.ids = list(ids)
        k = len(self.ids)
        self.lo: list[float] = []
        self.scale: list[float] = []
        self.running: list[bool] = []
        for domain_id in self.ids:
            lo, scale, running = _norm(domain_id, specs[domain_id])
            self.lo.append(lo)
            self.scale.append(scale)
            self.running.append(running)
        self.seen_hi = [-math.inf] * k
        self.seen_lo = [math.inf] * k
        self.pending = {name: [0.0] * k for name in PENDING}
        self.counts = {name: [0] * k for name in COUNTS}
        self.ema = {name: np.zeros(k) for name in EMAS}
        self.ema_norm = {name: np.zeros(k) for name in EMAS}  # bias-correction denominators
        self.evals = {name: np.zeros(k) for name in EVALS}
        self.dirty = False

    # -- observing -----------------------------------------------------------------------------

    def observe(self, i: int, group_rewards: Sequence[Sequence[float]]) -> int:
        """Summarise the groups of domain ``i``; return how many had zero variance."""
        zero = 0
        pend = self.pending
        for g, rewards in enumerate(group_rewards):
            n = len(rewards)
            if n == 0:
                raise SchedulerError(f"domain {self.ids[i]!r}: group {g} is empty; expected one "
                                     "reward per rollout")
            total = math.fsum(rewards)
            hi, lo = max(rewards), min(rewards)
            if not math.isfinite(total) or math.isnan(hi) or math.isnan(lo):
                raise SchedulerError(f"domain {self.ids[i]!r}: group {g}: expected finite "
                                     f"rewards, found {list(rewards)!r}")
            base, scale = self._frame(i, lo, hi)
            mean = total / n
            level = (mean - base) / scale
            pend["groups"][i] += 1
            pend["reward"][i] += level
            if hi - lo <= EPS * max(1.0, scale):
                zero += 1
                pend["all_pass" if level >= 0.5 else "all_fail"][i] += 1
            else:
                pend["informative"][i] += 1
                pend["absadv"][i] += math.fsum(abs(r - mean) for r in rewards) / (n * scale)
        self.dirty = True
        return zero

    def _frame(self, i: int, lo: float, hi: float) -> tuple[float, float]:
        """The (lo, scale) that normalises domain ``i``'s rewards, updating running ranges."""
        if not self.running[i]:
            return self.lo[i], self.scale[i]
        self.seen_lo[i] = min(self.seen_lo[i], lo)
        self.seen_hi[i] = max(self.seen_hi[i], hi)
        spread = self.seen_hi[i] - self.seen_lo[i]
        return self.seen_lo[i], spread if spread > EPS else 1.0

    def observe_eval(self, i: int, score: float, n: int, kappa: float) -> None:
        """Record a held-out score of ``n`` items; the best so far is kept with its standard error."""
        if not (math.isfinite(score) and n >= 1):
            raise SchedulerError(f"domain {self.ids[i]!r}: expected a finite eval score and n >= 1, "
                                 f"found score={score!r}, n={n!r}")
        h = (score - self.lo[i]) / self.scale[i] if not self.running[i] else float(score)
        p = (h * n + 1.0) / (n + 2.0)  # Laplace-smoothed, so a perfect score still has an error
        se = math.sqrt(max(p * (1.0 - p), 0.0) / n)
        ev = self.evals
        first = ev["evals"][i] == 0
        ev["h_last"][i], ev["se_last"][i] = h, se
        if first or h > ev["h_best"][i]:
            ev["h_best"][i], ev["se_best"][i] = h, se
        ev["evals"][i] += 1
        self.dirty = True

    # -- folding -------------------------------------------------------------------------------

    def fold(self, params: dict[str, Any]) -> None:
        """Fold pending group summaries into the EMAs (rates are per group) and clear them."""
        k = np.asarray(self.pending["groups"])
        seen = k > 0
        if seen.any():
            safe = np.where(seen, k, 1.0)
            batch = {
                "learn": np.asarray(self.pending["absadv"]) / safe,
                "inform": np.asarray(self.pending["informative"]) / safe,
                "zero_pass": np.asarray(self.pending["all_pass"]) / safe,
                "zero_fail": np.asarray(self.pending["all_fail"]) / safe,
                "fast": np.asarray(self.pending["reward"]) / safe,
                "slow": np.asarray(self.pending["reward"]) / safe,
            }
            rates = {"fast": params["fast"], "slow": params["slow"]}
            for name in EMAS:
                alpha = np.where(seen, 1.0 - (1.0 - rates.get(name, params["ema"])) ** k, 0.0)
                self.ema[name] += alpha * (batch[name] - self.ema[name])
                self.ema_norm[name] += alpha * (1.0 - self.ema_norm[name])
            self._count_pending()
        self.dirty = False

    def _count_pending(self) -> None:
        pend, counts = self.pending, self.counts
        for i, groups in enumerate(pend["groups"]):
            if groups:
                counts["groups"][i] += int(groups)
                counts["all_pass"][i] += int(pend["all_pass"][i])
                counts["all_fail"][i] += int(pend["all_fail"][i])
                counts["zero_variance"][i] += int(pend["all_pass"][i] + pend["all_fail"][i])
        for name in PENDING:
            pend[name] = [0.0] * len(self.ids)

    def value(self, name: str) -> np.ndarray:
        """The bias-corrected EMA ``name`` (0 for a domain never observed)."""
        norm = self.ema_norm[name]
        return np.where(norm > 0, self.ema[name] / np.where(norm > 0, norm, 1.0), 0.0)

    def observed_groups(self) -> np.ndarray:
        """Groups observed per domain, pending ones included."""
        return np.asarray(self.counts["groups"], dtype=float) + np.asarray(self.pending["groups"])

    def zero_variance_total(self, i: int) -> int:
        pend = self.pending
        return self.counts["zero_variance"][i] + int(pend["all_pass"][i] + pend["all_fail"][i])

    # -- state ---------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "seen_lo": list(self.seen_lo), "seen_hi": list(self.seen_hi),
            "pending": {k: list(v) for k, v in self.pending.items()},
            "counts": {k: list(v) for k, v in self.counts.items()},
            "ema": {k: v.tolist() for k, v in self.ema.items()},
            "ema_norm": {k: v.tolist() for k, v in self.ema_norm.items()},
            "evals": {k: v.tolist() for k, v in self.evals.items()},
            "dirty": self.dirty,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.seen_lo = [float(x) for x in state["seen_lo"]]
        self.seen_hi = [float(x) for x in state["seen_hi"]]
        self.pending = {k: [float(x) for x in state["pending"][k]] for k in PENDING}
        self.counts = {k: [int(x) for x in state["counts"][k]] for k in COUNTS}
        self.ema = {k: np.asarray(state["ema"][k], dtype=float) for k in EMAS}
        self.ema_norm = {k: np.asarray(state["ema_norm"][k], dtype=float) for k in EMAS}
        self.evals = {k: np.asarray(state["evals"][k], dtype=float) for k in EVALS}
        self.dirty = bool(state["dirty"])


def _norm(domain_id: str, spec: dict[str, Any]) -> tuple[float, float, bool]:
    """(lo, scale, running) of a domain's reward normalisation."""
    mode, rng = spec.get("normalize") or "auto", spec.get("reward_range")
    if mode == "auto":
        mode = "range" if rng is not None else "running"
    if mode == "range":
        if rng is None:
            raise SchedulerError(f"mixture config: field domains.{domain_id}.normalize: expected "
                                 "a reward_range for 'range' normalisation, found none (set "
                                 f"domains.{domain_id}.reward_range or use 'running')")
        return float(rng[0]), float(rng[1]) - float(rng[0]), False
    if mode == "running":
        return 0.0, 1.0, True
    return 0.0, 1.0, False
