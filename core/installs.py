"""Pulled environments on this machine, and which installed bundle of each one discovery reads.

``rlhub pull`` installs by content::

    $RLHUB_HOME/envs/<name>/<bundle id>/   one folder per bundle (the sha256 of its rlhub.lock),
                                           with the install record .rlhub-pull.json
    $RLHUB_HOME/envs/<name>/current        the bundle id the last pull of <name> installed

A pull never overwrites another bundle, so a tag that moved, or another project's pull, leaves
every installed bundle as it was. Discovery reads one bundle per environment (two would declare
the same domain ids): the one the project's pins select (``rlhub-pulls.lock``, see
:mod:`rlhub.integrations.hub.pins`: the last pull of that name the project recorded), else ``current``,
else the only one installed. A pinned bundle that is not installed, or whose installed content
differs from it (its lock no longer hashes to its id, or a domain file no longer matches the
lock), is refused with both ids named, and none of that environment's domains is read; so is a
current bundle whose content differs. (A folder copied in by hand, with no install record, is
read untrusted and unchecked, as before.)
A pin also caps trust: a bundle the project pinned without ``--trust-remote-code`` stays
untrusted in that project whatever another project pulled.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlhub.provenance import sha256_json

INSTALL_RECORD = ".rlhub-pull.json"  # what `rlhub pull` writes in each installed bundle
CURRENT = "current"
PROJECT_LOCK = "rlhub-pulls.lock"
LOCK_FILE = "rlhub.lock"


def project_lock_path() -> Path:
    """The project's pins: ``$RLHUB_PROJECT_LOCK``, else ``rlhub-pulls.lock`` in this folder."""
    return Path(os.environ.get("RLHUB_PROJECT_LOCK") or PROJECT_LOCK).absolute()


@dataclass(frozen=True)
class Pin:
    """What a project pinned for one environment name: a bundle id, and whether it trusted it."""

    bundle: str
    trusted: bool
    where: str


def project_pins(path: Path) -> dict[str, Pin]:
    """``{environment name: Pin}`` of a project lock; the last pull of each name wins. A missing
    or unreadable file pins nothing (``rlhub pull`` reports what is wrong with it)."""
    try:
        pulls = json.loads(path.read_text()).get("pulls")
    except (OSError, ValueError, AttributeError):
        return {}
    pins: dict[str, Pin] = {}
    for entry in pulls.values() if isinstance(pulls, dict) else ():
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and \
                isinstance(entry.get("bundle"), str):
            pins[entry["name"]] = Pin(entry["bundle"], entry.get("trusted") is True, str(path))
    return pins


@dataclass(frozen=True)
class Install:
    """One installed bundle: its folder and install record."""

    folder: Path
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def bundle(self) -> str:
        return str(self.record.get("bundle") or "")

    def _lock(self) -> dict[str, Any]:
        try:
            lock = json.loads((self.folder / LOCK_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return lock if isinstance(lock, dict) else {}

    def lock_hash(self) -> str | None:
        """What the installed ``rlhub.lock`` hashes to now (None if unreadable)."""
        lock = self._lock()
        return sha256_json({k: v for k, v in lock.items() if k != "lock_hash"}) if lock else None

    def differs(self) -> str | None:
        """How the installed content differs from the bundle it was installed as, or None: its
        lock must hash to its id, and each domain file discovery reads must match the lock."""
        found = self.lock_hash()
        if found != self.bundle:
            return f"bundle {found}" if found else "no readable rlhub.lock"
        files = self._lock().get("files") or {}
        for path in sorted((self.folder / "domains").glob("*.y*ml")):
            rel = f"domains/{path.name}"
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != (files.get(rel) or {}).get("sha256"):
                return f"bundle {found} with {rel} changed since it was installed"
        return None


def read_record(folder: Path) -> dict[str, Any]:
    """A folder's install record (empty when missing or unreadable: untrusted)."""
    try:
        record = json.loads((folder / INSTALL_RECORD).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def installs(env_dir: Path) -> list[Install]:
    """Every installed bundle of one environment: its folders holding an install record or
    domain files (a folder copied in by hand has no record, so it is untrusted)."""
    return [Install(p, read_record(p)) for p in sorted(env_dir.iterdir())
            if p.is_dir() and ((p / INSTALL_RECORD).is_file() or (p / "domains").is_dir())]


@dataclass(frozen=True)
class Choice:
    """The bundle discovery reads for one environment, or why it reads none."""

    name: str
    install: Install | None
    problem: str | None = None
    trusted_by_pin: bool = True


def choose(env_dir: Path, pin: Pin | None) -> Choice:
    """Which installed bundle of ``env_dir`` discovery reads (module docstring)."""
    name, found = env_dir.name, installs(env_dir)
    if pin is not None:
        return _pinned(name, found, pin, env_dir)
    current = _read_current(env_dir)
    chosen = next((i for i in found if i.bundle == current), None)
    if chosen is None and len(found) == 1:
        chosen = found[0]
    if chosen is None and found:
        listed = ", ".join(i.bundle[:16] or i.folder.name for i in found)
        return Choice(name, None, f"environment {name!r}: {len(found)} bundles are installed "
                      f"({listed}) and none is current; pull the one you want again")
    differs = chosen.differs() if chosen is not None and chosen.bundle else None
    if differs:
        return Choice(name, None, f"environment {name!r}: the installed bundle "
                      f"{chosen.bundle} differs from what was pulled (the installed content is "
                      f"{differs}); none of its domains is used. Pull it again")
    return Choice(name, chosen)


def _pinned(name: str, found: list[Install], pin: Pin, env_dir: Path) -> Choice:
    chosen = next((i for i in found if i.bundle == pin.bundle), None)
    differs = chosen.differs() if chosen is not None else None
    if chosen is not None and differs is None:
        return Choice(name, chosen, trusted_by_pin=pin.trusted)
    other = _read_current(env_dir) or (found[0].bundle if found else None)
    have = differs or (f"bundle {other}" if other else "no bundle")
    return Choice(name, None, f"environment {name!r}: {pin.where} pins bundle {pin.bundle}, but "
                  f"the installed content is {have}; none of its domains is used. Pull the "
                  "pinned bundle again (`rlhub pull URL@BUNDLE_ID`), or accept another with "
                  "`rlhub pull --update`")


def _read_current(env_dir: Path) -> str | None:
    try:
        return (env_dir / CURRENT).read_text().strip() or None
    except OSError:
        return None


def choices(home: Path, pins: dict[str, Pin]) -> list[Choice]:
    """One :class:`Choice` per environment installed under ``home/envs``."""
    envs = home / "envs"
    if not envs.is_dir():
        return []
    return [choose(d, pins.get(d.name)) for d in sorted(envs.iterdir()) if d.is_dir()]
