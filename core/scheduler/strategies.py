"""Mixture strategies: the prior every strategy starts from, and the fixed strategies.

A strategy turns the per-domain statistics into the mixture of the next batch. It has a ``prior``
(the mixture before any observation) and ``decide(stats, previous) -> mixture``; both are numpy
vectors over the scheduler's domains that sum to one.

Groups: every ungrouped domain is one *unit*, and so is every group. A unit's mass is set by the
strategy; inside a group the mass is split by the members' own masses, so ``rg/*`` in one group
weighs as one unit however many domains it holds.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from rlhub.errors import SchedulerError
from rlhub.scheduler.stats import DomainStats


class Strategy(Protocol):
    """What the built-in :class:`rlhub.Scheduler` asks of a strategy."""

    prior: np.ndarray

    def decide(self, stats: DomainStats, previous: np.ndarray) -> np.ndarray:
        """The mixture of the next batch."""


def prior_weights(config: dict[str, Any], kind: str) -> np.ndarray:
    """The fixed mixture of ``kind`` (uniform, static or temperature) over the config's domains.

    uniform: every unit equal, members of a group equal. static: a unit's mass is its weight,
    members share a group by their weights. temperature: a domain's mass is ``weight * size**tau``
    and a group's is ``weight * (sum of member sizes)**tau``, so tau=0 is uniform over units and
    tau=1 is proportional to size.
    """
    specs, groups = config["domains"], config["groups"]
    own = {d: _own_mass(kind, d, spec, config["params"]) for d, spec in specs.items()}
    unit: dict[str, float] = {}
    for d, spec in specs.items():
        if spec["group"] is None:
            unit[d] = own[d]
    for group in groups.values():
        members = group["members"]
        total = sum(own[d] for d in members)
        mass = _group_mass(kind, group, {d: specs[d] for d in members}, config["params"])
        for d in members:
            unit[d] = mass * own[d] / total
    weights = np.array([unit[d] for d in specs], dtype=float)
    return weights / weights.sum()


def _own_mass(kind: str, domain_id: str, spec: dict[str, Any], params: dict[str, Any]) -> float:
    if kind == "uniform":
        return 1.0
    if kind == "temperature":
        return spec["weight"] * float(_size(domain_id, spec, params)) ** params["tau"]
    return spec["weight"]


def _group_mass(kind: str, group: dict[str, Any], members: dict[str, dict[str, Any]],
                params: dict[str, Any]) -> float:
    if kind == "uniform":
        return 1.0
    if kind == "temperature":
        size = sum(_size(d, spec, params) for d, spec in members.items())
        return group["weight"] * float(size) ** params["tau"]
    return group["weight"]


def _size(domain_id: str, spec: dict[str, Any], params: dict[str, Any]) -> int:
    size = spec.get("size") or params.get("default_size")
    if size is None:
        raise SchedulerError(
            f"mixture config: field domains.{domain_id}.size: expected a dataset size for the "
            "temperature strategy, found none (an unbounded procedural domain); set the size "
            "or params.default_size")
    return int(size)


class Fixed:
    """A mixture that never changes: uniform, static or temperature."""

    kind = "static"

    def __init__(self, config: dict[str, Any], kind: str | None = None):
        self.kind = kind or self.kind
        self.prior = prior_weights(config, self.kind)

    def decide(self, stats: DomainStats, previous: np.ndarray) -> np.ndarray:
        return self.prior


class Uniform(Fixed):
    """Every unit equal, members of a group equal."""

    kind = "uniform"


class Static(Fixed):
    """A unit's mass is its weight."""

    kind = "static"


class Temperature(Fixed):
    """A domain's mass is ``weight * size**tau``."""

    kind = "temperature"
