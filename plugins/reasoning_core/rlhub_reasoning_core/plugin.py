"""Hook implementations of rlhub-reasoning-core: the ``rcore/`` manifests, from the static table."""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

from rlhub_reasoning_core import catalog


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    """One manifest per seeded, offline Reasoning Core task (no reasoning_core import)."""
    return catalog.manifests()


@hookimpl
def rlhub_left_out() -> list[dict[str, str]]:
    """Every other Reasoning Core task, with the reason it is not a domain."""
    return catalog.left_out()
