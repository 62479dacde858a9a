"""The ``docker`` backend: a warm pool of containers, each running the resident ``worker.py``.

A job never costs a ``docker exec`` or ``docker run``: each container's PID 1 is the fork-server
worker (passed to ``python3 -I -S -c``, so any image with Python works), and jobs travel over a
unix socket in a bind-mounted host directory that the worker unlinks once the host connects.

Every container runs with ``--network none``, memory and pids limits, a read-only root with a
tmpfs work area, ``ipc=none``, ``no-new-privileges`` and every capability dropped except the six
the worker needs to give each job its own uid (SETUID, SETGID, KILL, CHOWN, DAC_OVERRIDE,
FOWNER). Jobs themselves run as distinct unprivileged uids with no capabilities. A container is
recycled after ``jobs_per_container`` jobs and after any job that hit a limit.

Images: ``image=`` names one; ``dockerfile=`` (with an optional ``context``) builds one tagged
by the content hash of the Dockerfile and its context, so a domain's image is built once per
change. The default is the offline base image made by ``.ci/docker-setup.sh`` when present,
else a build of ``images/Dockerfile`` (``FROM python:3.11-slim``).
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from importlib import resources
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
)
from rlhub.sandbox.local import SLOT_UID, UIDS_PER_WORKER, UidLease

BASE_IMAGE = "rlhub-sandbox-base:py3.11"
CAPS = ["SETUID", "SETGID", "KILL", "CHOWN", "DAC_OVERRIDE", "FOWNER"]
UID_BLOCKS_PER_CONTAINER = 4
LIMIT_STATUSES = ("timeout", "memory", "output_limit", "killed", "infra_error")
PROTECTIONS = (
    "pid_namespace",
    "mount_namespace",
    "network_namespace",
    "ipc_namespace",
    "readonly_root",
    "user_namespace",
    *WORKER_PROTECTIONS,
    "memory_cgroup",
    "pids_cgroup",
    "capabilities_dropped",
    "no_new_privileges",
)
LABEL = "rlhub.sandbox"


def engine_problem() -> str | None:
    """None when a Docker engine answers, else why not (for skips and error messages)."""
    try:
        import docker

        docker.from_env(version="auto", timeout=5).ping()
    except ImportError:
        return "the docker SDK is not installed (pip install 'rlhub[sandbox]')"
    except Exception as exc:  # noqa: BLE001 - any failure means no usable engine
        return f"{type(exc).__name__}: {exc}"
    return None


def context_hash(dockerfile: Path, context: Path) -> str:
    """Content hash of a Dockerfile and every file of its build context."""
    digest = hashlib.sha256(dockerfile.read_bytes())
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(context)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def ensure_image(
    client: Any, image: str | None, dockerfile: str | Path | None, context: str | Path | None
) -> str:
    """The image tag to run: ``image``, a cached build of ``dockerfile``, or the default."""
    import docker

    if image:
        return image
    if dockerfile is None:
        try:
            client.images.get(BASE_IMAGE)
            return BASE_IMAGE
        except docker.errors.ImageNotFound:
            dockerfile = Path(str(resources.files("rlhub.sandbox").joinpath("images/Dockerfile")))
    dockerfile = Path(dockerfile)
    ctx = Path(context) if context else dockerfile.parent
    tag = f"rlhub-sandbox:{context_hash(dockerfile, ctx)}"
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        try:
            client.images.build(
                path=str(ctx), dockerfile=str(dockerfile.resolve()), tag=tag, rm=True
            )
        except docker.errors.DockerException as exc:
            raise SandboxError(f"docker sandbox: building {dockerfile} failed: {exc}") from exc
    return tag


class ContainerWorker:
    """One warm container, its socket channel and its job count."""

    def __init__(self, backend: DockerBackend, index: int):
        self.index = index
        self.jobs = 0
        self.retiring = False
        self.backend = backend
        # A uid block no live container has, not even the draining one this replaces: the
        # kernel counts RLIMIT_NPROC per host uid, across containers.
        self.block: int | None = backend.take_uid_block()
        self.dir = tempfile.mkdtemp(prefix="rlhub-docker-")
        Path(self.dir).chmod(0o755)
        config = {
            "slots": backend.slots,
            "disk_mb": backend.disk_mb,
            "mount_ns": False,
            "jobs_dir": "/work/jobs",
            "listen": "/run/rlhub/worker.sock",
            "uid_base": backend.lease.base + self.block * UIDS_PER_WORKER + SLOT_UID,
            "tools": backend.tools,
            "own_userns": False,
            "preload": backend.preload,
            "warm_programs": list(WARM_PROGRAMS),
        }
        import docker

        try:
            self.container = backend.client.containers.run(
                backend.image,
                ["python3", "-I", "-S", "-c", worker_source(), json.dumps(config)],
                detach=True,
                network_mode="none",
                read_only=True,
                user="0:0",
                tmpfs={"/work": f"size={backend.tmpfs_mb}m,mode=0711"},
                volumes={self.dir: {"bind": "/run/rlhub", "mode": "rw"}},
                mem_limit=f"{backend.memory_mb}m",
                memswap_limit=f"{backend.memory_mb}m",
                pids_limit=backend.pids,
                cap_drop=["ALL"],
                cap_add=CAPS,
                ipc_mode="none",
                security_opt=["no-new-privileges"],
                environment={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
                labels={LABEL: "1"},
                auto_remove=True,  # the worker exits when its socket closes, even if we crash
                log_config={"type": "none"},
                working_dir="/work",
            )
        except docker.errors.DockerException as exc:
            shutil.rmtree(self.dir, ignore_errors=True)
            self._give_back_block()
            raise SandboxError(
                f"docker sandbox: could not start a worker container from {backend.image}: {exc}"
            ) from exc
        self.sock = self._connect(Path(self.dir) / "worker.sock")
        fd = self.sock.fileno()
        try:
            self.channel = Channel(fd, fd, "docker", backend.missing)
        except SandboxError:
            self.remove()
            raise

    def _connect(self, path: Path) -> socket.socket:
        import docker

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if path.exists():
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.connect(str(path))
                    return sock
                except OSError:
                    sock.close()
            try:
                self.container.reload()
            except docker.errors.NotFound:  # exited and auto-removed
                break
            if self.container.status == "exited":
                break
            time.sleep(0.01)
        try:
            logs = self.container.logs(tail=20).decode(errors="replace")
        except docker.errors.DockerException:
            logs = "(the container is gone, and its logs with it)"
        self.remove()
        raise SandboxError(
            f"docker sandbox: the worker in container {self.container.short_id} "
            f"did not open its socket (status {self.container.status}): {logs}"
        )

    def usable(self) -> bool:
        return self.channel.alive and not self.retiring

    def remove(self) -> None:
        try:
            self.container.remove(force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        if hasattr(self, "sock"):
            self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        self._give_back_block()

    def _give_back_block(self) -> None:
        self.backend.give_back_uid_block(self)


class DockerBackend:
    """See the module docstring. Options: ``image``, ``dockerfile``, ``context``, ``containers``,
    ``slots`` (jobs in flight per container), ``jobs_per_container``, ``memory_mb`` and ``pids``
    (per container), ``tmpfs_mb``, ``disk_mb`` (per job), ``preload`` (modules each worker
    imports once; default :data:`~rlhub.sandbox.channel.PRELOAD`)."""

    name = "docker"

    def __init__(
        self,
        image: str | None = None,
        dockerfile: str | None = None,
        context: str | None = None,
        containers: int | None = None,
        slots: int = 16,
        jobs_per_container: int = 1000,
        memory_mb: int = 4096,
        pids: int = 512,
        tmpfs_mb: int = 512,
        disk_mb: int = 64,
        tools: dict[str, str] | None = None,
        preload: Sequence[str] | None = None,
    ):
        import os

        try:
            import docker
        except ImportError as exc:
            raise SandboxError(
                "docker sandbox: the docker SDK is not installed (pip install 'rlhub[sandbox]')"
            ) from exc
        problem = engine_problem()
        if problem:
            raise SandboxError(
                f"docker sandbox: no Docker engine reachable ({problem}); start "
                "dockerd (see .ci/docker-setup.sh)"
            )
        self.client = docker.from_env(version="auto")
        self.image = ensure_image(self.client, image, dockerfile, context)
        self.containers = containers or max(1, os.cpu_count() or 1)
        self.slots, self.jobs_per_container = slots, jobs_per_container
        self.memory_mb, self.pids, self.tmpfs_mb, self.disk_mb = memory_mb, pids, tmpfs_mb, disk_mb
        self.preload = list(PRELOAD if preload is None else preload)
        self.tools = tools or {
            "bash": "/bin/bash",
            "sh": "/bin/sh",
            "gcc": "/usr/bin/gcc",
            "g++": "/usr/bin/g++",
            "node": "/usr/bin/node",
        }
        self.languages = self._languages(image is not None or dockerfile is not None)
        self.missing = self._missing()
        # UID_BLOCKS_PER_CONTAINER blocks per pool place: a replacement starts while the
        # container it replaces may still be draining.
        self.uid_blocks = list(range(self.containers * UID_BLOCKS_PER_CONTAINER))
        self.uid_blocks_lock = threading.Lock()
        self.lease = UidLease(len(self.uid_blocks) * UIDS_PER_WORKER)
        self.pool: list[ContainerWorker | None] = [None] * self.containers
        self.draining: set[ContainerWorker] = set()  # retired, finishing their last jobs
        self.lock = threading.Lock()
        self.closed = False
        atexit.register(self.close)

    def take_uid_block(self) -> int:
        with self.uid_blocks_lock:
            if not self.uid_blocks:
                raise SandboxError(
                    "docker sandbox: every uid block is held by a live or draining container; "
                    "expected one free (containers are being replaced faster than they drain)"
                )
            return self.uid_blocks.pop(0)

    def give_back_uid_block(self, worker: ContainerWorker) -> None:
        with self.uid_blocks_lock:  # once per worker, whichever thread removes it first
            if worker.block is not None:
                self.uid_blocks.append(worker.block)
                worker.block = None

    def _languages(self, custom: bool) -> tuple[str, ...]:
        # The offline base image has python and bash only; custom images may add toolchains,
        # and a job whose tool is absent fails inside the container with a clear stderr.
        return ("python", "bash", "c", "cpp", "javascript") if custom else ("python", "bash")

    def _missing(self) -> list[str]:
        security = " ".join(self.client.info().get("SecurityOptions", []))
        missing = []
        if "userns" not in security:
            missing.append("user_namespace")
        if "seccomp" not in security:
            missing.append("seccomp")
        return missing

    # pool -----------------------------------------------------------------------------------------
    def _channel_for(self) -> ContainerWorker:
        with self.lock:
            if self.closed:
                raise SandboxError("the docker sandbox backend is closed")
            for i, worker in enumerate(self.pool):
                if worker is None or not worker.usable():
                    if worker is not None:
                        self._retire(worker)
                    self.pool[i] = ContainerWorker(self, i)
            return min((w for w in self.pool if w is not None), key=lambda w: w.channel.load())

    def _retire(self, worker: ContainerWorker) -> None:
        worker.retiring = True
        self.draining.add(worker)

        def drain() -> None:
            deadline = time.monotonic() + 120
            while worker.channel.alive and worker.channel.load() and time.monotonic() < deadline:
                time.sleep(0.05)
            worker.remove()
            self.draining.discard(worker)

        threading.Thread(target=drain, name="rlhub-docker-retire", daemon=True).start()

    def _on_result(self, worker: ContainerWorker, future: Future[ExecResult]) -> None:
        worker.jobs += 1
        result = future.result()
        if result.status in LIMIT_STATUSES or worker.jobs >= self.jobs_per_container:
            worker.retiring = True  # replaced on the next submit; removed once drained

    # API ------------------------------------------------------------------------------------------
    def submit(self, request: ExecRequest) -> Future[ExecResult]:
        validate(request, self.languages)
        if request.limits.network:
            raise SandboxError(
                "docker sandbox: every container runs with --network none; "
                "use the local backend for jobs that need the network"
            )
        worker = self._channel_for()
        future = worker.channel.submit(request)
        future.add_done_callback(lambda f: self._on_result(worker, f))
        return future

    def run(self, request: ExecRequest) -> ExecResult:
        try:
            future = self.submit(request)
        except SandboxError as exc:
            return infra_error(self.name, self.missing, str(exc))
        try:
            return future.result(timeout=request.limits.wall_s + GRACE_S)
        except FutureTimeout:
            return infra_error(self.name, self.missing, "the container worker did not answer")

    async def run_batch(self, requests: Sequence[ExecRequest]) -> list[ExecResult]:
        async def one(request: ExecRequest) -> ExecResult:
            try:
                future = self.submit(request)
            except SandboxError as exc:
                return infra_error(self.name, self.missing, str(exc))
            return await asyncio.wrap_future(future)

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def info(self) -> dict[str, Any]:
        engine = self.client.version()
        return {
            "backend": self.name,
            "mode": "container-pool",
            "active": [p for p in PROTECTIONS if p not in self.missing],
            "missing": list(self.missing),
            "why": {},
            "languages": list(self.languages),
            "image": self.image,
            "containers": self.containers,
            "slots_per_container": self.slots,
            "jobs_per_container": self.jobs_per_container,
            "engine": f"{engine.get('Version')} (API {engine.get('ApiVersion')})",
        }

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            for worker in [*self.pool, *self.draining]:  # none may outlive the uid lease
                if worker is not None:
                    worker.remove()
            self.pool = []
            self.lease.release()
