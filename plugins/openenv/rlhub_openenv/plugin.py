"""rlhub plugin ``openenv``: manifests of the configured OpenEnv environments (see config.py)."""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

from rlhub_openenv import config


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    """One domain per configured OpenEnv environment whose server described itself."""
    return [entry["manifest"] for entry in config.described() if "manifest" in entry]


@hookimpl
def rlhub_left_out() -> list[dict[str, str]]:
    """Configured OpenEnv environments left out, with the reason."""
    return [{"id": e["id"], "reason": e["excluded"]} for e in config.described()
            if "excluded" in e]
