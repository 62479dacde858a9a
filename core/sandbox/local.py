"""The ``local`` backend: pools of warm fork-server workers on this machine.

Each worker (``worker.py``, started by ``local_worker.py``) runs inside bubblewrap with every
namespace unshared and a root holding only a minimal read-only runtime (``runtime.py``): no home
directory, project, virtualenv, ``$RLHUB_HOME`` or dataset of the host is there. Started as root,
the backend gives each worker its own host uid block, so every concurrent job runs as a uid no
other job has. Each slot of a worker has its own IPC and network namespace (no loopback, abstract
socket or IPC object is shared by concurrent jobs; the IPC objects a job leaves are removed and
counted in ``leftovers``) and its own memory cgroup (``memory_mb`` bounds the job's total,
``cgroups.py``); ``/proc`` shows a job its own processes only. Each job gets a private tmpfs work
dir (its disk quota) in its own mount namespace, rlimits, a seccomp filter (``seccomp.py``), a
wall clock, output caps, a clean environment and no network; everything a job starts is killed
when it ends.

Workers are pooled by runtime: jobs that set ``limits.network`` share the host network in a pool
of their own, and jobs whose request names ``libraries`` run in a pool whose sandboxes also bind
those distributions. Where the machine cannot provide a protection (no bubblewrap, not root, no
memory cgroup), the backend still runs in a weaker mode, and :meth:`LocalBackend.info` and every
result's ``missing`` name what is off and why.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from pathlib import Path
from typing import Any

from rlhub.errors import SandboxError
from rlhub.sandbox import ExecRequest, ExecResult
from rlhub.sandbox.cgroups import JobCgroups
from rlhub.sandbox.channel import (
    JOB_ISOLATION,
    PRELOAD,
    WORKER_PROTECTIONS,
    Channel,
    answer_within,
    infra_error,
    validate,
)
from rlhub.sandbox.host import SAFE_PATH, SLOT_UID, UIDS_PER_WORKER, UidBlocks, detect
from rlhub.sandbox.languages import Languages, builtin
from rlhub.sandbox.local_worker import (
    NAMESPACED,
    VIEWS_DIR,
    WorkerProcess,
    WorkerSpec,
    memory_cgroups_on,
    missing_for,
)
from rlhub.sandbox.toolchains import ViewBuilder

PROTECTIONS = (*NAMESPACED, *WORKER_PROTECTIONS, *JOB_ISOLATION)
Runtime = tuple[bool, tuple[str, ...]]  # (network, libraries): which pool a job runs in


class LocalBackend:
    """See the module docstring. Options: ``workers`` (default: one per core), ``slots`` (jobs
    in flight per worker), ``disk_mb`` (each job's work dir, and the most a request may ask),
    ``python`` (job interpreter), ``preload`` (modules imported once per worker; default
    :data:`~rlhub.sandbox.channel.PRELOAD`, ``()`` for none), ``disable`` (protections of
    :data:`~rlhub.sandbox.channel.JOB_ISOLATION` to turn off, e.g. to measure their cost)."""

    name = "local"

    def __init__(
        self,
        workers: int | None = None,
        slots: int = 32,
        disk_mb: int = 64,
        python: str | None = None,
        namespaces: bool = True,
        preload: Sequence[str] | None = None,
        disable: Sequence[str] = (),
        languages: Languages | None = None,
        runtimes: str | None = None,
    ):
        self.support = detect(python)
        self.languages = languages or builtin()
        if not namespaces and self.support.bwrap:
            self.support.bwrap = None
            self.support.why["namespaces"] = "turned off by the namespaces=False option"
        self.workers = workers or max(1, os.cpu_count() or 1)
        if not self.support.root:
            self.workers = max(self.workers, 2 * (os.cpu_count() or 1))  # one job per worker
        check_sizes(self.workers, slots, disk_mb, disable)
        preload = tuple(PRELOAD if preload is None else preload)
        for name in disable:
            self.support.why[name] = "turned off by the disable= option"
        shut = self.support.views and "minimal_runtime" not in disable
        builder = ViewBuilder(Path(runtimes) if runtimes else None) if shut else None
        self.views, self.available = self._toolchains(builder)
        self.spec = WorkerSpec(slots, disk_mb, preload=preload, disabled=frozenset(disable),
                               views=str(builder.directory) if builder and self.views else None)
        self.blocks = UidBlocks(max(16, 4 * self.workers)) if self.support.root else None
        on = memory_cgroups_on(self.support, self.spec)
        self.cgroups = JobCgroups(self.support.cgroups) if on else None
        self.pools: dict[Runtime, list[WorkerProcess | None]] = {}
        self.spawner = ThreadPoolExecutor(1, thread_name_prefix="rlhub-local-spawn")
        self.lock = threading.Lock()
        self.closed = False
        atexit.register(self.close)

    def _toolchains(self, builder: ViewBuilder | None) -> tuple[dict[str, str], list[str]]:
        """Each language's runtime view (as a worker sees it) and the languages jobs may use:
        with views, those whose packages are installed; without, those whose tools are here."""
        views: dict[str, str] = {}
        available = []
        for spec in self.languages:
            if spec.in_process or builder is None or not (spec.packages or spec.paths):
                if spec.in_process or self.support.has_tools(spec.tools):
                    available.append(spec.name)
                else:
                    self.support.why[f"language {spec.name}"] = (
                        f"{' or '.join(spec.tools)} not found on {SAFE_PATH}; apt-get install "
                        f"{' '.join(spec.packages)}")
                continue
            try:
                views[spec.name] = f"{VIEWS_DIR}/{builder.view(spec).name}"
                available.append(spec.name)
            except SandboxError as exc:
                self.support.why[f"language {spec.name}"] = str(exc)
        return views, available

    # pool -----------------------------------------------------------------------------------------
    def _pool(self, runtime: Runtime) -> list[WorkerProcess | None]:
        if runtime not in self.pools:
            self.pools[runtime] = [None] * (1 if runtime[0] else self.workers)
        pool = self.pools[runtime]
        for i, worker in enumerate(pool):
            if worker is None or not worker.channel.alive:
                if worker is not None:
                    self._retire(worker)
                # Started from one long-lived thread: --die-with-parent follows the spawning thread.
                pool[i] = self.spawner.submit(self._start_worker, runtime).result()
        return pool

    def _start_worker(self, runtime: Runtime) -> WorkerProcess:
        spec = replace(self.spec, network=runtime[0], libraries=runtime[1])
        try:
            return self._spawn(spec)
        except SandboxError as exc:
            if not self.support.bwrap or any(w for p in self.pools.values() for w in p):
                raise
            # bubblewrap is installed but cannot sandbox here (user namespaces disabled, ...):
            # run without namespaces, and say so in `missing` and `why`.
            self.support.bwrap = None
            self.support.why["namespaces"] = f"bubblewrap failed on this machine: {exc}"
            return self._spawn(spec)

    def _spawn(self, spec: WorkerSpec) -> WorkerProcess:
        block = self.blocks.take() if self.blocks else None
        host_uid = None if block is None or self.blocks is None else self.blocks.base(block)
        try:
            worker = WorkerProcess(self.support, spec, host_uid, self.cgroups, f"g{block}",
                                   self.languages, self.views)
        except SandboxError:
            if block is not None and self.blocks:
                self.blocks.give_back(block)
            raise
        worker.block = block  # type: ignore[attr-defined]
        return worker

    def _retire(self, worker: WorkerProcess) -> None:
        worker.close()
        block = getattr(worker, "block", None)
        if block is not None and self.blocks:
            self.blocks.give_back(block)

    def _channel(self, runtime: Runtime) -> Channel:
        with self.lock:
            if self.closed:
                raise SandboxError("the local sandbox backend is closed")
            pool = self._pool(runtime)
            return min((w.channel for w in pool if w is not None), key=Channel.load)

    # API ------------------------------------------------------------------------------------------
    def submit(self, request: ExecRequest) -> Future[ExecResult]:
        """Start ``request`` and return a future of its result."""
        validate(request, self.languages, self.available, self.spec.disk_mb)
        return self._channel(runtime_of(request)).submit(request)

    def run(self, request: ExecRequest) -> ExecResult:
        try:
            future = self.submit(request)
        except SandboxError as exc:
            return infra_error(self.name, self.missing(runtime_of(request)), str(exc))
        try:
            return future.result(timeout=answer_within(request))
        except FutureTimeout:
            return infra_error(self.name, self.missing(runtime_of(request)),
                               "the sandbox worker did not answer in time")

    async def run_batch(self, requests: Sequence[ExecRequest]) -> list[ExecResult]:
        async def one(request: ExecRequest) -> ExecResult:
            try:
                future = self.submit(request)
            except SandboxError as exc:
                return infra_error(self.name, self.missing(runtime_of(request)), str(exc))
            return await asyncio.wrap_future(future)

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def missing(self, runtime: Runtime | bool = (False, ())) -> list[str]:
        if isinstance(runtime, bool):
            runtime = (runtime, ())
        live = [w for w in self.pools.get(runtime) or [] if w is not None]
        if live:
            return list(live[0].channel.missing)
        spec = replace(self.spec, network=runtime[0], libraries=runtime[1])
        return missing_for(self.support, spec)

    def info(self) -> dict[str, Any]:
        missing = self._channel((False, ())).missing
        return {
            "backend": self.name,
            "mode": self.support.mode,
            "active": [p for p in PROTECTIONS if p not in missing],
            "missing": list(missing),
            "why": dict(self.support.why),
            "languages": list(self.available),
            "workers": self.workers,
            "slots_per_worker": self.spec.slots,
            "disk_mb": self.spec.disk_mb,
            "python": self.support.python,
            "bwrap": self.support.bwrap,
            "cgroup": self.cgroups and f"v{self.cgroups.version} {self.cgroups.root}",
        }

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            for pool in self.pools.values():
                for worker in pool:
                    if worker is not None:
                        self._retire(worker)
            self.pools.clear()
            self.spawner.shutdown(wait=False)
            if self.cgroups is not None:
                self.cgroups.close()
            if self.blocks is not None:
                self.blocks.release()


def runtime_of(request: ExecRequest) -> Runtime:
    return request.limits.network, tuple(sorted(set(request.libraries)))


def check_sizes(workers: int, slots: int, disk_mb: int, disable: Sequence[str]) -> None:
    """Refuse nonsense options up front, naming what was expected."""
    for name, value in (("workers", workers), ("slots", slots), ("disk_mb", disk_mb)):
        if value < 1:
            raise SandboxError(f"local sandbox: expected {name} >= 1, found {value}")
    if SLOT_UID + slots > UIDS_PER_WORKER:
        raise SandboxError(f"local sandbox: expected at most {UIDS_PER_WORKER - SLOT_UID} "
                           f"slots per worker, found {slots}")
    unknown = sorted(set(disable) - set(JOB_ISOLATION))
    if unknown:
        raise SandboxError(f"local sandbox: disable: expected names among {list(JOB_ISOLATION)}, "
                           f"found {unknown}")
