"""Workspaces: stateful sandboxes that live for an episode.

``backend.open(snapshot, limits, lease) -> Workspace``, then ``run(argv | cmd)``, ``read``,
``write``, ``files``, ``reset()`` and ``close()``. Files persist across an episode's commands;
each command runs with the one-shot jobs' protections (limits per command, no network, a minimal
read-only runtime, a uid and namespaces no other workspace shares), and every process it starts
dies with it. A workspace is made from a :mod:`~rlhub.sandbox.snapshots` snapshot by mounting an
overlay (never a copy), from a warm spare server, so opening and resetting cost milliseconds.

Every workspace has an owner and an expiry (:class:`Lease`, :mod:`~rlhub.sandbox.leases`):
``rlhub sandbox workspaces`` lists those of the whole machine and ``--reap`` removes those whose
owner is gone. Backends are named by the ``rlhub_workspace_backends`` hook (``local``,
``docker``, ``ray`` built in) and started once per registry (:class:`Workspaces`).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import select
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, Protocol

from rlhub.errors import SandboxError, did_you_mean
from rlhub.sandbox import ExecResult, Limits
from rlhub.sandbox.channel import GRACE_S, infra_error, to_result
from rlhub.sandbox.snapshots import Files, Snapshot, make_snapshot

SERVER_PARTS = ("isolation.py", "seccomp.py", "wsserver.py")
BOOTSTRAP = (
    "import sys; f = sys.stdin.buffer; n = int(f.readline()); "
    "exec(compile(f.read(n), 'rlhub-workspace-server', 'exec'))"
)
DEFAULT_LIMITS = Limits(wall_s=60.0, cpu_s=60.0, memory_mb=1024, processes=64, disk_mb=256)
MAX_READ = 8 << 20
CALL_GRACE_S = 15.0  # what a request may take beyond its command's wall clock


def server_source() -> str:
    """The workspace server's source: its parts joined in order (see ``wsserver.py``)."""
    package = resources.files("rlhub.sandbox")
    source = "\n".join(package.joinpath(part).read_text() for part in SERVER_PARTS)
    return source + "\nserver_main()\n"


@dataclass(frozen=True)
class Lease:
    """Who owns a workspace and for how long: ``label`` says what it is for (an episode id),
    ``ttl_s`` how long it lives after its last use before its server ends it."""

    label: str = ""
    ttl_s: float = 900.0


def as_snapshot(snapshot: Snapshot | Files, store: Any = None) -> Snapshot:
    return snapshot if isinstance(snapshot, Snapshot) else make_snapshot(snapshot, store)


def check_limits(limits: Limits, disk_mb: int) -> Limits:
    """``limits`` if a workspace can honour them, else a :class:`SandboxError` naming why."""
    if limits.network:
        raise SandboxError("workspace limits: expected network=False (workspaces have no "
                           "network), found network=True")
    for key in ("wall_s", "cpu_s", "memory_mb", "output_bytes", "processes", "disk_mb"):
        if getattr(limits, key) <= 0:
            raise SandboxError(f"workspace limits.{key}: expected a positive number, found "
                               f"{getattr(limits, key)}")
    if limits.disk_mb > disk_mb:
        raise SandboxError(f"workspace limits.disk_mb: expected at most {disk_mb} (the backend's "
                           f"disk_mb), found {limits.disk_mb}")
    return limits


class Conn:
    """One framed request/response stream to a workspace server (pipes or a socket)."""

    def __init__(self, rfd: int, wfd: int, what: str):
        self.rfd, self.wfd, self.what = rfd, wfd, what
        self.lock = threading.Lock()
        self.alive = True
        try:
            self.ready = self._read(60.0)
        except (OSError, EOFError, ValueError) as exc:
            raise SandboxError(f"{what}: expected a ready message, found none: {exc}") from exc
        if self.ready.get("op") != "ready":
            raise SandboxError(f"{what}: expected a ready message, found {self.ready}")

    def call(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        data = json.dumps(request).encode()
        with self.lock:
            if not self.alive:
                raise SandboxError(f"{self.what} is gone")
            try:
                _write_all(self.wfd, len(data).to_bytes(4, "big") + data)
                return self._read(timeout_s)
            except (OSError, EOFError, ValueError) as exc:
                self.alive = False
                raise SandboxError(f"{self.what} stopped answering: {exc}") from exc

    def _read(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        size = int.from_bytes(self._exact(4, deadline), "big")
        return json.loads(self._exact(size, deadline))

    def _exact(self, n: int, deadline: float) -> bytes:
        chunks = []
        while n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
                raise EOFError("no answer within the time allowed")
            chunk = os.read(self.rfd, min(n, 1 << 20))
            if not chunk:
                raise EOFError("the server closed its output")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Server(Protocol):
    """What a backend gives a :class:`Workspace`: the connection and a way to end it."""

    conn: Conn
    missing: list[str]

    def kill(self) -> None: ...


class Workspace:
    """A live workspace; see the module docstring. Made by a backend's ``open``."""

    _ids = itertools.count(1)

    def __init__(self, backend: str, server: Server, snapshot: Snapshot, limits: Limits,
                 lease: Lease, on_close: Callable[[Workspace], None]):
        self.backend, self.server, self.snapshot = backend, server, snapshot
        self.limits, self.lease = limits, lease
        self.on_close = on_close
        self.id = f"{backend}-{os.getpid()}-{next(self._ids)}"
        self.closed = False
        self.record_id = ""

    def __repr__(self) -> str:
        return f"<Workspace {self.id} of {self.snapshot.id}{' closed' if self.closed else ''}>"

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests ------------------------------------------------------------------------------

    def _call(self, request: dict[str, Any], timeout_s: float = CALL_GRACE_S) -> dict[str, Any]:
        if self.closed:
            raise SandboxError(f"workspace {self.id} is closed")
        request["expires_at"] = time.time() + self.lease.ttl_s
        renew = getattr(self.server, "renew", None)
        if renew is not None:
            renew(request["expires_at"])
        try:
            answer = self.server.conn.call(request, timeout_s)
        except SandboxError:
            self.close()
            raise
        if not answer.get("ok"):
            raise SandboxError(f"workspace {self.id}: {request['op']} failed: {answer.get('error')}")
        return answer

    def run(self, command: Sequence[str] | str, *, cwd: str = ".", env: dict[str, str] | None = None,
            stdin: str | bytes = "", limits: Limits | None = None) -> ExecResult:
        """Run ``command`` (argv, or a shell command line) in the workspace; never raises for
        what the command did, and reports a dead server as ``infra_error``."""
        limits = self.limits if limits is None else replace(limits, disk_mb=self.limits.disk_mb)
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        raw = stdin.encode("utf-8", "surrogateescape") if isinstance(stdin, str) else stdin
        request = {"op": "run", "argv": argv, "cwd": cwd, "env": dict(env or {}),
                   "stdin": base64.b64encode(raw).decode(), "limits": vars(limits).copy()}
        try:
            report = self._call(request, limits.wall_s + CALL_GRACE_S)
        except SandboxError as exc:
            return infra_error(self.backend, self.server.missing, str(exc))
        out, err = base64.b64decode(report["stdout"]), base64.b64decode(report["stderr"])
        return to_result(report, out, err, limits, self.backend, self.server.missing)

    def read(self, path: str, limit: int = MAX_READ) -> bytes:
        """The bytes of ``path`` (relative to the workspace root), at most ``limit``."""
        answer = self._call({"op": "read", "path": path, "limit": limit})
        return base64.b64decode(answer["data"])

    def read_text(self, path: str, limit: int = MAX_READ) -> str:
        return self.read(path, limit).decode("utf-8", "replace")

    def write(self, path: str, data: str | bytes) -> None:
        """Write ``data`` to ``path``, making its folders."""
        raw = data.encode() if isinstance(data, str) else data
        self._call({"op": "write", "path": path, "data": base64.b64encode(raw).decode()})

    def delete(self, path: str) -> None:
        self._call({"op": "write", "path": path, "data": "", "delete": True})

    def files(self, path: str = ".") -> list[str]:
        """Every regular file under ``path``, sorted (``__pycache__`` left out)."""
        return list(self._call({"op": "files", "path": path})["files"])

    def changes(self) -> tuple[list[str], list[str]]:
        """What the workspace changed since its snapshot: ``(written or made, deleted)``
        paths, read from the overlay's upper layer (no file is compared)."""
        answer = self._call({"op": "changes"})
        return list(answer["changed"]), list(answer["deleted"])

    def reset(self) -> float:
        """Back to the snapshot: every file change undone, every process killed; returns ms."""
        return float(self._call({"op": "mount", "snapshot": self.snapshot.id})["ms"])

    def close(self) -> None:
        """End the workspace: its processes, files and record go (closing twice is a no-op)."""
        if self.closed:
            return
        self.closed = True
        self.on_close(self)


class WorkspaceBackend(Protocol):
    """What a workspace backend provides (see ``rlhub_workspace_backends``)."""

    name: str

    def open(self, snapshot: Snapshot | Files, limits: Limits | None = None,
             lease: Lease | None = None, libraries: Sequence[str] = ()) -> Workspace: ...

    def info(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class Workspaces:
    """The workspace backends of one registry, by name, each started once on first use
    (``make(name, options)`` asks the registry's plugins; see :class:`rlhub.sandbox.Sandboxes`)."""

    def __init__(self, make: Callable[[str, dict[str, Any]], WorkspaceBackend | None],
                 names: Callable[[], list[str]], default: str | None = None):
        self._make, self._names, self.default = make, names, default
        self._started: dict[str, WorkspaceBackend] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        return sorted({*self._names(), *self._started})

    def get(self, name: str | None = None, **options: Any) -> WorkspaceBackend:
        name = name or self.default or os.environ.get("RLHUB_WORKSPACES", "local")
        with self._lock:
            if name not in self._started:
                backend = self._make(name, options)
                if backend is None:
                    raise SandboxError(did_you_mean(name, self.names(), what="workspace backend",
                                                    listing="rlhub sandbox workspaces"))
                self._started[name] = backend
            return self._started[name]

    def open(self, snapshot: Snapshot | Files, limits: Limits | None = None,
             lease: Lease | None = None, *, backend: str | None = None,
             libraries: Sequence[str] = ()) -> Workspace:
        """Open a workspace on ``backend`` (default: this registry's)."""
        return self.get(backend).open(snapshot, limits, lease, libraries)

    def close(self) -> None:
        with self._lock:
            started, self._started = list(self._started.values()), {}
        for backend in started:
            backend.close()


__all__ = ["DEFAULT_LIMITS", "Lease", "Workspace", "WorkspaceBackend", "Workspaces",
           "as_snapshot", "check_limits", "server_source", "infra_error"]
