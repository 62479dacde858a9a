"""Task sources: where a domain's repositories and tasks come from.

:class:`SyntheticSource` generates a repository of the domain's level and a task of its kind
from the task's random stream (:mod:`rlhub_swe.synth`); :class:`RealSource` derives them from a
real project prepared from the package registry (:mod:`rlhub_swe.real`). Both return a
:class:`~rlhub_swe.made.Made`, so the domains grade them the same way.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from rlhub_swe.made import Made

if TYPE_CHECKING:
    from rlhub import Services


class SyntheticSource:
    """Generated repositories (params ``kind`` and ``level``)."""

    name = "synthetic"

    def __init__(self, params: dict[str, Any]):
        from rlhub_swe.synth.repo import LEVELS
        from rlhub_swe.synth.tasks import KINDS

        self.kind, self.level = params["kind"], LEVELS[params["level"]]
        if self.kind not in KINDS:
            raise ValueError(f"swe: expected params.kind in {list(KINDS)}, found {self.kind!r}")

    def make(self, rng: random.Random, split: str, index: int, services: Services) -> Made:
        from rlhub_swe.synth import tasks

        repo, made = tasks.make(rng, self.kind, self.level)
        made.kind, made.packages = self.kind, [repo.package]
        made.provenance = {"source": "synthetic", "generator": repo.kind.name,
                           "level": self.level.name, **made.facts}
        return made


class RealSource:
    """Tasks from a real project prepared from the registry (params ``project``, ``kind``)."""

    name = "real"

    def __init__(self, params: dict[str, Any]):
        from rlhub_swe.real.projects import PROJECTS

        self.project, self.kind = PROJECTS[params["project"]], params["kind"]

    def make(self, rng: random.Random, split: str, index: int, services: Services) -> Made:
        from rlhub_swe.real.tasks import make

        return make(self.project, self.kind, rng, split, index, services)


def source_of(params: dict[str, Any]) -> SyntheticSource | RealSource:
    kinds = {"synthetic": SyntheticSource, "real": RealSource}
    source = params.get("source", "synthetic")
    if source not in kinds:
        raise ValueError(f"swe: expected params.source in {sorted(kinds)}, found {source!r}")
    return kinds[source](params)
