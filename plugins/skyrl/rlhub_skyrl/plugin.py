"""Hook implementations of rlhub-skyrl: the ``skyrl`` verifier and the environments left out."""

from __future__ import annotations

from rlhub import hookimpl

from rlhub_skyrl import catalog


@hookimpl
def rlhub_verifiers() -> dict[str, str]:
    """``skyrl``: a registered skyrl-gym environment scoring a data-only domain's rows."""
    return {"skyrl": "rlhub_skyrl.verifier:SkyRLVerifier"}


@hookimpl
def rlhub_left_out() -> list[dict[str, str]]:
    """Every environment skyrl-gym registers, none of which ships tasks."""
    return catalog.left_out()
