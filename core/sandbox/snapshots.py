"""Snapshots: the read-only file trees workspaces are made from, stored once by content.

A snapshot is a directory under the store (:func:`store_root`: ``$RLHUB_SNAPSHOTS``, else
``/var/tmp/rlhub-snapshots``) named by the sha256 of its files (paths and contents), so the same
repository is stored once however many workspaces, episodes or processes of the machine use it.
The store is a machine-wide runtime directory rather than part of ``$RLHUB_CACHE`` because the
sandboxes' unprivileged uids must be able to reach it: every parent folder must be traversable
(a home directory of mode 0700 is not). A workspace never copies it: the backend mounts it
as the lower layer of an overlay whose upper layer is the workspace's own tmpfs
(copy-on-write), so creating or resetting a workspace costs a mount, whatever the snapshot's size.

Snapshot files are owned by :data:`SNAPSHOT_UID` and writable by all (the overlay gives each
workspace its own copy of a file the moment it writes it, so nobody ever writes the snapshot);
the uid is mapped into every local workspace's user namespace so the overlay can copy files up.
A snapshot is written into a private temporary directory and renamed into place, so a concurrent
writer of the same id, or a crash half-way, never leaves a partial snapshot under its id.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rlhub.errors import SandboxError

DEFAULT_STORE = "/var/tmp/rlhub-snapshots"
SNAPSHOT_UID = 999_999  # below the uid ranges jobs run as (host.UID_RANGE_BASE)
MAX_FILES = 20_000
Files = Mapping[str, "str | bytes"]


@dataclass(frozen=True)
class Snapshot:
    """A stored snapshot: its content id and the directory holding it."""

    id: str
    path: Path

    def files(self) -> dict[str, bytes]:
        """Every file of the snapshot by relative path (for backends that ship it elsewhere)."""
        return {str(p.relative_to(self.path)): p.read_bytes()
                for p in sorted(self.path.rglob("*")) if p.is_file()}


def store_root(root: str | os.PathLike[str] | None = None) -> Path:
    """Where snapshots live: ``root``, else ``$RLHUB_SNAPSHOTS``, else the machine's default;
    a :class:`SandboxError` when a sandbox's uid could not reach it (see the module docstring)."""
    path = Path(root or os.environ.get("RLHUB_SNAPSHOTS") or DEFAULT_STORE)
    for parent in path.absolute().parents:
        if parent.exists() and not parent.stat().st_mode & 0o001:
            raise SandboxError(f"snapshot store {path}: expected every parent folder to be "
                               f"traversable by other uids, found {parent} with mode "
                               f"{parent.stat().st_mode & 0o777:o}; set $RLHUB_SNAPSHOTS elsewhere")
    return path


def check_path(name: str) -> str:
    """``name`` if it is a relative path inside a tree, else a :class:`SandboxError`."""
    parts = name.split("/")
    if not name or name.startswith("/") or ".." in parts or "" in parts or "\0" in name:
        raise SandboxError(f"snapshot: expected relative paths inside the tree, found {name!r}")
    return name


def content_id(files: Files) -> str:
    """The id of a snapshot of ``files``: sha256 over sorted paths, modes and contents."""
    digest = hashlib.sha256()
    for name in sorted(files):
        data = files[name]
        raw = data.encode() if isinstance(data, str) else bytes(data)
        digest.update(check_path(name).encode() + b"\0" + len(raw).to_bytes(8, "big") + raw)
    return digest.hexdigest()[:32]


def make_snapshot(files: Files, root: str | os.PathLike[str] | None = None) -> Snapshot:
    """The snapshot of ``files`` (``{relative path: text or bytes}``), written on first use."""
    if len(files) > MAX_FILES:
        raise SandboxError(f"snapshot: expected at most {MAX_FILES} files, found {len(files)}")
    base = store_root(root)
    snap = Snapshot(content_id(files), base / content_id(files))
    if snap.path.is_dir():
        return snap
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    tmp = Path(tempfile.mkdtemp(prefix=f".{snap.id}-", dir=base))
    try:
        _write_tree(tmp, files)
        try:
            os.rename(tmp, snap.path)
        except OSError:  # another writer renamed the same content first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return snap


def _write_tree(top: Path, files: Files) -> None:
    owner = SNAPSHOT_UID if os.geteuid() == 0 else -1
    for name in sorted(files):
        data = files[name]
        path = top / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else bytes(data))
    for dirpath, dirnames, filenames in os.walk(top):
        for entry in [*dirnames, *filenames]:
            full = os.path.join(dirpath, entry)
            os.chown(full, owner, owner)
            os.chmod(full, 0o777 if entry in dirnames else 0o666)
    os.chown(top, owner, owner)
    os.chmod(top, 0o777)
