"""Hook implementations of rlhub-reasoning-gym: the ``rg/`` manifests, from the static table."""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

from rlhub_reasoning_gym import catalog


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    """One manifest per scorable reasoning-gym dataset (no reasoning_gym import)."""
    return catalog.manifests()


@hookimpl
def rlhub_left_out() -> list[dict[str, str]]:
    """The datasets left out (no scorable default config, or a scorer that cannot tell right from
    wrong), shown by ``rlhub list --all``."""
    return catalog.left_out()
