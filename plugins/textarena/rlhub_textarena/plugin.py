"""Hook implementations of rlhub-textarena: the ``textarena/`` manifests, from the static table."""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

from rlhub_textarena import catalog


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    """One manifest per offline TextArena game and level (no textarena import)."""
    return catalog.manifests()


@hookimpl
def rlhub_left_out() -> list[dict[str, str]]:
    """Every other TextArena environment, with the reason it is not a domain."""
    return catalog.left_out()
