"""Workspace leases: who owns each live workspace on this machine, until when, and reaping.

Every workspace server a backend starts (a warm spare or a workspace in use) has a record, one
JSON file in :func:`lease_dir` (``$RLHUB_WORKSPACES_DIR``, else ``/run/rlhub/workspaces`` as root
or ``$XDG_RUNTIME_DIR``/``/tmp`` otherwise): the machine-wide list ``rlhub sandbox workspaces``
prints, whichever process made them. A record names its owner by pid *and* the owner's start
time (a recycled pid is not the owner), the expiry, and what to remove: the server's process (pid
and start time), or its container, and its memory cgroup.

Workspaces clean up after themselves: a local one dies with its owner (``--die-with-parent``),
a container's server exits when its owner's connection closes, and every server exits at its
expiry. The records are the backstop: :func:`reap` removes, for every record whose owner is gone
or whose expiry has passed, whatever of it still lives, and the record itself.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GRACE_S = 5.0  # a record this long past its expiry is reaped even if its owner lives


def lease_dir() -> Path:
    """The machine-wide directory of workspace records (see the module docstring)."""
    given = os.environ.get("RLHUB_WORKSPACES_DIR")
    if given:
        path = Path(given)
    elif os.geteuid() == 0:
        path = Path("/run/rlhub/workspaces")
    else:
        path = Path(os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/rlhub-{os.geteuid()}") \
            / "rlhub-workspaces"
    path.mkdir(parents=True, exist_ok=True)
    return path


def start_time(pid: int) -> int | None:
    """The start time of process ``pid`` in clock ticks since boot, or None if it is gone (a
    zombie, dead but not yet waited for by its parent, is gone too)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return None if fields[0] in (b"Z", b"X") else int(fields[19])


def alive(pid: int | None, started: int | None) -> bool:
    """True when process ``pid`` exists and is the one that started at ``started``."""
    return pid is not None and started is not None and start_time(pid) == started


@dataclass
class Record:
    """One workspace server: its owner, expiry, state and what to remove when it is reaped."""

    id: str
    backend: str
    owner_pid: int
    owner_start: int | None
    expires_at: float
    state: str = "spare"  # spare (warm, no snapshot) or open
    snapshot: str | None = None
    server_pid: int | None = None
    server_start: int | None = None
    container: str | None = None
    cgroup: str | None = None
    created: float = field(default_factory=time.time)
    label: str = ""

    @property
    def owner_alive(self) -> bool:
        return alive(self.owner_pid, self.owner_start)

    @property
    def expired(self) -> bool:
        return time.time() > self.expires_at + GRACE_S

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "owner_alive": self.owner_alive, "expired": self.expired}


def own(record_id: str, backend: str, ttl_s: float, **fields: Any) -> Record:
    """A record owned by this process, expiring ``ttl_s`` from now."""
    me = os.getpid()
    return Record(record_id, backend, me, start_time(me), time.time() + ttl_s, **fields)


def save(record: Record, directory: Path | None = None) -> None:
    """Write ``record`` atomically (rename), replacing an earlier version of it."""
    directory = directory or lease_dir()
    tmp = directory / f".{record.id}.tmp"
    tmp.write_text(json.dumps(asdict(record)))
    os.replace(tmp, directory / f"{record.id}.json")


def drop(record_id: str, directory: Path | None = None) -> None:
    """Forget a record (its workspace was closed by its owner)."""
    try:
        os.unlink((directory or lease_dir()) / f"{record_id}.json")
    except FileNotFoundError:
        pass


def records(directory: Path | None = None) -> list[Record]:
    """Every record on this machine, oldest first (unreadable files are skipped)."""
    found = []
    for path in (directory or lease_dir()).glob("*.json"):
        try:
            data = json.loads(path.read_text())
            found.append(Record(**{k: data[k] for k in Record.__dataclass_fields__ if k in data}))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(found, key=lambda r: r.created)


def orphaned(record: Record) -> bool:
    """True when nobody will close this workspace: its owner is gone, or it is long expired."""
    return not record.owner_alive or record.expired


def reap(directory: Path | None = None,
         remove_container: Callable[[str], None] | None = None) -> list[Record]:
    """Remove every orphaned workspace (process, container, cgroup) and its record."""
    gone = []
    for record in records(directory):
        if not orphaned(record):
            continue
        kill_server(record)
        if record.container and remove_container is not None:
            remove_container(record.container)
        if record.cgroup:
            from rlhub.sandbox.cgroups import remove_tree

            remove_tree(Path(record.cgroup), wait_s=2.0)
        drop(record.id, directory)
        gone.append(record)
    return gone


def kill_server(record: Record) -> None:
    """SIGKILL the record's server process if it is still the one the record names."""
    if alive(record.server_pid, record.server_start):
        try:
            os.kill(record.server_pid, signal.SIGKILL)  # type: ignore[arg-type]
        except ProcessLookupError:
            pass
