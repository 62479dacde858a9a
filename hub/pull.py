"""``rlhub pull``: download a bundle, verify every hash, install it under ``$RLHUB_HOME/envs``.

Nothing is used before it is verified: the bundle is downloaded into a scratch folder under
``$RLHUB_HOME/tmp``, every file is checked against ``rlhub.lock`` (and the lock against the id the
reference named, when the remote knows it), the data-only domain files are checked to read only
datasets inside the bundle, and only then are the verified files moved, in one rename, to::

    $RLHUB_HOME/envs/<name>/<tag, or the bundle id's first 16 hex digits>/

where discovery (step 3, :func:`rlhub.plugins.domain_file_paths`) finds the YAML files under
``domains/``: every later command sees the data-only domains. One revision of an environment is
installed at a time (two would declare the same domain ids), so a pull replaces the others.

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
from rlhub.hub.bundle import Bundle, safe_relpath, verify_bundle
from rlhub.hub.errors import HubError, IntegrityError, PolicyError
from rlhub.hub.pins import PROJECT_LOCK, Pins
from rlhub.hub.remote import (
    BUNDLE_ID_RE,
    DEFAULT_REVISION,
    TAG_RE,
    Fetched,
    Ref,
    open_remote,
    parse_ref,
)

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
    from rlhub.plugins import Registry, reset, rlhub_home

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
        _check_admissible(bundle, parsed, options, registry or Registry(), home)
        target, replaced = _install(bundle, fetched, parsed.url, home, Path(scratch),
                                    options.trust_remote_code)
    wheels = [_wheel(target, w, options.trust_remote_code) for w in bundle.lock.get("wheels", [])]
    if pins is not None:
        pins.record(parsed, {"resolved": fetched.resolved, "bundle": bundle.id,
                             "name": bundle.name, "trusted": options.trust_remote_code})
    reset()  # the next registry() rediscovers, and sees the new domains
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


def _check_admissible(bundle: Bundle, ref: Ref, options: PullOptions, registry: Registry,
                      home: Path) -> None:
    """Refuse, before installing, a bundle that asks too much or takes over another's domains."""
    if not options.trust_remote_code:
        _check_policy(bundle)
    problems = _conflicts(bundle, ref, registry, home)
    if problems:
        raise HubError(f"pull {ref}: refused: " + "; ".join(problems) + ". Nothing was installed.")


def _check_policy(bundle: Bundle) -> None:
    """Every domain file must stay within what the user's policy lets an untrusted one declare."""
    import yaml

    from rlhub.datadomain import refuse_untrusted
    from rlhub.errors import ManifestError
    from rlhub.trust import Policy, UntrustedEnv
    from rlhub.userconfig import load_user_config

    env = UntrustedEnv(bundle.name, Policy.from_config(load_user_config()))
    for rel in _domain_files(bundle):
        raw = yaml.safe_load((bundle.root / rel).read_text())
        try:
            refuse_untrusted(raw if isinstance(raw, dict) else {}, env, f"bundle file {rel}")
        except ManifestError as exc:
            raise PolicyError(f"{exc} Nothing was installed.") from None


def _conflicts(bundle: Bundle, ref: Ref, registry: Registry, home: Path) -> list[str]:
    """One line per domain of the bundle that another installed source provides or owns."""
    mine = (home / "envs" / bundle.name).resolve()
    dists = {w["distribution"] for w in bundle.lock.get("wheels", [])}
    source = str(ref)
    problems = [p for p in [_other_install(mine, ref)] if p]
    for domain_id, entry in sorted(bundle.lock["domains"].items()):
        namespace = domain_id.split("/", 1)[0]
        plugin = registry.plugins.get(namespace)
        data_only = str(entry.get("code") or "").startswith("domains/")
        other = registry.manifests.get(domain_id)
        if plugin is not None and (data_only or plugin.distribution not in dists):
            problems.append(f"domain {domain_id} of bundle {bundle.name} from {source}: its "
                            f"namespace {namespace!r} belongs to the plugin {plugin.name} from "
                            f"{plugin.distribution}")
        elif other is not None and not _is_within(other.source, mine) and (
            data_only or other.distribution not in dists
        ):
            problems.append(f"domain {domain_id} of bundle {bundle.name} from {source} is "
                            f"already provided by {other.distribution}; remove that source or "
                            "ask the publisher to rename the domain")
    return problems


def _other_install(env_dir: Path, ref: Ref) -> str | None:
    """A problem when ``env_dir`` holds an environment of the same name from another remote."""
    for record in sorted(env_dir.glob(f"*/{INSTALL_RECORD}")):
        try:
            installed_from = json.loads(record.read_text()).get("source")
        except (OSError, ValueError, AttributeError):
            installed_from = None
        if installed_from != ref.url:
            return (f"an environment named {env_dir.name!r} is already installed in "
                    f"{record.parent} from {installed_from}; remove it first (`rm -r "
                    f"{record.parent}`) to install the one from {ref}")
    return None


def _is_within(path: str, folder: Path) -> bool:
    return bool(path) and Path(path).resolve().is_relative_to(folder)


def _domain_files(bundle: Bundle) -> list[str]:
    """The bundle's domain files discovery reads (``domains/*.yaml``, not deeper)."""
    return [rel for rel in sorted(bundle.lock["files"])
            if rel.startswith("domains/") and rel.endswith((".yaml", ".yml"))
            and rel.count("/") == 1]


def _check_domain_files(bundle: Bundle) -> None:
    """A pulled domain file may only read a dataset that the bundle holds (and so verified)."""
    import yaml

    files = set(bundle.lock["files"])
    for rel in _domain_files(bundle):
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
