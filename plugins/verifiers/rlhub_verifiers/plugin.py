"""rlhub plugin ``vf``: manifests of the installed verifiers environments, read from a cache.

Nothing here imports verifiers: :mod:`rlhub_verifiers.discover` finds the environments from
distribution metadata; one not described yet is declared deferred and described on first use, in
a child interpreter.
"""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

from rlhub_verifiers import discover


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    """One domain per installed verifiers environment that meets the contract, or may (deferred:
    not described yet)."""
    return [entry.get("manifest") or entry["declared"] for entry in discover.listed()
            if "excluded" not in entry]


@hookimpl
def rlhub_left_out() -> list[dict[str, str]]:
    """The installed verifiers environments left out when they were described, with the reason."""
    return [{"id": entry["id"], "reason": entry["excluded"]}
            for entry in discover.listed() if "excluded" in entry]
