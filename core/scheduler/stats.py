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
EVALS = ("h_last", "se_last", "h_best", "se_best", "evals",
         "h_ref", "n_ref", "h_mid", "n_mid", "gain", "span")
# Which pending sum each EMA averages (divided by the pending group count).
EMA_SOURCE = ("absadv", "informative", "all_pass", "all_fail", "reward", "reward")
P = {name: row for row, name in enumerate(PENDING)}
C = {name: row for row, name in enumerate(COUNTS)}
E = {name: row for row, name in enumerate(EMAS)}
V = {name: row for row, name in enumerate(EVALS)}


class DomainStats:
    """Everything the strategies read about each domain, as arrays indexed like ``ids``.

    ``pending``, ``counts``, ``ema``, ``ema_norm`` and ``evals`` are 2-D arrays with one row per
    name in ``PENDING``, ``COUNTS``, ``EMAS`` and ``EVALS`` and one column per domain.
    """

    def __init__(self, ids: Sequence[str], specs: dict[str, dict[str, Any]],
                 window: float = 256.0):
        self.ids = list(ids)
        self.window = float(window)  # own groups per response window (see observe_eval)
        k = len(self.ids)
        norms = [_norm(d, specs[d]) for d in self.ids]
        self.lo = np.array([n[0] for n in norms], dtype=float)
        self.scale = np.array([n[1] for n in norms], dtype=float)
        self.running = np.array([n[2] for n in norms], dtype=bool)
        self._lo, self._scale = self.lo.tolist(), self.scale.tolist()  # fast scalar access
        self._running = self.running.tolist()
        self.seen_lo = np.full(k, math.inf)
        self.seen_hi = np.full(k, -math.inf)
        self.pending = np.zeros((len(PENDING), k))
        self.counts = np.zeros((len(COUNTS), k), dtype=np.int64)
        self.ema = np.zeros((len(EMAS), k))
        self.ema_norm = np.zeros((len(EMAS), k))  # bias-correction denominators
        self.evals = np.zeros((len(EVALS), k))
        self.queue: list[tuple[float, ...]] = []  # per-call observations not yet in pending
        self.values = np.zeros((len(EMAS), k))  # bias-corrected EMAs, refreshed by fold()
        self.dirty = False

    # -- observing -----------------------------------------------------------------------------

    def observe(self, i: int, group_rewards: Sequence[Sequence[float]]) -> int:
        """Summarise the groups of domain ``i``; return how many had zero variance.

        Plain Python on purpose: for the few groups one call carries it is several times faster
        than building numpy arrays. The work is queued and summed into arrays by :meth:`flush`.
        """
        if not group_rewards:
            return 0
        if self._running[i]:
            _check_groups(self.ids[i], group_rewards)
            base, scale = self._frame(i, min(min(g) for g in group_rewards),
                                      max(max(g) for g in group_rewards))
        else:
            base, scale = self._lo[i], self._scale[i]
        tol = EPS * max(1.0, scale)
        level_sum = absadv = 0.0
        informative = passes = 0
        for g, rewards in enumerate(group_rewards):
            n = len(rewards)
            total = sum(rewards) if n else math.nan
            if not math.isfinite(total):
                _check_groups(self.ids[i], group_rewards[g:], offset=g)
            mean = total / n
            level = (mean - base) / scale
            level_sum += level
            if max(rewards) - min(rewards) > tol:
                informative += 1
                absadv += sum([abs(r - mean) for r in rewards]) / (n * scale)
            elif level >= 0.5:
                passes += 1
        n = len(group_rewards)
        self.queue.append((i, n, informative, absadv, level_sum, passes, n - informative - passes))
        self.dirty = True
        return n - informative

    def observe_batch(self, idx: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`observe` of one group per row; returns each row's zero-variance flag."""
        if not np.isfinite(rewards).all():
            bad = int(np.flatnonzero(~np.isfinite(rewards).all(axis=1))[0])
            raise SchedulerError(f"domain {self.ids[idx[bad]]!r}: group {bad}: expected finite "
                                 f"rewards, found {rewards[bad].tolist()!r}")
        mean, lo, hi = rewards.mean(axis=1), rewards.min(axis=1), rewards.max(axis=1)
        if self.running[idx].any():
            np.minimum.at(self.seen_lo, idx, lo)
            np.maximum.at(self.seen_hi, idx, hi)
        spread = self.seen_hi - self.seen_lo
        base = np.where(self.running, self.seen_lo, self.lo)[idx]
        scale = np.where(self.running, np.where(spread > EPS, spread, 1.0), self.scale)[idx]
        level = (mean - base) / scale
        zero = hi - lo <= EPS * np.maximum(1.0, scale)
        dev = np.where(zero, 0.0, np.abs(rewards - mean[:, None]).mean(axis=1) / scale)
        passes = zero & (level >= 0.5)
        k = len(self.ids)
        columns = (np.ones_like(mean), ~zero, dev, level, passes, zero & ~passes)
        sums = np.stack([np.bincount(idx, weights=c, minlength=k) for c in columns])
        self.pending += sums
        self._count(sums)
        return zero

    def flush(self) -> None:
        """Move queued per-call observations into ``pending`` and ``counts`` (one numpy pass)."""
        if not self.queue:
            return
        rows = np.array(self.queue, dtype=float)
        self.queue.clear()
        idx = rows[:, 0].astype(np.int64)
        k = len(self.ids)
        sums = np.stack([np.bincount(idx, weights=rows[:, j], minlength=k)
                         for j in range(1, rows.shape[1])])
        self.pending += sums
        self._count(sums)

    def _count(self, sums: np.ndarray) -> None:
        c = self.counts
        c[C["groups"]] += sums[P["groups"]].astype(np.int64)
        c[C["all_pass"]] += sums[P["all_pass"]].astype(np.int64)
        c[C["all_fail"]] += sums[P["all_fail"]].astype(np.int64)
        c[C["zero_variance"]] += (sums[P["all_pass"]] + sums[P["all_fail"]]).astype(np.int64)
        self.dirty = True

    def _frame(self, i: int, lo: float, hi: float) -> tuple[float, float]:
        """The (lo, scale) that normalises domain ``i``'s rewards, updating running ranges."""
        if not self._running[i]:
            return self._lo[i], self._scale[i]
        self.seen_lo[i] = min(self.seen_lo[i], lo)
        self.seen_hi[i] = max(self.seen_hi[i], hi)
        spread = float(self.seen_hi[i] - self.seen_lo[i])
        return float(self.seen_lo[i]), spread if spread > EPS else 1.0

    def observe_eval(self, i: int, score: float, n: int) -> None:
        """Record a held-out score of ``n`` items; the best so far is kept with its standard error."""
        if not (math.isfinite(score) and n >= 1):
            raise SchedulerError(f"domain {self.ids[i]!r}: expected a finite eval score and n >= 1, "
                                 f"found score={score!r}, n={n!r}")
        h = float(score) if self.running[i] else (score - self.lo[i]) / self.scale[i]
        p = (h * n + 1.0) / (n + 2.0)  # Laplace-smoothed, so a perfect score still has an error
        se = math.sqrt(max(p * (1.0 - p), 0.0) / n)
        ev = self.evals
        if ev[V["evals"], i] == 0 or h > ev[V["h_best"], i]:
            ev[V["h_best"], i], ev[V["se_best"], i] = h, se
        ev[V["h_last"], i], ev[V["se_last"], i] = h, se
        ev[V["evals"], i] += 1
        self._respond(i, h)
        self.dirty = True

    def _respond(self, i: int, h: float) -> None:
        """Held-out gain over the domain's own groups since a reference eval (``gain``, ``span``).

        The reference trails by one to two windows of ``window`` own groups: when the domain has
        taken a window of groups since the middle point, the middle point becomes the reference
        and this eval the new middle point. So ``span`` counts the groups the domain took while
        its held-out score moved by ``gain``, over a recent stretch of its own training.
        """
        self.flush()
        ev, n = self.evals, float(self.counts[C["groups"], i])
        if ev[V["evals"], i] == 1:
            ev[V["h_ref"], i] = ev[V["h_mid"], i] = h
            ev[V["n_ref"], i] = ev[V["n_mid"], i] = n
        elif n - ev[V["n_mid"], i] >= self.window:
            ev[V["h_ref"], i], ev[V["n_ref"], i] = ev[V["h_mid"], i], ev[V["n_mid"], i]
            ev[V["h_mid"], i], ev[V["n_mid"], i] = h, n
        ev[V["gain"], i] = h - ev[V["h_ref"], i]
        ev[V["span"], i] = n - ev[V["n_ref"], i]

    # -- folding -------------------------------------------------------------------------------

    def fold(self, params: dict[str, Any]) -> None:
        """Fold pending group summaries into the EMAs (rates are per group) and clear them."""
        self.flush()
        k = self.pending[P["groups"]]
        if k.any():
            rates = np.array([[params["ema"]]] * 4 + [[params["fast"]], [params["slow"]]])
            sources = self.pending[[P[name] for name in EMA_SOURCE]]
            batch = sources / np.where(k > 0, k, 1.0)
            alpha = 1.0 - (1.0 - rates) ** k  # zero where the domain had no group
            self.ema += alpha * (batch - self.ema)
            self.ema_norm += alpha * (1.0 - self.ema_norm)
            self.pending[:] = 0.0
            self._refresh_values()
        self.dirty = False

    def _refresh_values(self) -> None:
        norm = self.ema_norm
        self.values = np.divide(self.ema, norm, out=np.zeros_like(norm), where=norm > 0)

    def value(self, name: str) -> np.ndarray:
        """The bias-corrected EMA ``name`` as of the last fold (0 for a domain never observed)."""
        return self.values[E[name]]

    def eval_row(self, name: str) -> np.ndarray:
        return self.evals[V[name]]

    def observed_groups(self) -> np.ndarray:
        """Groups observed per domain so far."""
        self.flush()
        return self.counts[C["groups"]].astype(float)

    # -- state ---------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        self.flush()
        return {
            "seen_lo": _finite_or_none(self.seen_lo), "seen_hi": _finite_or_none(self.seen_hi),
            "pending": self.pending.tolist(), "counts": self.counts.tolist(),
            "ema": self.ema.tolist(), "ema_norm": self.ema_norm.tolist(),
            "evals": self.evals.tolist(), "dirty": self.dirty,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.seen_lo = np.array([math.inf if x is None else x for x in state["seen_lo"]], float)
        self.seen_hi = np.array([-math.inf if x is None else x for x in state["seen_hi"]], float)
        self.pending = np.asarray(state["pending"], dtype=float)
        self.counts = np.asarray(state["counts"], dtype=np.int64)
        self.ema = np.asarray(state["ema"], dtype=float)
        self.ema_norm = np.asarray(state["ema_norm"], dtype=float)
        self.evals = np.asarray(state["evals"], dtype=float)
        self.dirty = bool(state["dirty"])
        self.queue = []
        self._refresh_values()
        k = len(self.ids)
        shapes = {"pending": (len(PENDING), k), "counts": (len(COUNTS), k),
                  "ema": (len(EMAS), k), "evals": (len(EVALS), k)}
        for name, shape in shapes.items():
            if getattr(self, name).shape != shape:
                raise SchedulerError(f"scheduler state: field stats.{name}: expected shape "
                                     f"{shape}, found {getattr(self, name).shape}")


def _finite_or_none(values: np.ndarray) -> list[float | None]:
    """Strict-JSON form of a running range: None where nothing was seen yet."""
    return [x if math.isfinite(x) else None for x in values.tolist()]


def _check_groups(domain: str, groups: Sequence[Sequence[float]], offset: int = 0) -> None:
    """Raise for the first empty group or group with a non-finite reward."""
    for g, rewards in enumerate(groups, offset):
        if len(rewards) == 0:
            raise SchedulerError(f"domain {domain!r}: group {g} is empty; expected one reward "
                                 "per rollout")
        if not math.isfinite(sum(rewards)):
            raise SchedulerError(f"domain {domain!r}: group {g}: expected finite rewards, found "
                                 f"{list(rewards)!r}")


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
