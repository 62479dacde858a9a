"""The ``docker`` backend: a warm pool of containers, each running the resident ``worker.py``.

A job never costs a ``docker exec`` or ``docker run``: each container's PID 1 is the fork-server
worker (passed to ``python3 -I -S -c``, so any image with Python works), and jobs travel over a
unix socket in a bind-mounted host directory that the worker unlinks once the host connects.

Every container runs with ``--network none``, memory and pids limits, a read-only root,
``ipc=none``, ``no-new-privileges`` and every capability dropped except the six the worker needs
to give each job its own uid (SETUID, SETGID, KILL, CHOWN, DAC_OVERRIDE, FOWNER). Jobs themselves
run as distinct unprivileged uids with no capabilities. Concurrent jobs in one container never
share a resource one of them could exhaust or use to talk: each slot has a tmpfs of its own
(``/work/s<k>``, ``disk_mb``, reachable by the slot's group only) and a memory cgroup of its own
(made on the host, ``cgroups.py``, bind-mounted where only the worker can reach it), the pids limit
covers every slot at its process limit, and the worker's seccomp filter denies sockets other than
connected unix pairs and System V IPC (the slots share the container's network and IPC
namespaces, which the worker cannot divide without CAP_SYS_ADMIN). The one thing still shared is
``/proc``: jobs of one container see each other's processes (``hidden_processes`` is missing
unless ``slots=1``). A container is recycled after ``jobs_per_container`` jobs and after any job
that hit a limit.

Images: ``image=`` names one; ``dockerfile=`` (with an optional ``context``) builds one tagged
by the content hash of the Dockerfile and its context, so a domain's image is built once per
change. The default is the base image ``.ci/docker-setup.sh`` makes from Debian's packages with
every built-in language's toolchain (``baseimage.py``) when present, else a build of
``images/Dockerfile`` (``FROM python:3.11-slim``). A worker reports which registered languages'
tools its image has; those are the languages the backend accepts.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import platform
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
from rlhub.sandbox import ExecRequest, ExecResult, baseimage
from rlhub.sandbox.cgroups import JobCgroups
from rlhub.sandbox.cgroups import detect as detect_cgroups
from rlhub.sandbox.channel import (
    JOB_ISOLATION,
    PRELOAD,
    WARM_PROGRAMS,
    WORKER_PROTECTIONS,
    Channel,
    answer_within,
    infra_error,
    validate,
    worker_source,
)
from rlhub.sandbox.host import SLOT_UID, UidBlocks
from rlhub.sandbox.languages import Languages, builtin
from rlhub.sandbox.local_worker import SECCOMP_MACHINES

LEGACY_IMAGE = "rlhub-sandbox-base:py3.11"  # python and bash only, copied from a host
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
    *JOB_ISOLATION,
    "memory_cgroup",
    "pids_cgroup",
    "capabilities_dropped",
    "no_new_privileges",
)
LABEL = "rlhub.sandbox"
WORKER_PIDS = 64  # the worker, its zygote and the spare: what the pids limit keeps beyond jobs
CGROUP_DIR = "/run/rlhub-cg"


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
    """The image tag to run: ``image``, a cached build of ``dockerfile``, or the default
    (:func:`default_image`), else a build of ``images/Dockerfile``."""
    import docker

    if image:
        return image
    if dockerfile is None:
        found = default_image(client)
        if found:
            return found
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


def default_image(client: Any) -> str | None:
    """The base image of the built-in languages as they are now (``baseimage.tag()``); else the
    newest earlier build of it (the languages whose tools it has still run); else the older
    Python-only image; else None."""
    import docker

    try:
        client.images.get(baseimage.tag())
        return baseimage.tag()
    except docker.errors.ImageNotFound:
        pass
    builds = client.images.list(filters={"label": f"{baseimage.LABEL}=1"})
    builds.sort(key=lambda image: image.attrs.get("Created", ""), reverse=True)
    tags = [tag for image in builds for tag in image.tags]
    if tags:
        return tags[0]
    return LEGACY_IMAGE if client.images.list(name=LEGACY_IMAGE) else None


class ContainerWorker:
    """One warm container, its socket channel and its job count."""

    def __init__(self, backend: DockerBackend, index: int):
        self.index = index
        self.jobs = 0
        self.retiring = False
        self.backend = backend
        self.give_back_lock = threading.Lock()
        # A uid block no live container has, not even the draining one this replaces: the
        # kernel counts RLIMIT_NPROC per host uid, across containers.
        self.block: int | None = backend.blocks.take()
        self.uid_base = backend.blocks.base(self.block) + SLOT_UID
        self.dir = tempfile.mkdtemp(prefix="rlhub-docker-")
        Path(self.dir).chmod(0o755)
        self.group = None
        import docker

        try:
            if backend.cgroups is not None:  # root-owned, 0700: the worker's, not the jobs'
                self.group = backend.cgroups.group(f"c{self.block}", backend.slots, 0)
            self.container = backend.client.containers.run(backend.image, **self.run_options())
        except (docker.errors.DockerException, OSError) as exc:
            self.remove()
            raise SandboxError(
                f"docker sandbox: could not start a worker container from {backend.image}: {exc}"
            ) from exc
        self.sock = self._connect(Path(self.dir) / "worker.sock")
        fd = self.sock.fileno()
        try:
            self.channel = Channel(fd, fd, "docker", backend.missing,
                                   languages=backend.languages)
        except SandboxError:
            self.remove()
            raise
        backend.note_worker(self.channel.ready)

    def config(self) -> dict[str, Any]:
        backend = self.backend
        return {
            "slots": backend.slots,
            "disk_mb": backend.disk_mb,
            "mount_ns": False,
            "slot_tmpfs": True,
            "jobs_dir": "/work",
            "listen": "/run/rlhub/worker.sock",
            "uid_base": self.uid_base,
            "probe_tools": {spec.name: list(spec.tools) for spec in backend.languages},
            "own_userns": False,
            "preload": backend.preload,
            "warm_programs": list(WARM_PROGRAMS),
            "site_packages": True,  # the image is the domain's declared runtime
            "cgroup": CGROUP_DIR if self.group else None,
            "cgroup_version": 1,
        }

    def run_options(self) -> dict[str, Any]:
        """``containers.run`` options: hardening, one tmpfs per slot, the slots' cgroups."""
        backend = self.backend
        tmpfs = {"/work": "size=1m,mode=0711"}
        for k in range(backend.slots):  # root-owned, traversable by the slot's group alone
            tmpfs[f"/work/s{k}"] = (f"size={backend.disk_mb}m,nr_inodes=8192,uid=0,"
                                    f"gid={self.uid_base + k},mode=0710,exec")
        volumes = {self.dir: {"bind": "/run/rlhub", "mode": "rw"}}
        if self.group is not None:
            volumes[str(self.group)] = {"bind": CGROUP_DIR, "mode": "rw"}
        return {
            "command": ["python3", "-I", "-S", "-c", worker_source(), json.dumps(self.config())],
            "detach": True,
            "network_mode": "none",
            "read_only": True,
            "user": "0:0",
            "tmpfs": tmpfs,
            "volumes": volumes,
            "mem_limit": f"{backend.memory_mb}m",
            "memswap_limit": f"{backend.memory_mb}m",
            "pids_limit": backend.pids,
            "cap_drop": ["ALL"],
            "cap_add": CAPS,
            "ipc_mode": "none",
            "security_opt": ["no-new-privileges"],
            "environment": {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
            "labels": {LABEL: "1"},
            "auto_remove": True,  # the worker exits when its socket closes, even if we crash
            "log_config": {"type": "none"},
            "working_dir": "/work",
        }

    def _connect(self, path: Path) -> socket.socket:
        import docker

        sock = connect_when_listening(self.container, path, 30)
        if sock is not None:
            return sock
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
        """Remove the container, then what it held (its dirs, cgroups, uid block), once."""
        try:
            self.container.remove(force=True)
        except Exception:  # noqa: BLE001 - already gone, or never started
            pass
        if hasattr(self, "sock"):
            self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        with self.give_back_lock:  # the drain thread and close() may both get here
            block, self.block = self.block, None
        if block is None:
            return
        if self.group is not None and self.backend.cgroups is not None:
            self.backend.cgroups.remove_group(self.group)
        self.backend.blocks.give_back(block)


class DockerBackend:
    """See the module docstring. Options: ``image``, ``dockerfile``, ``context``, ``containers``,
    ``slots`` (jobs in flight per container), ``jobs_per_container``, ``memory_mb`` (the
    container's own, beyond its jobs' cgroups), ``pids`` (per container; by default room for
    every slot at 64 processes), ``disk_mb`` (each slot's tmpfs, and the most a request may ask),
    ``preload`` (modules each worker imports once; default
    :data:`~rlhub.sandbox.channel.PRELOAD`), ``disable`` (``["job_memory_limit"]`` runs jobs
    without their own memory cgroups, e.g. to measure what they cost)."""

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
        pids: int | None = None,
        disk_mb: int = 64,
        preload: Sequence[str] | None = None,
        disable: Sequence[str] = (),
        languages: Languages | None = None,
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
        self.memory_mb, self.disk_mb = memory_mb, disk_mb
        self.pids = pids or slots * 64 + WORKER_PIDS
        self.job_processes = (self.pids - WORKER_PIDS) // slots  # what one job may ask for
        self.preload = list(PRELOAD if preload is None else preload)
        self.languages = languages or builtin()
        self.available: list[str] = []  # languages whose tools the image has, once a worker said
        self.why: dict[str, str] = {}
        self.cgroups = self._cgroups(disable)
        self.missing = self._missing()
        self.libraries: set[str] | None = None  # what the image has, once a worker said
        # UID_BLOCKS_PER_CONTAINER blocks per pool place: a replacement starts while the
        # container it replaces may still be draining.
        self.blocks = UidBlocks(self.containers * UID_BLOCKS_PER_CONTAINER)
        self.pool: list[ContainerWorker | None] = [None] * self.containers
        self.draining: set[ContainerWorker] = set()  # retired, finishing their last jobs
        self.lock = threading.Lock()
        self.closed = False
        atexit.register(self.close)

    def _cgroups(self, disable: Sequence[str]) -> JobCgroups | None:
        if set(disable) - {"job_memory_limit"}:
            raise SandboxError(f"docker sandbox: disable: expected only 'job_memory_limit' (the "
                               f"other protections cost jobs nothing here), found {list(disable)}")
        if "job_memory_limit" in disable:
            self.why["job_memory_limit"] = "turned off by the disable= option"
            return None
        support = detect_cgroups()
        if support.version == 1:
            return JobCgroups(support)
        why = support.why or ("cgroup v2: the engine gives containers a cgroup namespace of "
                               "their own, so the host cannot hand them per-slot cgroups")
        self.why["job_memory_limit"] = (f"{why}; memory_mb bounds each process's address space, "
                                        "and the container's memory_mb all its jobs together")
        return None

    def _missing(self) -> list[str]:
        security = " ".join(self.client.info().get("SecurityOptions", []))
        missing = []
        if "userns" not in security:
            missing.append("user_namespace")
            self.why["user_namespace"] = ("the engine runs without userns-remap: the worker is "
                                          "the host's root, with six capabilities only")
        if "seccomp" not in security:
            missing.append("seccomp")
        if platform.machine() not in SECCOMP_MACHINES:  # the worker's filter does the denying
            missing += ["private_ipc", "private_sockets"]
        if self.slots > 1:
            missing.append("hidden_processes")
            self.why["hidden_processes"] = ("the jobs of one container share its /proc (the worker "
                                            "cannot mount one per job); slots=1 gives each job a "
                                            "container of its own")
        if self.cgroups is None:
            missing.append("job_memory_limit")
        return sorted(missing)

    def note_worker(self, ready: dict[str, Any]) -> None:
        """Take in what a freshly started worker reports: its filter, cgroups, libraries."""
        lost = [] if ready.get("seccomp") else ["private_ipc", "private_sockets"]
        lost += [] if ready.get("memory_cgroup") or self.cgroups is None else ["job_memory_limit"]
        for name in lost:
            if name not in self.missing:
                self.missing.append(name)
        self.missing.sort()
        self.libraries = set(ready.get("libraries", []))
        self.available = list(ready.get("languages", []))

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
        if request.limits.network:
            raise SandboxError(
                "docker sandbox: every container runs with --network none; "
                "use the local backend for jobs that need the network"
            )
        if request.limits.processes > self.job_processes:
            raise SandboxError(
                f"limits.processes: expected at most {self.job_processes} (a container's pids "
                f"limit {self.pids} is shared by {self.slots} slots), found "
                f"{request.limits.processes}; start the backend with a larger pids="
            )
        worker = self._channel_for()
        validate(request, self.languages, self.available, self.disk_mb)
        self._check_libraries(request.libraries)
        future = worker.channel.submit(request)
        future.add_done_callback(lambda f: self._on_result(worker, f))
        return future

    def _check_libraries(self, names: Sequence[str]) -> None:
        lacking = sorted(set(names) - (self.libraries or set()))
        if lacking:
            raise SandboxError(
                f"libraries: expected {lacking} installed in the image {self.image}, found "
                f"{sorted(self.libraries or [])}; install them in the domain's Dockerfile"
            )

    def run(self, request: ExecRequest) -> ExecResult:
        try:
            future = self.submit(request)
        except SandboxError as exc:
            return infra_error(self.name, self.missing, str(exc))
        try:
            return future.result(timeout=answer_within(request))
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
        self._channel_for()  # a worker says which languages the image has
        engine = self.client.version()
        return {
            "backend": self.name,
            "mode": "container-pool",
            "active": [p for p in PROTECTIONS if p not in self.missing],
            "missing": list(self.missing),
            "why": {k: v for k, v in self.why.items() if k in self.missing},
            "languages": list(self.available),
            "image": self.image,
            "containers": self.containers,
            "slots_per_container": self.slots,
            "jobs_per_container": self.jobs_per_container,
            "disk_mb": self.disk_mb,
            "pids": self.pids,
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
            if self.cgroups is not None:
                self.cgroups.close()
            self.blocks.release()


def connect_when_listening(container: Any, path: Path, timeout_s: float) -> socket.socket | None:
    """A connection to the Unix socket a process in ``container`` opens at ``path`` (bind-mounted
    from the host), or None when the container exits or ``timeout_s`` passes first."""
    import docker

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(path))
                return sock
            except OSError:
                sock.close()
        try:
            container.reload()
        except docker.errors.NotFound:  # exited and auto-removed
            return None
        if container.status == "exited":
            return None
        time.sleep(0.01)
    return None
