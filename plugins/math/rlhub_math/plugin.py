"""The rlhub-math plugin: hook implementations only (listing imports nothing heavy)."""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl
from rlhub_math.catalog import manifests


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    """Manifests of every procedural math domain, built from the static catalog."""
    return manifests()
