"""The ``ray`` workspace backend: the ``local`` backend's workspaces, held by Ray actors.

Each :class:`WorkspaceActor` owns a :class:`~rlhub.sandbox.ws_local.LocalWorkspaces` on its node
(so every protection and lease of ``local`` holds there, and the records are on the node that
runs the servers). ``open`` picks the actor holding the fewest workspaces and ships the snapshot's
files to it the first time (the actor stores them in its node's snapshot store); every later
request of the workspace goes to that actor, which forwards it to the server unchanged. The
actors belong to the driver's Ray job: when the driver dies, Ray kills them, and their servers
die with them.

With no Ray running, the backend starts a private local instance (as the ``ray`` sandbox backend
does) and shuts it down on :meth:`RayWorkspaces.close`; ``address=`` joins a cluster instead.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rlhub.errors import SandboxError
from rlhub.sandbox import Limits
from rlhub.sandbox.snapshots import Files, Snapshot, content_id
from rlhub.sandbox.workspaces import DEFAULT_LIMITS, Lease, Workspace, check_limits

FORWARDED = ("RLHUB_WORKSPACES_DIR", "RLHUB_CACHE", "RLHUB_HOME")
START_TIMEOUT_S = 120  # for the first actor to answer: a cold start is seconds, not minutes


class WorkspaceActor:
    """A Ray actor holding one node's local workspaces (made remote by :func:`actor_class`)."""

    def __init__(self, spares: int, disk_mb: int):
        from rlhub.sandbox.ws_local import LocalWorkspaces

        self.backend = LocalWorkspaces(spares=spares, disk_mb=disk_mb)
        self.open_ws: dict[str, Workspace] = {}

    def has(self, snapshot_id: str) -> bool:
        return (self.backend.store / snapshot_id).is_dir()

    def open(self, files: dict[str, bytes] | None, snapshot_id: str, limits: Limits,
             lease: Lease, libraries: list[str]) -> tuple[str, list[str]]:
        from rlhub.sandbox.snapshots import Snapshot

        snapshot: Any = files if files is not None else \
            Snapshot(snapshot_id, self.backend.store / snapshot_id)
        ws = self.backend.open(snapshot, limits, lease, libraries)
        self.open_ws[ws.id] = ws
        return ws.id, list(ws.server.missing)

    def call(self, ws_id: str, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        ws = self.open_ws.get(ws_id)
        if ws is None or ws.closed:
            return {"ok": False, "error": f"workspace {ws_id} is not held by this actor"}
        return ws.server.conn.call(request, timeout_s)

    def close_ws(self, ws_id: str) -> None:
        ws = self.open_ws.pop(ws_id, None)
        if ws is not None:
            ws.close()

    def count(self) -> int:
        return len(self.open_ws)

    def info(self) -> dict[str, Any]:
        import ray

        return {**self.backend.info(), "node": ray.get_runtime_context().get_node_id()}

    def shutdown(self) -> None:
        for ws_id in list(self.open_ws):
            self.close_ws(ws_id)
        self.backend.close()


def actor_class() -> Any:
    import ray

    return ray.remote(max_concurrency=64)(WorkspaceActor)


class RayConn:
    """A :class:`~rlhub.sandbox.workspaces.Conn` look-alike whose calls go through an actor."""

    def __init__(self, actor: Any, ws_id: str):
        self.actor, self.ws_id = actor, ws_id
        self.alive = True

    def call(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        import ray

        try:
            return ray.get(self.actor.call.remote(self.ws_id, request, timeout_s),
                           timeout=timeout_s + 30)
        except Exception as exc:  # noqa: BLE001 - a dead actor or node is an infrastructure fault
            self.alive = False
            raise SandboxError(f"ray workspace {self.ws_id}: {type(exc).__name__}: {exc}") from exc


class RayServer:
    """What a :class:`Workspace` holds for a workspace of an actor."""

    def __init__(self, actor: Any, ws_id: str, missing: list[str]):
        self.actor, self.conn, self.missing = actor, RayConn(actor, ws_id), missing

    def kill(self) -> None:
        import ray

        try:
            ray.get(self.actor.close_ws.remote(self.conn.ws_id), timeout=60)
        except Exception:  # noqa: BLE001 - the actor is gone, and its servers with it
            pass


class RayWorkspaces:
    """See the module docstring. Options: ``actors`` (default: one per CPU, at most 8),
    ``address``, ``num_cpus`` per actor, and the local backend's ``spares`` and ``disk_mb``."""

    name = "ray"

    def __init__(self, actors: int | None = None, address: str | None = None,
                 num_cpus: float = 1.0, spares: int = 2, disk_mb: int = 256,
                 start_timeout_s: float = START_TIMEOUT_S):
        try:
            import ray
        except ImportError as exc:
            raise SandboxError("ray workspaces: ray is not installed (pip install 'rlhub[ray]')"
                               ) from exc
        from rlhub.sandbox.ray_backend import RayBackend, end_actors

        self.owns_ray, self.temp_dir = not ray.is_initialized(), None
        if self.owns_ray:
            RayBackend._init_ray(self, ray, address)  # type: ignore[arg-type]
        count = actors or max(1, min(8, int(ray.cluster_resources().get("CPU", 1) // num_cpus)))
        cls = actor_class()
        self.disk_mb = disk_mb
        # the actors keep their records where this process does, in a Ray started before it too
        forwarded = {k: os.environ[k] for k in FORWARDED if k in os.environ}
        options: dict[str, Any] = {"num_cpus": num_cpus, "scheduling_strategy": "SPREAD"}
        if forwarded:
            options["runtime_env"] = {"env_vars": forwarded}
        self.actors = [cls.options(**options).remote(spares, disk_mb) for _ in range(count)]
        try:  # an actor the cluster cannot place (every CPU held) would wait for ever
            self.node_info = ray.get(self.actors[0].info.remote(), timeout=start_timeout_s)
        except ray.exceptions.GetTimeoutError as exc:
            end_actors(self.actors, "shutdown", 5, self.owns_ray, self.temp_dir)
            raise SandboxError(
                f"ray workspaces: no workspace actor started within {start_timeout_s:g} s; the "
                f"cluster has {ray.available_resources().get('CPU', 0):g} of "
                f"{ray.cluster_resources().get('CPU', 0):g} CPUs free and each actor asks "
                f"for {num_cpus:g}") from exc
        self.shipped: set[tuple[int, str]] = set()
        self.lock = threading.Lock()
        self.ids = itertools.count()
        self.closed = False
        atexit.register(self.close)

    def open(self, snapshot: Snapshot | Files, limits: Limits | None = None,
             lease: Lease | None = None, libraries: Sequence[str] = ()) -> Workspace:
        import ray

        limits = check_limits(limits or replace(DEFAULT_LIMITS, disk_mb=self.disk_mb), self.disk_mb)
        lease = lease or Lease()
        files = snapshot.files() if isinstance(snapshot, Snapshot) else {
            k: v.encode() if isinstance(v, str) else bytes(v) for k, v in snapshot.items()}
        snap = Snapshot(content_id(files), Path(""))
        index = self._least_loaded()
        actor = self.actors[index]
        ship = (index, snap.id) not in self.shipped and not ray.get(actor.has.remote(snap.id))
        ws_id, missing = ray.get(actor.open.remote(files if ship else None, snap.id, limits,
                                                   lease, list(libraries)))
        self.shipped.add((index, snap.id))
        return Workspace(self.name, RayServer(actor, ws_id, missing), snap, limits, lease,
                         lambda ws: ws.server.kill())

    def _least_loaded(self) -> int:
        import ray

        with self.lock:
            if self.closed:
                raise SandboxError("the ray workspace backend is closed")
        counts = ray.get([a.count.remote() for a in self.actors])
        return min(range(len(counts)), key=counts.__getitem__)

    def info(self) -> dict[str, Any]:
        return {**self.node_info, "backend": self.name, "actors": len(self.actors)}

    def close(self) -> None:
        from rlhub.sandbox.ray_backend import end_actors

        with self.lock:
            if self.closed:
                return
            self.closed = True
        end_actors(self.actors, "shutdown", 30, self.owns_ray, self.temp_dir)
