"""The ``adaptive`` strategy (MODS): learn where there is signal, protect what regresses.

The formulas are in the docstring of :mod:`rlhub.scheduler`; each function below computes one
symbol of them from per-domain arrays. Everything is vectorised over the domains, so a decision
over 500 domains costs well under a millisecond.
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
        inform = stats.value("inform")
        groups = stats.observed_groups()
        gate, proof = response_gate(stats, p)
        q = self.learn_mixture(stats, inform, groups, gate)
        need = regression_alarm(stats, p) + proof * deficit(stats, inform, groups, p)
        total = float(need.sum())
        if total > 0:
            rho = min(p["rho_max"], total / p["r_max"])
            q = (1.0 - rho) * q + rho * protect_mixture(need, inform, p["z_min"])
        target = p["floor"] * self.prior + (1.0 - p["floor"]) * q
        mixed = (1.0 - p["smoothing"]) * previous + p["smoothing"] * target
        return mixed / mixed.sum()

    def learn_mixture(self, stats: DomainStats, inform: np.ndarray, groups: np.ndarray,
                      gate: np.ndarray) -> np.ndarray:
        """pi_learn ∝ prior · exp(s / tau), s = g (w_learn l + w_progress P) + b."""
        p = self.params
        score = p["w_learn"] * learnability(inform, stats.value("learn"))
        if p["w_progress"]:
            fast, slow = stats.value("fast"), stats.value("slow")
            score += p["w_progress"] * progress(fast, slow, p["progress_scale"])
        score *= gate
        if p["bonus"]:
            score += exploration_bonus(groups, p["bonus"])
        logits = score / p["tau"] + self.log_prior
        weights = np.exp(logits - logits.max())
        return weights / weights.sum()


def learnability(inform: np.ndarray, abs_adv: np.ndarray) -> np.ndarray:
    """l_d = (I_d + min(1, 2 A_d)) / 2: informative fraction and mean |advantage|, in [0, 1].

    Both are on absolute scales (rewards are normalised to [0, 1], where |A| <= 1/2), so noise
    among domains that are all equally learnable is not blown up by dividing by the maximum.
    """
    return 0.5 * (inform + np.minimum(1.0, 2.0 * abs_adv))


def progress(fast: np.ndarray, slow: np.ndarray, scale: float) -> np.ndarray:
    """P_d = min(1, |m_fast - m_slow| / scale): absolute learning progress, 1 at ``scale``."""
    return np.minimum(1.0, np.abs(fast - slow) / scale)


def response_gate(stats: DomainStats, p: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(g_d, e_d): does the held-out score move with the domain's samples?

    g_d = (C + S_d r_d) / (C + S_d) gates learning: a new domain has the benefit of the doubt.
    e_d = S_d r_d / (C + S_d) gates the deficit: buying samples for the domain furthest behind
    needs evidence that its samples help it.

    ``S_d`` is the domain's own groups over its response window and ``r_d`` = clip(its own
    held-out gain per 100 of them / response_scale, 0, 1). Only the domain's own score counts: a
    domain is not credited with the gains of domains whose held-out changes move with its own,
    since over a few evaluation rounds, with each round's mean removed, a flat domain's changes
    correlate with the rising ones' (that credit paid out-of-reach domains for the learnable
    ones' progress). With no evidence (fewer than two evals) g_d = e_d = 1;
    as a domain takes groups without its held-out score rising, g_d falls towards 0, so its
    learnability (however much reward variance its groups carry) stops buying it samples. The
    credit ``C`` is how many groups a domain may take before the evidence outweighs the prior.
    """
    row = stats.eval_row
    judged = row("evals") >= 2
    span = np.where(judged, np.maximum(row("span"), 0.0), 0.0)
    gain = np.where(judged, row("gain"), 0.0)
    rate = 100.0 * gain / np.maximum(span, 1.0)
    resp = np.clip(rate / p["response_scale"], 0.0, 1.0)
    total = np.maximum(p["credit"] + span, EPS)
    gate = np.where(judged, (p["credit"] + span * resp) / total, 1.0)
    proof = np.where(judged, span * resp / total, 1.0)
    return gate, proof


def exploration_bonus(groups: np.ndarray, c: float) -> np.ndarray:
    """b_d = c sqrt(ln(N + 1) / (n_d + 1)), with n_d the groups observed from domain d."""
    return c * np.sqrt(np.log(groups.sum() + 1.0) / (groups + 1.0))


def regression_alarm(stats: DomainStats, p: dict[str, Any]) -> np.ndarray:
    """R_d = clip((h*_d - h_d) / sqrt(se_d^2 + se*_d^2) - kappa, 0, R_max); 0 before two evals."""
    row = stats.eval_row
    spread = np.sqrt(row("se_last") ** 2 + row("se_best") ** 2)
    z = (row("h_best") - row("h_last")) / np.maximum(spread, EPS)
    return np.where(row("evals") >= 2, np.clip(z - p["kappa"], 0.0, p["r_max"]), 0.0)


def deficit(stats: DomainStats, inform: np.ndarray, groups: np.ndarray,
            p: dict[str, Any]) -> np.ndarray:
    """D_d = w_def (max_j a_j - a_d) 1[I_d > l_min], a = held-out score, else slow train reward."""
    if p["w_deficit"] <= 0:
        return np.zeros_like(inform)
    evaluated = stats.eval_row("evals") > 0
    seen = evaluated | (groups > 0)
    if not seen.any():
        return np.zeros_like(inform)
    level = np.where(evaluated, stats.eval_row("h_last"), stats.value("slow"))
    gap = float(level[seen].max()) - level
    return np.where(seen & (inform > p["l_min"]), p["w_deficit"] * np.clip(gap, 0.0, 1.0), 0.0)


def protect_mixture(need: np.ndarray, inform: np.ndarray, z_min: float) -> np.ndarray:
    """pi_prot ∝ (R_d + D_d) / max(I_d, z_min): ratio-preserving, so protection buys gradient."""
    u = need / np.maximum(inform, z_min)
    return u / u.sum()
