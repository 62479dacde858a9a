"""Provenance: content hashes that pin exactly which code and data produced a reward.

``domain_provenance(manifest)`` is what every lock records for a domain (trajectories store the
same hashes, see ``rlhub.store.trajectory_provenance``): its
id and version, the plugin's distribution and version, and ``verifier_code_hash`` — the sha256 of
the source of the domain's factory module and of its named verifier's module (for a data-only
domain: the domain file and its dataset too). Change a line of the verifier and the hash changes.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
from importlib import metadata
from pathlib import Path
from typing import Any

from rlhub.manifest import Manifest


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


@functools.cache
def module_source_hash(module_name: str) -> str:
    """sha256 of a module's source file, found without importing it ("" if it has none)."""
    spec = importlib.util.find_spec(module_name)
    origin = spec.origin if spec else None
    if not origin or not Path(origin).is_file():
        return ""
    return sha256_file(origin)


def _verifier_module(manifest: Manifest) -> str | None:
    spec = manifest.data.get("verifier")
    if not spec:
        return None
    from rlhub.plugins import registry

    ref = registry().verifier_refs().get(spec["name"])
    return ref.partition(":")[0] if ref else None


def verifier_code_hash(manifest: Manifest) -> str:
    """sha256 over the sources that decide this domain's rewards (see the module docstring)."""
    parts = [manifest.data["factory"], module_source_hash(manifest.data["factory"].partition(":")[0])]
    verifier = _verifier_module(manifest)
    if verifier:
        parts += [verifier, module_source_hash(verifier)]
        if verifier == "rlhub.verifiers.pytests":
            parts.append(module_source_hash("rlhub.verifiers.pyharness"))
    if manifest.source:
        parts.append(sha256_file(manifest.source))
        dataset = manifest.data["params"].get("dataset", "")
        local = Path(manifest.data["params"].get("base_dir", ""), dataset)
        if "://" not in dataset and local.is_file():
            parts.append(sha256_file(local))
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def distribution_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def domain_provenance(manifest: Manifest) -> dict[str, Any]:
    """The record that pins one domain: ids, versions and the verifier code hash.

    A bridged domain (its manifest's ``params.bridge``) also records which bridge plugin and
    which source package and version it needs.
    """
    bridge = manifest.data.get("params", {}).get("bridge")
    return {**({"bridge": bridge} if isinstance(bridge, dict) else {}),
        "domain": manifest.id,
        "domain_version": manifest.version,
        "plugin": manifest.plugin,
        "distribution": manifest.distribution,
        "distribution_version": distribution_version(manifest.distribution),
        "manifest_hash": sha256_json(manifest.data),
        "verifier_code_hash": verifier_code_hash(manifest),
    }
