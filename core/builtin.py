"""rlhub's own hook implementations: the built-in verifiers, sandbox backends and languages,
strategies and factories, all answering last."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlhub.hookspecs import hookimpl

if TYPE_CHECKING:
    from rlhub.policy.protocol import Policy

# rlhub's own sandbox backends: name -> class called with the options.
SANDBOX_BACKENDS = {
    "docker": "rlhub.sandbox.docker_backend:DockerBackend",
    "local": "rlhub.sandbox.local:LocalBackend",
    "ray": "rlhub.sandbox.ray_backend:RayBackend",
}


@hookimpl(trylast=True)
def rlhub_verifiers() -> dict[str, str]:
    from rlhub.verifiers import BUILTIN

    return dict(BUILTIN)


@hookimpl(trylast=True)
def rlhub_sandbox_backends() -> dict[str, str]:
    return dict(SANDBOX_BACKENDS)


# rlhub's own mixture strategies: name -> class called with the config. When no plugin's
# ``rlhub_make_scheduler`` answers, ``Scheduler.from_config`` runs the strategy itself.
BUILTIN_STRATEGIES = {
    "adaptive": "rlhub.scheduler.adaptive:Adaptive",
    "static": "rlhub.scheduler.strategies:Static",
    "temperature": "rlhub.scheduler.strategies:Temperature",
    "uniform": "rlhub.scheduler.strategies:Uniform",
}


@hookimpl(trylast=True)
def rlhub_sandbox_languages() -> dict[str, dict[str, Any]]:
    from rlhub.sandbox.languages import builtin_table

    return builtin_table()


@hookimpl(trylast=True)
def rlhub_scheduler_strategies() -> dict[str, str]:
    return dict(BUILTIN_STRATEGIES)


@hookimpl(trylast=True)
def rlhub_make_policy(spec: str, options: dict[str, Any]) -> Policy | None:
    from rlhub.policy import make_builtin

    return make_builtin(spec, options)

