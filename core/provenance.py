"""Provenance: content hashes that pin exactly which code and data produced a reward.

``domain_provenance(manifest, verifiers)`` is what every lock records for a domain (trajectories store the
same hashes, see ``rlhub.store.trajectory_provenance``): its id and version, the plugin's
distribution and version, ``verifier_code_hash`` and ``libraries``.

``verifier_code_hash`` is the sha256 of the source of every module that decides the domain's
rewards: its factory's module and its named verifiers' modules (a composite's parts included),
each with every module of its own package it imports (:mod:`rlhub.sourcegraph`), and for a
data-only domain the domain file and its dataset. Change a line of the verifier, or of a helper
it imports, and the hash changes. ``libraries`` are the versions of the third-party
distributions that code imports (math-verify, reasoning-gym, ...). A bridged domain's manifest
``requires`` its source package: the installed versions (``source_versions``) are recorded and
folded into the hash, so upgrading the game library a bridge plays changes it. Installed versions
are read with ``versions(name)`` (a registry's ``versions``, by default
:func:`distribution_version`), so a test can pass the versions of another installation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from rlhub import sourcegraph
from rlhub.manifest import Manifest

Versions = Callable[[str], str]  # a distribution's installed version, "" when it is missing


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_json(value: Any) -> str:
    """The sha256 of a value's canonical JSON (sorted keys, no spaces)."""
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _verifier_modules(spec: Any, refs: Mapping[str, str]) -> list[str]:
    """The modules of a named verifier and, for a composite, of each of its parts."""
    if not isinstance(spec, dict) or spec.get("name") not in refs:
        return []
    modules = [refs[spec["name"]].partition(":")[0]]
    for part in (spec.get("options") or {}).get("parts") or []:
        modules += _verifier_modules({"name": part} if isinstance(part, str) else part, refs)
    if "rlhub.verifiers.pytests" in modules:
        modules.append("rlhub.verifiers.pyharness")  # read as a resource, run in the sandbox
    return modules


def code_roots(manifest: Manifest, verifiers: Mapping[str, str]) -> list[str]:
    """The modules that decide this domain's rewards: its factory's and its verifiers'.

    :param verifiers: The registry's named verifiers (``registry.services.verifier_refs()``).
    """
    factory = manifest.data["factory"].partition(":")[0]
    return sorted({factory, *_verifier_modules(manifest.data.get("verifier"), verifiers)})


def verifier_code_hash(manifest: Manifest, verifiers: Mapping[str, str],
                       versions: Versions | None = None) -> str:
    """sha256 over the sources that decide this domain's rewards (see the module docstring)."""
    sources: dict[str, str] = {}
    for root in code_roots(manifest, verifiers):
        sources.update(sourcegraph.closure(root))
    parts = [manifest.data["factory"], *(f"{m}={h}" for m, h in sorted(sources.items()))]
    parts += [f"{name}=={version}" for name, version in source_versions(manifest, versions).items()]
    if manifest.source:
        parts.append(sha256_file(manifest.source))
        dataset = manifest.data["params"].get("dataset", "")
        local = Path(manifest.data["params"].get("base_dir", ""), dataset)
        if "://" not in dataset and local.is_file():
            parts.append(sha256_file(local))
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def scoring_libraries(manifest: Manifest, verifiers: Mapping[str, str]) -> dict[str, str]:
    """``{distribution: version}`` of the third-party libraries that code imports."""
    own = frozenset({manifest.distribution})
    out: dict[str, str] = {}
    for root in code_roots(manifest, verifiers):
        out.update(sourcegraph.libraries(root, own))
    return dict(sorted(out.items()))


def distribution_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def source_versions(manifest: Manifest, versions: Versions | None = None) -> dict[str, str]:
    """Installed version of each distribution the manifest ``requires`` ("" when missing)."""
    version = versions or distribution_version
    return {name: version(name) for name in sorted(manifest.data.get("requires", {}))}


def domain_provenance(manifest: Manifest, verifiers: Mapping[str, str],
                      versions: Versions | None = None) -> dict[str, Any]:
    """The record that pins one domain: ids, versions and the verifier code hash.

    A domain whose manifest ``requires`` other distributions also records ``source_versions``;
    a bridged domain (its manifest's ``params.bridge``) records which bridge plugin and which
    source package and version it needs.
    """
    bridge = manifest.data.get("params", {}).get("bridge")
    version = versions or distribution_version
    record = {
        **({"bridge": bridge} if isinstance(bridge, dict) else {}),
        "domain": manifest.id,
        "domain_version": manifest.version,
        "plugin": manifest.plugin,
        "distribution": manifest.distribution,
        "distribution_version": version(manifest.distribution),
        "manifest_hash": sha256_json(manifest.data),
        "verifier_code_hash": verifier_code_hash(manifest, verifiers, versions),
        "libraries": scoring_libraries(manifest, verifiers),
    }
    if manifest.data.get("requires"):
        record["source_versions"] = source_versions(manifest, versions)
    return record
