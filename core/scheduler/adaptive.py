"""The ``adaptive`` strategy (MODS): learn where there is signal, protect what regresses.

The formulas are in the docstring of :mod:`rlhub.scheduler`; each step below names its symbol.
Every operation is vectorised over the domains, so a decision over 500 domains costs tens of
microseconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlhub.scheduler.stats import EPS, DomainStats
from rlhub.scheduler.strategies import prior_weights


class Adaptive:
    """Learnability + |learning progress| + exploration, mixed with regression/deficit protection."""

    def __init__(self, config: dict[str, Any]):
        self.params = config["params"]
        self.prior = prior_weights(config, "static")
        self.log_prior = np.log(self.prior)

    def decide(self, stats: DomainStats, previous: np.ndarray) -> np.ndarray:
        """pi_t = (1 - beta) pi_{t-1} + beta (floor prior + (1 - floor) q)."""
        p = self.params
        q = self.learn_mixture(stats)
        need = regression_alarm(stats, p) + deficit(stats, p)
        total = float(need.sum())
        if total > 0:
            rho = min(p["rho_max"], total / p["r_max"])
            q = (1.0 - rho) * q + rho * protect_mixture(stats, need, p)
        target = p["floor"] * self.prior + (1.0 - p["floor"]) * q
        mixed = (1.0 - p["smoothing"]) * previous + p["smoothing"] * target
        return mixed / mixed.sum()

    def learn_mixture(self, stats: DomainStats) -> np.ndarray:
        """pi_learn = softmax(s / tau + log prior)."""
        p = self.params
        score = p["w_learn"] * learnability(stats) + p["w_progress"] * progress(stats)
        score = score + exploration_bonus(stats, p["bonus"])
        logits = score / p["tau"] + self.log_prior
        weights = np.exp(logits - logits.max())
        return weights / weights.sum()


def _rel(x: np.ndarray) -> np.ndarray:
    """x / max x, or zeros when nothing is positive."""
    top = float(x.max()) if x.size else 0.0
    return x / top if top > EPS else np.zeros_like(x)


def learnability(stats: DomainStats) -> np.ndarray:
    """l_d = (I_d / max I + A_d / max A) / 2: informative fraction and mean |advantage|."""
    return 0.5 * (_rel(stats.value("inform")) + _rel(stats.value("learn")))


def progress(stats: DomainStats) -> np.ndarray:
    """P_d = |m_fast - m_slow| / max_j |m_fast - m_slow| (absolute learning progress)."""
    return _rel(np.abs(stats.value("fast") - stats.value("slow")))


def exploration_bonus(stats: DomainStats, c: float) -> np.ndarray:
    """c * sqrt(ln(N + 1) / (n_d + 1)), with n_d the groups observed from domain d."""
    n = stats.observed_groups()
    return c * np.sqrt(np.log(n.sum() + 1.0) / (n + 1.0))


def regression_alarm(stats: DomainStats, p: dict[str, Any]) -> np.ndarray:
    """R_d = clip((h*_d - h_d) / sqrt(se_d^2 + se*_d^2) - kappa, 0, R_max); 0 before two evals."""
    ev = stats.evals
    spread = np.sqrt(ev["se_last"] ** 2 + ev["se_best"] ** 2)
    z = (ev["h_best"] - ev["h_last"]) / np.maximum(spread, EPS)
    return np.where(ev["evals"] >= 2, np.clip(z - p["kappa"], 0.0, p["r_max"]), 0.0)


def deficit(stats: DomainStats, p: dict[str, Any]) -> np.ndarray:
    """D_d = w_def (max_j a_j - a_d) 1[I_d > l_min], a = held-out score, else slow train reward."""
    if p["w_deficit"] <= 0:
        return np.zeros(len(stats.ids))
    inform = stats.value("inform")
    level = np.where(stats.evals["evals"] > 0, stats.evals["h_last"], stats.value("slow"))
    seen = (stats.evals["evals"] > 0) | (stats.observed_groups() > 0)
    if not seen.any():
        return np.zeros(len(stats.ids))
    gap = float(level[seen].max()) - level
    return np.where(seen & (inform > p["l_min"]), p["w_deficit"] * np.clip(gap, 0.0, 1.0), 0.0)


def protect_mixture(stats: DomainStats, need: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """pi_prot ∝ (R_d + D_d) / max(I_d, z_min): ratio-preserving, so protection buys gradient."""
    u = need / np.maximum(stats.value("inform"), p["z_min"])
    return u / u.sum()
