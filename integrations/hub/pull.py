"""``rlhub pull``: download a bundle, check it, install it under ``$RLHUB_HOME/envs`` by content.

Nothing is used before it is checked. The bundle is downloaded into a scratch folder under
``$RLHUB_HOME/tmp`` (every lock key a plain path and the bundle within the user's caps before any
download, each file no larger than its lock says: :mod:`rlhub.integrations.hub.fetching`), then each
check below runs in order and is recorded (``rlhub pull --json`` prints them as ``checks``); the
first that fails refuses the bundle, with nothing installed:

``hashes``        every file against ``rlhub.lock``, the lock against the id the reference named
                  (when the remote knows it) and ``--expect-lock``; a plain environment name
``domain files``  schema, YAML, datasets inside the bundle (:mod:`rlhub.integrations.hub.checks`)
``identity``      the ids the lock declares are the ids its files declare
``pin``           the reference still resolves to the bundle the project pinned, unless ``update``
``policy``        unless ``trust_remote_code``: what the user's policy lets an untrusted
                  environment declare (:mod:`rlhub.trust`)
``grading data``  schemas that refer outside themselves, patterns RE2 refuses
``datasets``      every dataset read under the user's caps, every row's answer checked
``shadowing``     no domain id, plugin namespace or environment name another source provides
``probes``        the contract kit's integrity probes (:mod:`rlhub.integrations.hub.probing`)

Only then are the verified files moved, in one rename, to ``$RLHUB_HOME/envs/<name>/<bundle id>/``
and ``envs/<name>/current`` is pointed at it (:mod:`rlhub.installs`): a bundle is never
overwritten by another, so a project's pin keeps selecting the bundle it pinned whatever another
project pulls later. The install record (``.rlhub-pull.json``) says where it came from, whether it
was pulled with trust, and the probe classes each domain was found hackable by.

A plugin wheel runs code, so it is installed (``pip install --no-deps``) only with
``trust_remote_code``; otherwise the result says how to install it by hand.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.integrations.hub.admission import admit, check_policy
from rlhub.integrations.hub.bundle import Bundle, verify_bundle
from rlhub.integrations.hub.checks import (
    CheckLog,
    check_datasets,
    check_grading_data,
    check_identity,
    read_domain_files,
)
from rlhub.integrations.hub.errors import HubError, IntegrityError, PolicyRefused
from rlhub.integrations.hub.fetching import BundleCaps, lock_key
from rlhub.integrations.hub.pins import PROJECT_LOCK, Pins
from rlhub.integrations.hub.probing import ProbePolicy, paid_problem, probe_domains
from rlhub.integrations.hub.remote import BUNDLE_ID_RE, Fetched, Ref, parse_ref
from rlhub.integrations.hub.transports import open_remote
from rlhub.installs import CURRENT, INSTALL_RECORD

if TYPE_CHECKING:
    from rlhub.plugins import Registry
    from rlhub.userconfig import UserConfig

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
PIP_TIMEOUT_S = 600


@dataclass
class PullResult:
    """What a pull installed, every check it ran, and what it left for the user to do."""

    name: str
    bundle: str
    path: str
    source: str
    revision: str
    resolved: str
    domains: list[str]
    registered: list[str]
    wheels: list[dict[str, Any]] = field(default_factory=list)
    trusted: bool = False
    pinned: str | None = None
    hackable: dict[str, list[str]] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)

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
    ref: str, options: PullOptions = PullOptions(), *, registry: Registry | None = None,
    config: UserConfig | None = None,
) -> PullResult:
    """Download, check and install the bundle ``ref`` names (``URL[@revision]``).

    :param registry: What is installed now, to refuse a bundle that declares a domain another
        source provides (default: a fresh discovery).
    :param config: The user's configuration (caps, policy; default: the one on disk).
    """
    from rlhub.home import rlhub_home
    from rlhub.plugins import Registry
    from rlhub.userconfig import load_user_config

    config = config or load_user_config()
    registry = registry or Registry()
    parsed = parse_ref(ref)
    pins = Pins(options.project_lock) if options.project_lock is not None else None
    home = rlhub_home()
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    log = CheckLog()
    try:
        with tempfile.TemporaryDirectory(dir=home / "tmp", prefix="pull-") as scratch:
            bundle, fetched, marks = _checked(parsed, options, pins, config, log, registry, home,
                                              Path(scratch))
            target = _install(bundle, fetched, parsed.url, home, Path(scratch),
                              options.trust_remote_code, marks)
    except HubError as exc:
        exc.checks = log.results  # type: ignore[attr-defined]  # what --json reports
        raise
    wheels = [_wheel(target, w, options.trust_remote_code) for w in bundle.lock.get("wheels", [])]
    if pins is not None:
        pins.record(parsed, {"resolved": fetched.resolved, "bundle": bundle.id,
                             "name": bundle.name, "trusted": options.trust_remote_code})
    return PullResult(bundle.name, bundle.id, str(target), parsed.url, fetched.revision,
                      fetched.resolved, sorted(bundle.lock["domains"]),
                      _registered(bundle, target, wheels, registry), wheels,
                      options.trust_remote_code, str(pins.path) if pins else None, marks,
                      log.results)


def _checked(parsed: Ref, options: PullOptions, pins: Pins | None, config: UserConfig,
             log: CheckLog, registry: Registry, home: Path, scratch: Path
             ) -> tuple[Bundle, Fetched, dict[str, list[str]]]:
    """Download the bundle and run every check of the module docstring, in order."""
    from rlhub.datasets import DatasetCaps

    with log.check("lock keys and caps") as entry:
        remote = open_remote(parsed.url)
        fetched = remote.fetch(parsed.revision, scratch / "download",
                               BundleCaps.from_config(config))
        entry["detail"] = f"within {BundleCaps.from_config(config)}"
    with log.check("hashes") as entry:
        bundle = _verified(fetched, str(parsed.url), options.expect_lock)
        entry["detail"] = f"{len(bundle.lock['files'])} files match bundle {bundle.id}"
    with log.check("domain files") as entry:
        files = read_domain_files(bundle)
        entry["detail"] = sorted(files)
    with log.check("identity") as entry:
        entry["detail"] = check_identity(bundle, files)
    if pins is not None and not options.update:
        with log.check("pin") as entry:
            pins.check(parsed, bundle.id, fetched.resolved)
            entry["detail"] = pins.key(parsed)
    with log.check("policy") as entry:
        if options.trust_remote_code:
            entry["detail"] = "not checked: pulled with --trust-remote-code"
        else:
            check_policy(bundle, files, config)
    with log.check("grading data"):
        check_grading_data(files)
    with log.check("datasets") as entry:
        entry["detail"] = check_datasets(bundle, files, DatasetCaps.from_config(config))
    with log.check("shadowing"):
        admit(bundle, files, parsed, registry, home)
    with log.check("probes") as entry:
        marks, entry["detail"] = _probes(bundle, files, ProbePolicy.from_config(config))
    return bundle, fetched, marks


def _probes(bundle: Bundle, files: dict[str, dict[str, Any]], policy: ProbePolicy
            ) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Probe the bundle's domains; refuse, or mark, those that pay a probe, as ``policy`` says."""
    results = probe_domains([bundle.root / rel for rel in files],
                            {raw["id"] for raw in files.values()}, policy)
    paid = {d: r for d, r in results.items() if r.get("paid") or r.get("error")}
    if paid and policy.hackable != "mark":
        lines = [paid_problem(d, r) if r.get("paid") else f"domain {d}: {r['error']}"
                 for d, r in sorted(paid.items())]
        raise PolicyRefused(f"bundle {bundle.name}: " + "; ".join(lines) + ". Your policy "
                            "refuses a domain that pays a probe (hackable: refuse, "
                            f"{policy.where}); set it to mark to install such a domain marked "
                            "hackable. Nothing was installed.")
    return {d: r["paid"] for d, r in paid.items() if r.get("paid")}, results


def _registered(bundle: Bundle, target: Path, wheels: list[dict[str, Any]], registry: Registry
                ) -> list[str]:
    """The bundle's domains that discovery (as ``registry`` was made) now really takes from this
    installation."""
    from rlhub.plugins import Registry

    made = registry.spec
    fresh = Registry(autoload=made.autoload, block=made.block, project_lock=made.project_lock)
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
    except IntegrityError as exc:
        raise IntegrityError(f"{exc}. The bundle was refused and nothing was installed.") from None
    if not NAME_RE.match(bundle.name):
        raise IntegrityError(
            f"bundle at {where}: expected a plain environment name, found "
            f"{bundle.name!r}; nothing was installed"
        )
    return bundle


def _install(bundle: Bundle, fetched: Fetched, url: str, home: Path, scratch: Path,
             trusted: bool, hackable: dict[str, list[str]]) -> Path:
    """Move the verified files to ``envs/<name>/<bundle id>`` in one rename; point ``current``
    at it. Other bundles of the environment stay as they are."""
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
        "hackable": hackable,  # read by discovery: the probe classes each domain pays
    }
    (staged / INSTALL_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    env_dir = home / "envs" / bundle.name
    target = env_dir / lock_key(bundle.id)
    env_dir.mkdir(parents=True, exist_ok=True)
    if target.exists():  # the same content: replaced whole, so its record is this pull's
        os.replace(target, scratch / "previous")
    os.replace(staged, target)
    pointer = env_dir / f".{CURRENT}.tmp-{os.getpid()}"
    pointer.write_text(bundle.id + "\n")
    os.replace(pointer, env_dir / CURRENT)
    return target


def _wheel(target: Path, wheel: dict[str, Any], trust: bool) -> dict[str, Any]:
    path = target / lock_key(wheel["path"])
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
