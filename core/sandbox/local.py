"""The ``local`` backend: a pre-forked pool of warm fork-server workers on this machine.

Each worker (``worker.py``) runs inside bubblewrap with every namespace unshared (user, pid,
mount, network, ipc, uts, cgroup), a read-only view of the host (``--ro-bind / /``), a private
``/dev``, ``/proc`` and ``/tmp``. Started as root, the backend gives each worker its own host uid
range through a custom uid map (ns root -> one unprivileged host uid, slot uids -> distinct host
uids), so every concurrent job runs as a uid no other job has. Jobs get a private tmpfs work dir
in their own mount namespace, rlimits, a seccomp filter (denying module loading, kexec, BPF,
io_uring, userfaultfd, keyrings, ptrace, mounts, namespaces, clock and swap changes), a wall
clock, output caps, a clean environment and no network; everything a job starts is killed when
it ends (see ``worker.py``).

Where the machine cannot provide a protection (no bubblewrap, not root), the backend still runs
in a weaker mode, and :meth:`LocalBackend.info` and every result's ``missing`` name what is off.
Jobs that set ``limits.network`` go to a separate pool whose sandboxes share the host network.
"""

from __future__ import annotations

import asyncio
import atexit
import fcntl
import json
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlhub.errors import SandboxError
from rlhub.sandbox import ExecRequest, ExecResult
from rlhub.sandbox.channel import (
    GRACE_S,
    PRELOAD,
    WARM_PROGRAMS,
    WORKER_PROTECTIONS,
    Channel,
    infra_error,
    validate,
    worker_source,
    write_all,
)

NAMESPACED = (
    "user_namespace",
    "pid_namespace",
    "mount_namespace",
    "network_namespace",
    "ipc_namespace",
    "readonly_root",
    "no_nested_userns",
)
PROTECTIONS = (*NAMESPACED, *WORKER_PROTECTIONS)
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
SECCOMP_MACHINES = ("x86_64", "aarch64")  # those worker.py has syscall tables for
UID_RANGE_BASE, UID_RANGE_SIZE, UIDS_PER_WORKER = 1_000_000, 1 << 16, 4096
SLOT_UID = 1000
# The worker's source arrives on stdin ahead of the first frame (no file of ours needs to be
# readable by the sandbox's uids, and `ps` shows a short command line).
BOOTSTRAP = (
    "import sys; f = sys.stdin.buffer; n = int(f.readline()); "
    "exec(compile(f.read(n), 'rlhub-sandbox-worker', 'exec'))"
)


def world_executable(path: str) -> bool:
    """True when an unprivileged uid can reach and execute ``path`` (every parent traversable)."""
    real = Path(os.path.realpath(path))
    if not real.exists() or not real.stat().st_mode & stat.S_IXOTH:
        return False
    return all(p.stat().st_mode & stat.S_IXOTH for p in real.parents)


def find_tool(name: str, need_world: bool) -> str | None:
    path = shutil.which(name, path=SAFE_PATH)
    if path and (not need_world or world_executable(path)):
        return path
    return None


@dataclass
class HostSupport:
    """What this machine offers the backend: bubblewrap, root, an interpreter, toolchains."""

    bwrap: str | None
    root: bool
    python: str
    tools: dict[str, str] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return ("bwrap" if self.bwrap else "host") + ("" if self.root else "-unprivileged")

    def languages(self) -> tuple[str, ...]:
        need = {"python": "python", "bash": "bash", "c": "gcc", "cpp": "g++", "javascript": "node"}
        return tuple(lang for lang, tool in need.items() if lang == "python" or tool in self.tools)


def detect(python: str | None = None) -> HostSupport:
    """Probe the machine once: which sandboxing mode and which languages are possible."""
    root = os.geteuid() == 0
    bwrap = shutil.which("bwrap", path=SAFE_PATH)
    why = {}
    if bwrap is None:
        why["namespaces"] = "bubblewrap is not installed (apt-get install -y bubblewrap)"
    if not root:
        why["per_job_uid"] = "the backend is not running as root, so it cannot map slot uids"
    need_world = bwrap is not None and root
    candidates = [python] if python else ["/usr/bin/python3.11", "/usr/bin/python3", sys.executable]
    interpreter = next(
        (
            c
            for c in candidates
            if c
            and os.path.isabs(c)
            and os.path.exists(c)
            and (not need_world or world_executable(c))
        ),
        None,
    )
    if interpreter is None:
        raise SandboxError(
            f"local sandbox: expected a Python interpreter an unprivileged uid can "
            f"run, found none of {candidates}; pass python=PATH"
        )
    tools = {
        name: path
        for name in ("bash", "sh", "gcc", "g++", "node")
        if (path := find_tool(name, need_world))
    }
    if "sh" not in tools or "bash" not in tools:
        raise SandboxError(
            "local sandbox: expected /bin/sh and bash on PATH, found "
            f"sh={tools.get('sh')} bash={tools.get('bash')}"
        )
    return HostSupport(bwrap, root, interpreter, tools, why)


class UidLease:
    """An exclusive host uid range of at least ``size`` uids, held by lock files while it lives.

    The range is made of consecutive blocks of ``UID_RANGE_SIZE`` uids, one lock file each, so
    backends of any size on one machine never share a uid (a shared uid would let one instance's
    jobs signal another's, and share their RLIMIT_NPROC)."""

    def __init__(self, size: int = UID_RANGE_SIZE, directory: str = "/tmp/rlhub-sandbox-uids"):
        os.makedirs(directory, mode=0o755, exist_ok=True)
        blocks = max(1, -(-size // UID_RANGE_SIZE))
        for index in range(4096 - blocks + 1):
            fds = self._lock_all(directory, range(index, index + blocks))
            if fds:
                self.fds, self.base = fds, UID_RANGE_BASE + index * UID_RANGE_SIZE
                return
        raise SandboxError(f"local sandbox: no {blocks} free consecutive uid ranges under "
                           f"{directory}")

    @staticmethod
    def _lock_all(directory: str, indices: range) -> list[int]:
        fds: list[int] = []
        for index in indices:
            fd = os.open(f"{directory}/{index}.lock", os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                for held in fds:
                    os.close(held)
                return []
            fds.append(fd)
        return fds

    def release(self) -> None:
        for fd in self.fds:
            os.close(fd)


class WorkerProcess:
    """One sandboxed worker process and its channel."""

    def __init__(
        self,
        support: HostSupport,
        index: int,
        slots: int,
        disk_mb: int,
        network: bool,
        host_uid: int | None,
        preload: Sequence[str] = (),
    ):
        self.support, self.network = support, network
        self.stderr = tempfile.TemporaryFile()
        # Inside bubblewrap, /tmp is the sandbox's own tmpfs; on the host, a fresh private dir
        # that slot uids may traverse (0711) but not list.
        self.jobs_dir = "/tmp/rlhub-jobs"
        if not support.bwrap:
            self.jobs_dir = tempfile.mkdtemp(prefix="rlhub-jobs-")
            os.chmod(self.jobs_dir, 0o711)
        per_job_uid = support.root
        config = {
            "slots": slots if per_job_uid else 1,
            "disk_mb": disk_mb,
            "mount_ns": bool(support.bwrap and support.root),
            "jobs_dir": self.jobs_dir,
            "tools": support.tools,
            "own_userns": bool(support.bwrap and support.root),
            "uid_base": None,
            "preload": list(preload),
            "warm_programs": list(WARM_PROGRAMS),
        }
        if per_job_uid:
            config["uid_base"] = SLOT_UID if support.bwrap else host_uid + SLOT_UID
        self.slots = config["slots"]
        argv = [support.python, "-I", "-S", "-c", BOOTSTRAP, json.dumps(config)]
        self.proc, rfd, wfd = self._start(argv, host_uid, network)
        source = worker_source().encode()
        try:
            write_all(wfd, b"%d\n" % len(source) + source)  # read by BOOTSTRAP before any frame
            self.channel = Channel(rfd, wfd, "local", missing_for(support, network))
        except (OSError, SandboxError) as exc:
            self.proc.kill()
            self.proc.wait()
            raise SandboxError(
                f"local sandbox: the worker did not start: {exc}; it said: {self.stderr_text()}"
            ) from exc
        if not self.channel.ready.get("subreaper"):
            self.channel.missing.append("process_cleanup")
        if support.bwrap and support.root and not self.channel.ready.get("no_nested_userns"):
            self.channel.missing.append("no_nested_userns")
        if not self.channel.ready.get("seccomp") and "seccomp" not in self.channel.missing:
            self.channel.missing.append("seccomp")

    def _start(
        self, argv: list[str], host_uid: int | None, network: bool
    ) -> tuple[subprocess.Popen[bytes], int, int]:
        env = {"PATH": SAFE_PATH, "LANG": "C.UTF-8"}
        if not self.support.bwrap:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                env=env,
                close_fds=True,
                start_new_session=True,
                cwd="/",
            )
            return proc, proc.stdout.fileno(), proc.stdin.fileno()  # type: ignore[union-attr]
        return self._start_bwrap(argv, host_uid, network, env)

    def _start_bwrap(
        self, argv: list[str], host_uid: int | None, network: bool, env: dict[str, str]
    ) -> tuple[subprocess.Popen[bytes], int, int]:
        cmd = [
            self.support.bwrap or "bwrap",
            "--unshare-all",
            "--new-session",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--hostname",
            "rlhub-sandbox",
        ] + (["--share-net"] if network else [])
        if not self.support.root:
            proc = subprocess.Popen(
                cmd + ["--uid", "1000", "--gid", "1000", "--", *argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                env=env,
                close_fds=True,
                cwd="/",
            )
            return proc, proc.stdout.fileno(), proc.stdin.fileno()  # type: ignore[union-attr]
        block_r, block_w = os.pipe()
        info_r, info_w = os.pipe()
        cmd += [
            "--unshare-user",
            "--userns-block-fd",
            str(block_r),
            "--info-fd",
            str(info_w),
            "--uid",
            "0",
            "--gid",
            "0",
            "--cap-add",
            "ALL",
            "--",
            *argv,
        ]
        assert host_uid is not None
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            pass_fds=(block_r, info_w),
            user=host_uid,
            group=host_uid,
            extra_groups=[],
            cwd="/",
        )
        os.close(block_r)
        os.close(info_w)
        try:
            child = self._read_info(info_r)
            mapping = f"0 {host_uid} 1\n{SLOT_UID} {host_uid + SLOT_UID} {self.slots}\n"
            for name in ("uid_map", "gid_map"):
                Path(f"/proc/{child}/{name}").write_text(mapping)
            os.write(block_w, b"1")
        except (OSError, ValueError) as exc:
            proc.kill()
            raise SandboxError(
                f"local sandbox: could not map uids into bubblewrap: {exc}; "
                f"bwrap said: {self.stderr_text()}"
            ) from exc
        finally:
            os.close(info_r)
            os.close(block_w)
        return proc, proc.stdout.fileno(), proc.stdin.fileno()  # type: ignore[union-attr]

    def _read_info(self, fd: int) -> int:
        data = b""
        while True:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise ValueError(f"bwrap closed --info-fd early: {data!r}")
            data += chunk
            try:
                return int(json.loads(data)["child-pid"])
            except ValueError:
                continue

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-2000:].decode(errors="replace").strip()

    def close(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()  # type: ignore[union-attr]
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()
        if not self.support.bwrap:
            shutil.rmtree(self.jobs_dir, ignore_errors=True)


def missing_for(support: HostSupport, network: bool) -> list[str]:
    """The protections not in force for a job on this host, as far as it can tell before a
    worker starts (each worker then reports whether its seccomp filter took)."""
    missing = [] if support.bwrap else list(NAMESPACED)
    if platform.machine() not in SECCOMP_MACHINES:
        missing.append("seccomp")
    if not support.root:
        missing += ["per_job_uid", "no_nested_userns"] if support.bwrap else ["per_job_uid"]
    if network and "network_namespace" in missing:
        missing.remove("network_namespace")  # the job asked for the network
    return sorted(set(missing))


class LocalBackend:
    """See the module docstring. Options: ``workers`` (default: one per core), ``slots`` (jobs
    in flight per worker), ``disk_mb`` (default work dir size), ``python`` (job interpreter),
    ``preload`` (modules imported once per worker; default :data:`~rlhub.sandbox.channel.PRELOAD`,
    ``()`` for none)."""

    name = "local"

    def __init__(
        self,
        workers: int | None = None,
        slots: int = 32,
        disk_mb: int = 64,
        python: str | None = None,
        namespaces: bool = True,
        preload: Sequence[str] | None = None,
    ):
        self.support = detect(python)
        self.preload = tuple(PRELOAD if preload is None else preload)
        if not namespaces and self.support.bwrap:
            self.support.bwrap = None
            self.support.why["namespaces"] = "turned off by the namespaces=False option"
        self.workers = workers or max(1, os.cpu_count() or 1)
        if not self.support.root:
            self.workers = max(self.workers, 2 * (os.cpu_count() or 1))  # one job per worker
        self.slots, self.disk_mb = slots, disk_mb
        for name, value in (("workers", self.workers), ("slots", slots), ("disk_mb", disk_mb)):
            if value < 1:
                raise SandboxError(f"local sandbox: expected {name} >= 1, found {value}")
        if SLOT_UID + slots > UIDS_PER_WORKER:
            raise SandboxError(f"local sandbox: expected at most {UIDS_PER_WORKER - SLOT_UID} "
                               f"slots per worker, found {slots}")
        # two uid blocks per worker index: its pool without and its pool with the network
        self.lease = UidLease(2 * self.workers * UIDS_PER_WORKER) if self.support.root else None
        self.pools: dict[bool, list[WorkerProcess | None]] = {}
        self.spawner = ThreadPoolExecutor(1, thread_name_prefix="rlhub-local-spawn")
        self.lock = threading.Lock()
        self.closed = False
        atexit.register(self.close)

    # pool -----------------------------------------------------------------------------------------
    def _host_uid(self, index: int, network: bool) -> int | None:
        if self.lease is None:
            return None
        return self.lease.base + (index * 2 + int(network)) * UIDS_PER_WORKER

    def _pool(self, network: bool) -> list[WorkerProcess | None]:
        if network not in self.pools:
            self.pools[network] = [None] * (self.workers if not network else 1)
        pool = self.pools[network]
        for i, worker in enumerate(pool):
            if worker is None or not worker.channel.alive:
                if worker is not None:
                    worker.close()
                # Started from one long-lived thread: --die-with-parent follows the spawning thread.
                pool[i] = self.spawner.submit(self._start_worker, i, network).result()
        return pool

    def _start_worker(self, index: int, network: bool) -> WorkerProcess:
        def start() -> WorkerProcess:
            return WorkerProcess(self.support, index, self.slots, self.disk_mb, network,
                                 self._host_uid(index, network), self.preload)

        try:
            return start()
        except SandboxError as exc:
            if not self.support.bwrap or any(w for p in self.pools.values() for w in p):
                raise
            # bubblewrap is installed but cannot sandbox here (user namespaces disabled, ...):
            # run without namespaces, and say so in `missing` and `why`.
            self.support.bwrap = None
            self.support.why["namespaces"] = f"bubblewrap failed on this machine: {exc}"
            return start()

    def _channel(self, network: bool) -> Channel:
        with self.lock:
            if self.closed:
                raise SandboxError("the local sandbox backend is closed")
            pool = self._pool(network)
            return min((w.channel for w in pool if w is not None), key=Channel.load)

    # API ------------------------------------------------------------------------------------------
    def submit(self, request: ExecRequest) -> Future[ExecResult]:
        """Start ``request`` and return a future of its result."""
        validate(request, self.support.languages())
        return self._channel(request.limits.network).submit(request)

    def run(self, request: ExecRequest) -> ExecResult:
        try:
            future = self.submit(request)
        except SandboxError as exc:
            return infra_error(self.name, self.missing(request.limits.network), str(exc))
        try:
            return future.result(timeout=request.limits.wall_s + GRACE_S)
        except FutureTimeout:
            return infra_error(
                self.name,
                self.missing(request.limits.network),
                "the sandbox worker did not answer in time",
            )

    async def run_batch(self, requests: Sequence[ExecRequest]) -> list[ExecResult]:
        async def one(request: ExecRequest) -> ExecResult:
            try:
                future = self.submit(request)
            except SandboxError as exc:
                return infra_error(self.name, self.missing(request.limits.network), str(exc))
            return await asyncio.wrap_future(future)

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def missing(self, network: bool = False) -> list[str]:
        pool = self.pools.get(network) or []
        live = [w for w in pool if w is not None]
        return list(live[0].channel.missing) if live else missing_for(self.support, network)

    def info(self) -> dict[str, Any]:
        missing = self._channel(False).missing
        return {
            "backend": self.name,
            "mode": self.support.mode,
            "active": [p for p in PROTECTIONS if p not in missing],
            "missing": list(missing),
            "why": dict(self.support.why),
            "languages": list(self.support.languages()),
            "workers": self.workers,
            "slots_per_worker": self.slots,
            "python": self.support.python,
            "bwrap": self.support.bwrap,
        }

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            for pool in self.pools.values():
                for worker in pool:
                    if worker is not None:
                        worker.close()
            self.pools.clear()
            self.spawner.shutdown(wait=False)
            if self.lease is not None:
                self.lease.release()
