"""rlhub's own hook implementations: the built-in verifiers and factories, all answering last."""

from __future__ import annotations

from typing import Any

from rlhub.hookspecs import hookimpl


@hookimpl(trylast=True)
def rlhub_verifiers() -> dict[str, str]:
    from rlhub.verifiers import BUILTIN

    return dict(BUILTIN)


@hookimpl(trylast=True)
def rlhub_make_sandbox(backend: str, options: dict[str, Any]) -> Any | None:
    if backend == "local":
        from rlhub.sandbox.local import LocalBackend

        return LocalBackend(**options)
    if backend == "docker":
        from rlhub.sandbox.docker_backend import DockerBackend

        return DockerBackend(**options)
    if backend == "ray":
        from rlhub.sandbox.ray_backend import RayBackend

        return RayBackend(**options)
    return None


@hookimpl(trylast=True)
def rlhub_make_scheduler(config: dict[str, Any], registry: Any) -> Any | None:
    from rlhub.scheduler import STRATEGIES, Scheduler

    if config.get("strategy") not in STRATEGIES:
        return None  # a plugin's strategy; from_config reports it when no plugin answers
    return Scheduler(config, registry)


@hookimpl(trylast=True)
def rlhub_make_policy(spec: str, options: dict[str, Any]) -> Any | None:
    from rlhub.policy import make_builtin

    return make_builtin(spec, options)

