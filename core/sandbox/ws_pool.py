"""Warm spare workspace servers, shared by the ``local`` and ``docker`` workspace backends.

A backend subclasses :class:`SparePool` with ``_start(runtime)`` (start one server, unmounted,
with its lease record saved) and ``_end(server)`` (stop it and give back what it held).
``spares`` servers per runtime (the libraries its commands may import) wait started, so
``open`` is a mount; one long-lived spawner thread starts every server and refills the spares
after each ``open``.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rlhub.errors import SandboxError
from rlhub.sandbox import Limits, leases
from rlhub.sandbox.host import UID_RANGE_SIZE, UidLease
from rlhub.sandbox.snapshots import Files, Snapshot, store_root
from rlhub.sandbox.workspaces import (
    DEFAULT_LIMITS,
    Lease,
    Workspace,
    as_snapshot,
    check_limits,
)

Runtime = tuple[str, ...]
RENEW_EVERY_S = 60.0


class UidPairs:
    """Pairs of host uids (server, commands) from one exclusive lease, taken and given back."""

    def __init__(self) -> None:
        self.lease = UidLease(UID_RANGE_SIZE)
        self.free = list(range(UID_RANGE_SIZE // 2))
        self.lock = threading.Lock()

    def take(self) -> int:
        with self.lock:
            if not self.free:
                raise SandboxError("workspaces: every uid pair is in use; close some")
            return self.lease.base + 2 * self.free.pop()

    def give_back(self, host_uid: int) -> None:
        with self.lock:
            self.free.append((host_uid - self.lease.base) // 2)


@dataclass
class PooledServer:
    """What every pooled server holds: its record and where records go (see :meth:`renew`)."""

    record: leases.Record
    lease_dir: Path

    def renew(self, expires_at: float) -> None:
        """Move the record's expiry to ``expires_at`` (saved at most once a minute)."""
        if expires_at - self.record.expires_at > RENEW_EVERY_S:
            self.record.expires_at = expires_at
            leases.save(self.record, self.lease_dir)


class SparePool:
    """The common part of the pooled workspace backends (see the module docstring)."""

    name = "pooled"

    def __init__(self, spares: int, disk_mb: int, store: str | None, lease_dir: str | None):
        self.spares, self.disk_mb = max(0, spares), disk_mb
        self.store = store_root(store)
        self.store.mkdir(parents=True, exist_ok=True)
        self.lease_dir = Path(lease_dir) if lease_dir else leases.lease_dir()
        self.lease_dir.mkdir(parents=True, exist_ok=True)
        self.uids = UidPairs()
        self.pool: dict[Runtime, list[Any]] = {}
        self.lock = threading.Lock()
        self.spawner = ThreadPoolExecutor(1, thread_name_prefix=f"rlhub-ws-{self.name}")
        self.closed = False
        atexit.register(self.close)

    # -- to implement ----------------------------------------------------------------------------

    def _start(self, runtime: Runtime) -> Any:
        raise NotImplementedError

    def _end(self, server: Any) -> None:
        raise NotImplementedError

    def _usable(self, server: Any) -> bool:
        return bool(server.conn.alive)

    # -- API -------------------------------------------------------------------------------------

    def open(self, snapshot: Snapshot | Files, limits: Limits | None = None,
             lease: Lease | None = None, libraries: Sequence[str] = ()) -> Workspace:
        """A workspace of ``snapshot``: a spare server mounts it (see the module docstring)."""
        limits = check_limits(limits or replace(DEFAULT_LIMITS, disk_mb=self.disk_mb), self.disk_mb)
        lease = lease or Lease()
        snap = as_snapshot(snapshot, self.store)
        runtime = tuple(sorted(set(libraries)))
        server = self._take(runtime)
        ws = Workspace(self.name, server, snap, limits, lease, self._closed)
        try:
            ws.reset()
        except SandboxError:
            self._end(server)
            raise
        record = server.record
        record.state, record.snapshot, record.label = "open", snap.id, lease.label
        record.expires_at = time.time() + lease.ttl_s
        leases.save(record, server.lease_dir)
        ws.record_id = record.id
        self._refill(runtime)
        return ws

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            servers = [s for pool in self.pool.values() for s in pool]
            self.pool.clear()
        self.spawner.shutdown(wait=True)
        for server in servers:
            self._end(server)
        self._release()
        self.uids.lease.release()

    def _release(self) -> None:
        """What a subclass holds beyond its servers (cgroups, clients)."""

    def spare_counts(self) -> dict[str, int]:
        return {",".join(k) or "-": len(v) for k, v in self.pool.items()}

    # -- spares ----------------------------------------------------------------------------------

    def _take(self, runtime: Runtime) -> Any:
        with self.lock:
            if self.closed:
                raise SandboxError(f"the {self.name} workspace backend is closed")
            pool = self.pool.setdefault(runtime, [])
            while pool:
                server = pool.pop()
                if self._usable(server):
                    return server
                self._end(server)
        return self.spawner.submit(self._start, runtime).result()

    def _refill(self, runtime: Runtime) -> None:
        def fill() -> None:
            while True:
                with self.lock:
                    if self.closed or len(self.pool.get(runtime, [])) >= self.spares:
                        return
                server = self._start(runtime)
                with self.lock:
                    if not self.closed:
                        self.pool.setdefault(runtime, []).append(server)
                        continue
                self._end(server)
                return

        if not self.closed:
            self.spawner.submit(fill)

    def _closed(self, ws: Workspace) -> None:
        self._end(ws.server)
