"""The ``ray`` backend: the ``local`` backend's warm pools, run as Ray actors across a cluster.

Each :class:`SandboxActor` owns one :class:`~rlhub.sandbox.local.LocalBackend` on its node (so
every protection of ``local`` holds there, and its ``missing`` list travels with each result),
built from values: its pool's size and the registry's languages (a plugin's language runs on
``ray`` as on ``local``).
Actors are async with many calls in flight, spread over the cluster's nodes; the host submits a
job to the actor with the fewest jobs in flight and gets a future back.

With no Ray running, the backend starts a private local instance (its own temp dir, no
dashboard, ``RAY_AUTH_MODE=disabled`` unless set) and shuts it down on :meth:`RayBackend.close`.
Pass ``address=`` to join an existing cluster instead.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from rlhub.errors import SandboxError
from rlhub.sandbox import ExecRequest, ExecResult
from rlhub.sandbox.channel import answer_within, infra_error

if TYPE_CHECKING:
    from rlhub.sandbox.languages import Languages


class SandboxActor:
    """A Ray actor wrapping one node-local sandbox pool (made remote by :func:`actor_class`)."""

    def __init__(self, workers: int, slots: int, languages: Languages | None):
        from rlhub.sandbox.local import LocalBackend

        self.backend = LocalBackend(workers=workers, slots=slots, languages=languages)

    async def run(self, request: ExecRequest) -> ExecResult:
        try:
            future = self.backend.submit(request)
        except SandboxError as exc:
            return infra_error("ray", self.backend.missing(request.limits.network), str(exc))
        result = await asyncio.wrap_future(future)
        result.backend = "ray"
        return result

    def info(self) -> dict[str, Any]:
        import ray

        return {**self.backend.info(), "node": ray.get_runtime_context().get_node_id()}

    def close(self) -> None:
        self.backend.close()


def actor_class(max_concurrency: int) -> Any:
    import ray

    return ray.remote(max_concurrency=max_concurrency)(SandboxActor)


def end_actors(actors: Sequence[Any], stop: str, timeout_s: float, owns_ray: bool,
               temp_dir: str | None) -> None:
    """Each actor's ``stop`` method called then the actor killed (one already dead is
    skipped), Ray shut down when this process started it, and its temp folder removed."""
    import ray

    if ray.is_initialized():
        for actor in actors:
            try:
                ray.get(getattr(actor, stop).remote(), timeout=timeout_s)
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - already dead
                pass
        if owns_ray:
            ray.shutdown()
    if temp_dir:
        shutil.rmtree(temp_dir, ignore_errors=True)


class RayBackend:
    """See the module docstring. Options: ``actors`` (default: one per CPU of the cluster, at
    most 8), ``address``, ``num_cpus`` per actor, ``workers`` and ``slots`` per actor's pool;
    ``languages`` those the jobs may use (default: the built-ins; a registry's services pass
    theirs)."""

    name = "ray"

    def __init__(
        self,
        actors: int | None = None,
        address: str | None = None,
        num_cpus: float = 1.0,
        workers: int = 1,
        slots: int = 32,
        languages: Languages | None = None,
    ):
        try:
            import ray
        except ImportError as exc:
            raise SandboxError(
                "ray sandbox: ray is not installed (pip install 'rlhub[ray]')"
            ) from exc
        self.temp_dir: str | None = None
        self.owns_ray = not ray.is_initialized()
        if self.owns_ray:
            self._init_ray(ray, address)
        count = actors or max(1, min(8, int(ray.cluster_resources().get("CPU", 1) // num_cpus)))
        cls = actor_class(max_concurrency=4 * slots * workers)
        self.actors = [
            cls.options(num_cpus=num_cpus, scheduling_strategy="SPREAD").remote(
                workers, slots, languages
            )
            for _ in range(count)
        ]
        self.inflight = [0] * count
        self.lock = threading.Lock()
        self.closed = False
        self.node_info = ray.get(self.actors[0].info.remote())  # waits until the pools are up
        ray.get([a.info.remote() for a in self.actors[1:]])
        atexit.register(self.close)

    def _init_ray(self, ray: Any, address: str | None) -> None:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        if address is None:
            self.temp_dir = tempfile.mkdtemp(prefix="rlray-", dir="/tmp")
            ray.init(
                include_dashboard=False,
                _temp_dir=self.temp_dir,
                log_to_driver=False,
                configure_logging=False,
            )
        else:
            ray.init(address=address, log_to_driver=False)

    def submit(self, request: ExecRequest) -> Future[ExecResult]:
        with self.lock:
            if self.closed:
                raise SandboxError("the ray sandbox backend is closed")
            index = min(range(len(self.actors)), key=self.inflight.__getitem__)
            self.inflight[index] += 1
        future: Future[ExecResult] = self.actors[index].run.remote(request).future()
        future.add_done_callback(lambda _: self._done(index))
        return future

    def _done(self, index: int) -> None:
        with self.lock:
            self.inflight[index] -= 1

    def run(self, request: ExecRequest) -> ExecResult:
        try:
            return self.submit(request).result(timeout=answer_within(request))
        except FutureTimeout:
            return infra_error(self.name, self.node_info["missing"], "the ray actor did not answer")
        except Exception as exc:  # noqa: BLE001 - a dead actor or node is an infrastructure error
            return infra_error(self.name, self.node_info["missing"], f"{type(exc).__name__}: {exc}")

    async def run_batch(self, requests: Sequence[ExecRequest]) -> list[ExecResult]:
        async def one(request: ExecRequest) -> ExecResult:
            try:
                return await asyncio.wrap_future(self.submit(request))
            except Exception as exc:  # noqa: BLE001
                return infra_error(
                    self.name, self.node_info["missing"], f"{type(exc).__name__}: {exc}"
                )

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def info(self) -> dict[str, Any]:
        return {
            **self.node_info,
            "backend": self.name,
            "mode": "ray-actors/" + self.node_info["mode"],
            "actors": len(self.actors),
        }

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        end_actors(self.actors, "close", 10, self.owns_ray, self.temp_dir)
