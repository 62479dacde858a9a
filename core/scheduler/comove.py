"""Co-movement of held-out scores: which domains rise together (transfer) or against each other
(interference).

Every evaluation round (the held-out scores of several domains taken at one point of training)
gives each re-evaluated domain a change since its previous score. The changes of one round are
centred on their mean over the domains in the round, which removes what moves every domain at
once (a sharper policy, a learning-rate change), and their products are summed per pair. The
correlation of two domains' centred changes over the rounds is their co-movement: near +1 when
one rises whenever the other does (a shared skill), near -1 when one's gain is the other's loss.
Held-out scores are taken on fixed items with a fixed sampling seed, so the changes between two
rounds carry little evaluation noise; rounds are few, so weak correlations are shrunk to zero.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class CoMovement:
    """Sums of products of centred held-out changes per pair of domains, over evaluation rounds."""

    def __init__(self, k: int):
        self.last = np.full(k, math.nan)   # each domain's latest held-out score
        self.delta = np.full(k, math.nan)  # its change since the previous one, this round
        self.cross = np.zeros((k, k))      # sum over rounds of x_d x_e (centred changes)
        self.rounds = np.zeros((k, k))     # rounds in which both d and e changed
        self._kappa: tuple[tuple[float, int], np.ndarray] | None = None  # coupling() cache

    def observe(self, i: int, h: float) -> None:
        """A held-out score of domain ``i`` (its first only sets the baseline)."""
        if math.isfinite(self.last[i]):
            self.delta[i] = h - self.last[i]
        self.last[i] = h

    def close_round(self) -> None:
        """Fold the changes observed since the last call into the sums (three domains at least,
        so that centring leaves something to correlate)."""
        seen = np.flatnonzero(np.isfinite(self.delta))
        if seen.size >= 3:
            x = self.delta[seen] - self.delta[seen].mean()
            block = np.ix_(seen, seen)
            self.cross[block] += np.outer(x, x)
            self.rounds[block] += 1
            self._kappa = None
        self.delta[:] = math.nan

    def coupling(self, threshold: float, min_rounds: int) -> np.ndarray:
        """kappa_de = sign(rho) clip((|rho| - threshold) / (1 - threshold), 0, 1), zero on the
        diagonal and for pairs seen in fewer than ``min_rounds`` rounds. It changes only when an
        evaluation round closes, so it is computed once per round (O(k^2)), not per decision."""
        key = (threshold, min_rounds)
        if self._kappa is None or self._kappa[0] != key:
            self._kappa = key, self._coupling(threshold, min_rounds)
        return self._kappa[1]

    def _coupling(self, threshold: float, min_rounds: int) -> np.ndarray:
        var = np.diag(self.cross)
        scale = np.sqrt(np.outer(var, var))
        rho = np.divide(self.cross, scale, out=np.zeros_like(self.cross), where=scale > 0)
        strength = np.clip((np.abs(rho) - threshold) / max(1.0 - threshold, 1e-9), 0.0, 1.0)
        kappa = np.where(self.rounds >= min_rounds, np.sign(rho) * strength, 0.0)
        np.fill_diagonal(kappa, 0.0)
        return kappa

    def state_dict(self) -> dict[str, Any]:
        return {"last": [x if math.isfinite(x) else None for x in self.last.tolist()],
                "delta": [x if math.isfinite(x) else None for x in self.delta.tolist()],
                "cross": self.cross.tolist(), "rounds": self.rounds.tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.last = np.array([math.nan if x is None else x for x in state["last"]], dtype=float)
        self.delta = np.array([math.nan if x is None else x for x in state["delta"]], dtype=float)
        self.cross = np.asarray(state["cross"], dtype=float)
        self.rounds = np.asarray(state["rounds"], dtype=float)
        self._kappa = None
