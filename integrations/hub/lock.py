"""Locks: content hashes that pin exactly which domains a run used.

Two kinds of lock share one JSON format (``"rlhub_lock": 1``) and one hash rule: the lock hash
is the sha256 of the lock's canonical JSON (sorted keys, no spaces) without its own
``lock_hash`` field, which records it.

* A **mixture lock** (``"kind": "mixture"``) is written by ``rlhub lock --mixture FILE``: the
  versions of the plugins involved and one record per domain of the mixture.
  It also records rlhub's version and the normalised mixture itself. ``rlhub train --locked``
  and ``rlhub eval --locked`` call :func:`check_lock` with the mixture they run and refuse to run
  when it reports any difference (rlhub's version, a domain's record, a scoring library's
  version, a domain added to or dropped from the mixture, any other mixture setting);
  trajectories carry the lock's :func:`lock_hash`.
* A **bundle lock** (``"kind": "bundle"``) is the ``rlhub.lock`` of every pushed bundle
  (:mod:`rlhub.integrations.hub.bundle`); it also lists the sha256 of each file, and its lock hash is the
  bundle's id.

A domain record is :func:`rlhub.provenance.domain_provenance` (``registry.services.provenance``)
made portable, so that a lock written on one machine checks on another: a data-only domain's
distribution is named by its file name, not its absolute path, and its manifest hash leaves out
the folder the file sits in; a ``sandbox.dockerfile`` path is replaced by the sha256 of the
Dockerfile it names.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.integrations.hub.errors import HubError
from rlhub.manifest import Manifest
from rlhub.provenance import sha256_file, sha256_json

if TYPE_CHECKING:
    from rlhub.plugins import Registry

LOCK_VERSION = 1
LOCK_FILE = "rlhub.lock"
# The fields of a domain record that must match for a locked run to go ahead.
COMPARED = (
    "domain_version",
    "plugin",
    "distribution_version",
    "manifest_hash",
    "verifier_code_hash",
    "source_versions",
)


def lock_hash(lock: dict[str, Any]) -> str:
    """The sha256 of a lock's canonical JSON, leaving out its ``lock_hash`` field."""
    return sha256_json({k: v for k, v in lock.items() if k != "lock_hash"})


def seal(lock: dict[str, Any]) -> dict[str, Any]:
    """Set ``lock["lock_hash"]`` and return the lock."""
    lock["lock_hash"] = lock_hash(lock)
    return lock


def portable_manifest(manifest: Manifest) -> dict[str, Any]:
    """The manifest data without machine-specific paths (see the module docstring)."""
    data = copy.deepcopy(manifest.data)
    if manifest.source:
        data.get("params", {}).pop("base_dir", None)
    sandbox = data.get("sandbox") or {}
    dockerfile = sandbox.get("dockerfile")
    if dockerfile and Path(dockerfile).is_file():
        sandbox["dockerfile"] = "sha256:" + sha256_file(dockerfile)
    return data


def domain_record(manifest: Manifest, registry: Registry) -> dict[str, Any]:
    """The portable provenance record of one domain of ``registry``, as locks store it."""
    record = registry.services.provenance(manifest)
    record["manifest_hash"] = sha256_json(portable_manifest(manifest))
    if manifest.source:
        record["distribution"] = f"domain file {Path(manifest.source).name}"
    return record


def mixture_lock(
    mixture: str | os.PathLike[str] | dict[str, Any], registry: Registry
) -> dict[str, Any]:
    """Build (and seal) the lock of a mixture: every concrete domain it names, after globbing."""
    from rlhub import __version__
    from rlhub.mixture import load_mixture

    config = load_mixture(mixture, registry)
    manifests = [registry.manifest(d) for d in sorted(config["domains"])]
    lock = {
        "rlhub_lock": LOCK_VERSION,
        "kind": "mixture",
        "rlhub_version": __version__,
        "mixture": {
            "source": str(mixture) if not isinstance(mixture, dict) else None,
            "hash": sha256_json(config),
            "config": config,
        },
        "plugins": plugin_versions(registry, manifests),
        "domains": {m.id: domain_record(m, registry) for m in manifests},
    }
    return seal(lock)


def plugin_versions(registry: Registry, manifests: Iterable[Manifest]) -> dict[str, Any]:
    """``{plugin: {distribution, version}}`` for the plugins behind ``manifests``."""
    out: dict[str, Any] = {}
    for manifest in manifests:
        info = registry.plugins.get(manifest.plugin)
        if info is not None:
            out[manifest.plugin] = {"distribution": info.distribution, "version": info.version}
        else:  # a data-only namespace: its "version" is its domains' versions
            out.setdefault(
                manifest.plugin, {"distribution": "data-only domain files", "version": None}
            )
    return out


def dumps(lock: dict[str, Any]) -> str:
    """The text a lock file holds: indented, sorted JSON ending in a newline."""
    return json.dumps(lock, indent=2, sort_keys=True) + "\n"


def write_lock(lock: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``lock`` to ``path`` atomically (a reader never sees half a lock)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(dumps(lock))
    os.replace(tmp, path)
    return path


def parse_lock(text: str, where: str) -> dict[str, Any]:
    """Parse and check a lock's text: its format version and its recorded hash."""
    try:
        lock = json.loads(text)
    except ValueError as exc:
        raise HubError(f"{where}: expected a JSON lock, found a syntax error: {exc}") from exc
    if not isinstance(lock, dict) or lock.get("rlhub_lock") != LOCK_VERSION:
        found = lock.get("rlhub_lock") if isinstance(lock, dict) else type(lock).__name__
        raise HubError(f"{where}: expected an rlhub lock of format {LOCK_VERSION}, found {found!r}")
    actual = lock_hash(lock)
    if lock.get("lock_hash") != actual:
        raise HubError(
            f"{where}: expected the recorded lock_hash {lock.get('lock_hash')!r}, found "
            f"content hashing to {actual!r}; the lock was edited after it was written. "
            "Write it again with `rlhub lock`."
        )
    return lock


def read_lock(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a lock file; errors name the file and what is wrong with it."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise HubError(f"lock {path}: expected a readable file, found {exc.strerror}") from exc
    return parse_lock(text, f"lock {path}")


def diff_domains(locked: dict[str, Any], registry: Registry) -> list[str]:
    """One line per difference between locked domain records and what ``registry`` has now."""
    problems: list[str] = []
    for domain_id, want in sorted(locked.items()):
        if domain_id not in registry.manifests:
            source = " ".join(
                str(p) for p in (want.get("distribution"), want.get("distribution_version")) if p
            )
            problems.append(
                f"domain {domain_id}: locked but not installed (expected it from "
                f"{source}; install that plugin or `rlhub pull` the environment)"
            )
            continue
        have = domain_record(registry.manifest(domain_id), registry)
        for field in COMPARED:
            if want.get(field) != have.get(field):
                problems.append(
                    f"domain {domain_id}: {field} changed from "
                    f"{_short(want.get(field))} to {_short(have.get(field))}"
                )
        problems += [f"domain {domain_id}: {p}" for p in _diff_libraries(want, have)]
    return problems


def _diff_libraries(want: dict[str, Any], have: dict[str, Any]) -> list[str]:
    """The scoring libraries whose installed version differs from the locked one."""
    if "libraries" not in want:
        return ["the lock records no scoring libraries (it was written by an older rlhub); "
                "write it again with `rlhub lock`"]
    locked, now = want["libraries"], have.get("libraries", {})
    return [f"library {name} changed from {_version(locked.get(name))} to "
            f"{_version(now.get(name))}"
            for name in sorted(set(locked) | set(now)) if locked.get(name) != now.get(name)]


def _version(value: str | None) -> str:
    return repr(value) if value is not None else "not installed or not imported"


def diff_mixture(lock: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """One line per difference between the locked mixture and the one the run uses."""
    locked = (lock.get("mixture") or {}).get("config")
    if locked is None:
        return ["mixture: the lock records no mixture config (it was written by an older "
                "rlhub); write it again with `rlhub lock --mixture FILE`"]
    want, have = set(locked["domains"]), set(config["domains"])
    problems = [f"mixture: domain {d} is not in the lock; lock the mixture again with "
                f"`rlhub lock --mixture FILE` to cover it" for d in sorted(have - want)]
    problems += [f"mixture: domain {d} is locked but no longer in the mixture"
                 for d in sorted(want - have)]
    old, new = _flatten(locked), _flatten(config)
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key) and not _is_domain_key(key, want ^ have):
            problems.append(f"mixture: {key} changed from {old.get(key)!r} to {new.get(key)!r}")
    return problems


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, item in value.items():
        out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _is_domain_key(key: str, domains: set[str]) -> bool:
    return any(key.startswith(f"domains.{d}.") or key == f"domains.{d}" for d in domains)


def check_lock(
    lock_path: str | os.PathLike[str],
    registry: Registry,
    mixture: str | os.PathLike[str] | dict[str, Any] | None = None,
    *,
    mixed: dict[str, Any] | None = None,
) -> list[str]:
    """Compare a mixture lock with rlhub, the installed domains and the mixture; the differences.

    Each line names what changed (``rlhub_version changed from ...``, ``domain
    math/arithmetic-v1: verifier_code_hash changed from 3f2a... to 9bc0...``, ``domain ...:
    library math-verify changed from ...``, ``mixture: domain X is not in the lock``); an empty
    list means the run may go ahead. A lock that cannot be read, or whose hash does not match its
    content, is one problem line too. ``rlhub train --locked`` and ``rlhub eval --locked`` pass
    the mixture they run and refuse to run when this is not empty. ``mixed`` is the mixture as
    :func:`rlhub.mixture.load_mixture` returned it, when the caller has read it already.
    """
    from rlhub import __version__
    from rlhub.mixture import load_mixture

    try:
        lock = read_lock(lock_path)
    except HubError as exc:
        return [str(exc)]
    problems = []
    if lock.get("rlhub_version") != __version__:
        problems.append(f"rlhub_version changed from {lock.get('rlhub_version')!r} to "
                        f"{__version__!r}")
    problems += diff_domains(lock.get("domains", {}), registry)
    if mixed is None and mixture is not None:
        mixed = load_mixture(mixture, registry)
    if mixed is not None:
        problems += diff_mixture(lock, mixed)
    return problems


def _short(value: Any) -> str:
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
        return value[:12] + "..."
    return repr(value)
