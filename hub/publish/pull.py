"""``rlhub pull``: download a bundle, verify every hash, install it under ``$RLHUB_HOME/envs``.

Nothing is used before it is verified: the bundle is downloaded into a scratch folder under
``$RLHUB_HOME/tmp``, every file is checked against ``rlhub.lock`` (and the lock against the id the
reference named, when the remote knows it, and against ``--expect-lock``), the data-only domain
files are checked to read only datasets inside the bundle and, unless ``trust_remote_code``, to
declare nothing the user's policy forbids (:mod:`rlhub.trust`); the bundle must take no domain id,
plugin namespace or environment name from another source; and the reference must still resolve to
the bundle the project pinned (:mod:`rlhub.hub.publish.pins`) unless ``update``. Only then are the
verified files moved, in one rename, to::

    $RLHUB_HOME/envs/<name>/<tag, or the bundle id's first 16 hex digits>/

where discovery (step 3, :func:`rlhub.plugins.domain_file_paths`) finds the YAML files under
``domains/``: every later command sees the data-only domains. The install record
(``.rlhub-pull.json``) says where it came from and whether it was pulled with trust. One revision
of an environment is installed at a time (two would declare the same domain ids), so a pull
replaces the others.

A plugin wheel runs code, so it is installed (``pip install --no-deps``) only with
``trust_remote_code``; otherwise the result says how to install it by hand.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.datadomain import INSTALL_RECORD
from rlhub.hub.publish.admission import admit, domain_files
from rlhub.hub.publish.bundle import Bundle, safe_relpath, verify_bundle
from rlhub.hub.publish.errors import HubError, IntegrityError
from rlhub.hub.publish.pins import PROJECT_LOCK, Pins
from rlhub.hub.publish.remote import (
    BUNDLE_ID_RE,
    DEFAULT_REVISION,
    TAG_RE,
    Fetched,
    parse_ref,
)
from rlhub.hub.publish.transports import open_remote

if TYPE_CHECKING:
    from rlhub.plugins import Registry

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
PIP_TIMEOUT_S = 600


@dataclass
class PullResult:
    """What a pull installed, and what it left for the user to do."""

    name: str
    bundle: str
    path: str
    source: str
    revision: str
    resolved: str
    domains: list[str]
    registered: list[str]
    wheels: list[dict[str, Any]] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    trusted: bool = False
    pinned: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PullOptions:
    """How careful a pull is: trust, pins and an expected lock hash."""

    trust_remote_code: bool = False
    update: bool = False  # accept a bundle other than the one the project lock pins
    expect_lock: str | None = None  # the bundle id (lock sha256) the user expects
    project_lock: str | os.PathLike[str] | None = PROJECT_LOCK  # None: do not pin


def pull(
    ref: str, options: PullOptions = PullOptions(), *, registry: Registry | None = None
) -> PullResult:
    """Download, verify and install the bundle ``ref`` names (``URL[@revision]``).

    :param registry: What is installed now, to refuse a bundle that declares a domain another
        source provides (default: a fresh discovery).
    """
    from rlhub.home import rlhub_home
    from rlhub.plugins import Registry

    parsed = parse_ref(ref)
    pins = Pins(options.project_lock) if options.project_lock is not None else None
    remote = open_remote(parsed.url)
    home = rlhub_home()
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home / "tmp", prefix="pull-") as scratch:
        fetched = remote.fetch(parsed.revision, Path(scratch) / "download")
        bundle = _verified(fetched, str(parsed.url), options.expect_lock)
        if pins is not None and not options.update:
            pins.check(parsed, bundle.id, fetched.resolved)
        admit(bundle, parsed, options.trust_remote_code, registry or Registry(), home)
        target, replaced = _install(bundle, fetched, parsed.url, home, Path(scratch),
                                    options.trust_remote_code)
    wheels = [_wheel(target, w, options.trust_remote_code) for w in bundle.lock.get("wheels", [])]
    if pins is not None:
        pins.record(parsed, {"resolved": fetched.resolved, "bundle": bundle.id,
                             "name": bundle.name, "trusted": options.trust_remote_code})
    return PullResult(bundle.name, bundle.id, str(target), parsed.url, fetched.revision,
                      fetched.resolved, sorted(bundle.lock["domains"]),
                      _registered(bundle, target, wheels), wheels, replaced,
                      options.trust_remote_code, str(pins.path) if pins else None)


def _registered(bundle: Bundle, target: Path, wheels: list[dict[str, Any]]) -> list[str]:
    """The bundle's domains that discovery now really takes from this installation."""
    from rlhub.plugins import Registry

    fresh = Registry()
    dists = {w["distribution"] for w in wheels if w["installed"]}
    out = []
    for domain_id in sorted(bundle.lock["domains"]):
        manifest = fresh.manifests.get(domain_id)
        if manifest is None:
            continue
        from_here = bool(manifest.source) and Path(manifest.source).is_relative_to(target)
        if from_here or (not manifest.source and manifest.distribution in dists):
            out.append(domain_id)
    return out


def _verified(fetched: Fetched, url: str, expect_lock: str | None) -> Bundle:
    where = f"{url}@{fetched.revision}"
    if expect_lock is not None and not BUNDLE_ID_RE.match(expect_lock):
        raise HubError(f"--expect-lock: expected the 64 hex digits of a bundle id (the sha256 "
                       f"of its rlhub.lock), found {expect_lock!r}")
    try:
        bundle = verify_bundle(fetched.root, fetched.expected_id, where=where)
        if expect_lock is not None and bundle.id != expect_lock:
            raise IntegrityError(f"bundle at {where}: expected the bundle {expect_lock} "
                                 f"(--expect-lock), found a lock hashing to {bundle.id}")
        _check_domain_files(bundle)
    except IntegrityError as exc:
        raise IntegrityError(f"{exc}. The bundle was refused and nothing was installed.") from None
    if not NAME_RE.match(bundle.name):
        raise IntegrityError(
            f"bundle at {where}: expected a plain environment name, found "
            f"{bundle.name!r}; nothing was installed"
        )
    return bundle


def _check_domain_files(bundle: Bundle) -> None:
    """A pulled domain file may only read a dataset that the bundle holds (and so verified), and
    no bundle brings its own install record."""
    import yaml

    files = set(bundle.lock["files"])
    forged = sorted(f for f in files if safe_relpath(f).split("/")[0] == INSTALL_RECORD)
    if forged:
        raise IntegrityError(f"bundle file {forged[0]}: a bundle may not ship {INSTALL_RECORD}, "
                             "the record of how rlhub installed it (and whether with trust)")
    for rel in domain_files(bundle):
        raw = yaml.safe_load((bundle.root / rel).read_text())
        dataset = raw.get("dataset", "") if isinstance(raw, dict) else ""
        inside = "://" not in dataset and not dataset.startswith("/")
        target = f"domains/{safe_relpath(dataset)}" if inside and dataset else None
        if target not in files:
            raise IntegrityError(
                f"bundle file {rel}: expected its dataset to be a file of the "
                f"bundle under domains/, found {dataset!r}"
            )


def _install_dirname(revision: str, bundle_id: str) -> str:
    """A tag names its folder; ``main``, a bundle id or a commit pins by the bundle id."""
    moving = (
        revision == DEFAULT_REVISION
        or BUNDLE_ID_RE.match(revision)
        or COMMIT_RE.match(revision)
        or not TAG_RE.match(revision)
    )
    return bundle_id[:16] if moving else revision


def _install(
    bundle: Bundle, fetched: Fetched, url: str, home: Path, scratch: Path, trusted: bool
) -> tuple[Path, list[str]]:
    """Move the verified files to their final folder in one rename; drop other revisions."""
    staged = scratch / "install"
    for rel in bundle.paths():
        (staged / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(bundle.root / rel, staged / rel)
    record = {
        "source": url,
        "revision": fetched.revision,
        "resolved": fetched.resolved,
        "bundle": bundle.id,
        "name": bundle.name,
        "trusted": trusted,  # read by discovery: untrusted domain files are held to the policy
    }
    (staged / INSTALL_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    env_dir = home / "envs" / bundle.name
    target = env_dir / _install_dirname(fetched.revision, bundle.id)
    env_dir.mkdir(parents=True, exist_ok=True)
    if target.exists():
        os.replace(target, scratch / "previous")
    os.replace(staged, target)
    replaced = [str(p) for p in sorted(env_dir.iterdir()) if p != target and p.is_dir()]
    for path in replaced:
        shutil.rmtree(path)
    return target, replaced


def _wheel(target: Path, wheel: dict[str, Any], trust: bool) -> dict[str, Any]:
    path = target / safe_relpath(wheel["path"])
    info = {
        **wheel,
        "file": str(path),
        "installed": False,
        "install_command": f"{sys.executable} -m pip install --no-deps {path}",
    }
    if not trust:
        return info
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--quiet",
        "--disable-pip-version-check",
        str(path),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
        raise HubError(
            f"pip install --no-deps {path.name} failed (exit {proc.returncode}):\n{tail}"
        )
    importlib.invalidate_caches()
    info["installed"] = True
    return info
