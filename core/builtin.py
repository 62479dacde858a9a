"""rlhub's own hook implementations: the built-in verifiers, sandbox backends, strategies and
factories, all answering last."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlhub.hookspecs import hookimpl

if TYPE_CHECKING:
    from rlhub.policy.protocol import Policy
    from rlhub.scheduler.core import SchedulerLike

# rlhub's own sandbox backends: name -> class called with the options.
SANDBOX_BACKENDS = {
    "docker": "rlhub.sandbox.docker_backend:DockerBackend",
    "local": "rlhub.sandbox.local:LocalBackend",
    "ray": "rlhub.sandbox.ray_backend:RayBackend",
}

# rlhub's own workspace backends: name -> class called with the options.
WORKSPACE_BACKENDS = {
    "docker": "rlhub.sandbox.ws_docker:DockerWorkspaces",
    "local": "rlhub.sandbox.ws_local:LocalWorkspaces",
    "ray": "rlhub.sandbox.ws_ray:RayWorkspaces",
}


@hookimpl(trylast=True)
def rlhub_verifiers() -> dict[str, str]:
    from rlhub.verifiers import BUILTIN

    return dict(BUILTIN)


@hookimpl(trylast=True)
def rlhub_sandbox_backends() -> dict[str, str]:
    return dict(SANDBOX_BACKENDS)


@hookimpl(trylast=True)
def rlhub_workspace_backends() -> dict[str, str]:
    return dict(WORKSPACE_BACKENDS)


@hookimpl(trylast=True)
def rlhub_scheduler_strategies() -> dict[str, str]:
    from rlhub.scheduler.core import BUILTIN_STRATEGIES

    return dict(BUILTIN_STRATEGIES)


@hookimpl(trylast=True)
def rlhub_make_scheduler(config: dict[str, Any], registry: Any) -> SchedulerLike | None:
    from rlhub.scheduler import Scheduler

    if registry is not None and config.get("strategy") not in registry.strategy_refs():
        return None  # from_config reports it when no plugin answers
    return Scheduler(config, registry)


@hookimpl(trylast=True)
def rlhub_make_policy(spec: str, options: dict[str, Any]) -> Policy | None:
    from rlhub.policy import make_builtin

    return make_builtin(spec, options)

