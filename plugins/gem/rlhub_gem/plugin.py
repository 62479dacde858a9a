"""Hook implementations of rlhub-gem: the ``gem/`` manifests, from the static table."""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

from rlhub_gem import catalog


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    """One manifest per new GEM game level, when gem-llm is installed (no gem import)."""
    return catalog.manifests()


@hookimpl
def rlhub_left_out() -> list[dict[str, str]]:
    """Every other GEM environment, with the reason it is not a domain."""
    return catalog.left_out()
