"""rlhub's own hook implementations: the built-in verifiers and factories, all answering last."""

from __future__ import annotations

from typing import Any

from rlhub.plugins import hookimpl


@hookimpl(trylast=True)
def rlhub_verifiers() -> dict[str, str]:
    from rlhub.verifiers import BUILTIN

    return dict(BUILTIN)


@hookimpl(trylast=True)
def rlhub_make_sandbox(backend: str, options: dict[str, Any]) -> Any | None:
    if backend == "local":
        from rlhub.sandbox.local import LocalBackend

        return LocalBackend(**options)
    return None


@hookimpl(trylast=True)
def rlhub_make_policy(spec: str, options: dict[str, Any]) -> Any | None:
    from rlhub.policy import make_builtin

    return make_builtin(spec, options)
