"""What the core's lower modules need of a registry, its services and a scheduler, as Protocols.

The hookspecs, the domain base class, the verifiers, the mixture reader, the policy factory and
the scheduler are imported by :mod:`rlhub.plugins` and :mod:`rlhub.services`; naming those
classes back, even under ``if TYPE_CHECKING:``, would close a cycle of types. They name these
Protocols instead: :class:`rlhub.Registry` is a :class:`RegistryLike`,
:class:`rlhub.services.Services` a :class:`ServicesLike` and :class:`rlhub.Scheduler` a
:class:`SchedulerLike`. This module imports nothing of rlhub when it runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pluggy

    from rlhub.manifest import Manifest
    from rlhub.sandbox import Backend, Sandboxes
    from rlhub.sandbox.languages import Languages
    from rlhub.sandbox.workspaces import Workspaces
    from rlhub.task import Task
    from rlhub.verifiers.endpoints import JudgeEndpoints
    from rlhub.verifiers.routes import JudgeRoutes

__all__ = ["RegistryLike", "SchedulerLike", "ServicesLike"]


class ServicesLike(Protocol):
    """What a domain, a verifier or the scheduler uses while it runs
    (:class:`rlhub.services.Services`)."""

    @property
    def manifests(self) -> Mapping[str, Manifest]: ...
    @property
    def judges(self) -> JudgeRoutes: ...
    @property
    def judge_endpoints(self) -> JudgeEndpoints: ...
    @property
    def sandboxes(self) -> Sandboxes: ...
    @property
    def workspaces(self) -> Workspaces: ...
    def verifier(self, name: str, options: dict[str, Any] | None = None) -> Any: ...
    def sandbox(self, name: str | None = None, **options: Any) -> Backend: ...
    def languages(self) -> Languages: ...
    def strategy_refs(self) -> dict[str, str]: ...


class RegistryLike(Protocol):
    """What the hookspecs, the mixture reader, the policy factory and the scheduler use of a
    registry (:class:`rlhub.Registry`): its plugin manager and catalog, and its one attribute
    ``services`` for everything else."""

    @property
    def pm(self) -> pluggy.PluginManager: ...
    @property
    def services(self) -> ServicesLike: ...
    def ids(self) -> list[str]: ...
    def manifest(self, domain_id: str) -> Manifest: ...
    def match(self, patterns: Iterable[str]) -> list[str]: ...
    def get(self, domain_id: str) -> Any: ...


class SchedulerLike(Protocol):
    """What ``rlhub_make_scheduler`` must return; :class:`rlhub.Scheduler` is the reference."""

    def weights(self) -> dict[str, float]: ...
    def sample(self, n: int) -> list[Task]: ...
    def observe(self, domain: str, group_rewards: list[list[float | None]]) -> Any: ...
    def observe_eval(self, domain: str, score: float, n: int) -> None: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...
