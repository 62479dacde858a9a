"""Where the server's verification and episodes run: a thread pool, or Ray actors.

Verification never runs on the server's event loop. Two pools implement one small async API
(:class:`Pool`):

* :class:`ThreadPool` (default): ``--workers N`` threads in the server process. Code domains spend
  their time waiting on the sandbox's worker processes (the GIL is released), so threads scale
  them; pure-Python verifiers share the GIL with the HTTP loop.
* :class:`RayPool` (``--ray ADDRESS``): ``--workers N`` :class:`VerifierActor` s (default: as many
  as the cluster's free CPUs hold) spread over a Ray cluster, each a threaded actor holding its
  own registry and, through the domains' default ``local`` sandbox backend, its own warm sandbox
  pool on its node. Serving starts once one actor is up; the rest join as Ray places them, and a
  dead actor is replaced. Verification goes to the live actor with the fewest calls in flight
  (retried on another if its actor dies); an episode stays on the actor that started it.

Both run the same synchronous functions (:func:`verify_task`, :class:`EpisodeRunner`), so a domain
behaves identically in either. The pools take a :class:`~rlhub.task.Task` and answer a
:class:`Verified` (the :class:`~rlhub.task.Score` and its timing): the thread pool passes these
objects as they are, and only the Ray pool turns them into plain data and back, because they
cross processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from rlhub.episodes import EpisodeDriver, StepRewards, Turn, jsonable
from rlhub.plugins import Registry, RegistrySpec
from rlhub.task import Score, Task


@dataclass(frozen=True)
class Verified:
    """One verification: the domain's score and how long it took."""

    score: Score
    verify_ms: float

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a Ray actor's answer (sandbox results may hold bytes or objects)."""
        return {"score": jsonable(self.score.to_dict()), "verify_ms": self.verify_ms}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verified:
        return cls(Score.from_dict(data["score"]), float(data["verify_ms"]))


def verify_task(registry: Registry, domain_id: str, task: Task, completion: str) -> Verified:
    """Verify one completion of ``task`` with the domain ``domain_id``.

    Raises only when the domain cannot be found or built (``DomainNotFound``, ``PluginError``);
    ``Domain.verify`` itself never raises.
    """
    domain = registry.get(domain_id)
    started = time.perf_counter()
    score = domain.verify(task, completion)
    return Verified(score, (time.perf_counter() - started) * 1e3)


class EpisodeRunner:
    """One multi-turn episode with gym-style accounting, played by the episode driver
    (:class:`~rlhub.episodes.EpisodeDriver`: the done rule, the turn limit and the return).

    Each :meth:`step` returns ``reward`` = the change of the trajectory's return
    (:class:`~rlhub.episodes.StepRewards`), so the rewards of all steps sum to the trajectory
    reward at every point, which is what OpenRLHF's multi-turn executor needs (it sums step
    rewards) even when it cuts an episode short. A step that raises ends the episode at the
    range minimum, with the failure class the exception names.
    """

    def __init__(self, domain: Any, task: Task):
        self.driver = EpisodeDriver(domain, task)
        if not self.driver.open():
            raise self.driver.start_error  # type: ignore[misc]
        self.rewards = StepRewards()

    @property
    def done(self) -> bool:
        return self.driver.done

    def step(self, completion: str) -> dict[str, Any]:
        """Score one completion; see the class docstring for ``reward``."""
        if self.driver.done:
            raise RuntimeError("the episode is done; start a new one")
        turn = self.driver.turn(completion)
        started = time.perf_counter()
        self.driver.step(turn)
        verify_ms = (time.perf_counter() - started) * 1e3
        if self.driver.done:
            self.close()
        if turn.status != "ok":  # the step raised
            return self._answer(turn, turn.score.to_dict(), verify_ms, self.driver.lo)
        result = self.driver.result
        answer = self._answer(turn, result.score.to_dict(), verify_ms, self.driver.value())
        answer["messages"] = self.driver.messages
        return answer

    def close(self) -> None:
        """Release the episode's resources (its workspace, say); once, whatever ends it."""
        self.driver.close()

    def _answer(self, turn: Turn, score: dict[str, Any], verify_ms: float,
                value: float) -> dict[str, Any]:
        driver = self.driver
        attempts = sum(1 for t in driver.turns if t.attempt)
        info = {"return": value, "passed": turn.score.passed and turn.attempt,
                "turn": len(driver.turns), "attempt": turn.attempt, "attempts": attempts,
                "repair_turns": max(0, attempts - 1), "verify_ms": verify_ms,
                "error": turn.score.error, "score": jsonable(score),
                "reward_range": [driver.lo, driver.hi]}
        observation = None if driver.done else driver.result.observation
        return {"observation": observation,
                "reward": self.rewards.reward(value), "done": driver.done, "info": info}


def start_episode(registry: Registry, domain_id: str, task: Task) -> EpisodeRunner:
    return EpisodeRunner(registry.get(domain_id), task)


class Pool(Protocol):
    """The server's view of a verification pool; ``ref`` is whatever :meth:`start` returned."""

    kind: str
    size: int

    async def verify(self, domain: str, task: Task, completion: str) -> Verified: ...
    async def start(self, episode_id: str, domain: str, task: Task) -> Any: ...
    async def step(self, ref: Any, completion: str) -> dict[str, Any]: ...
    async def drop(self, ref: Any) -> None: ...
    def info(self) -> dict[str, Any]: ...
    def close(self) -> None: ...


class ThreadPool:
    """Verification and episodes on ``workers`` threads of the server process."""

    kind = "thread"

    def __init__(self, registry: Registry, workers: int):
        self.registry = registry
        self.size = max(1, workers)
        self.executor = ThreadPoolExecutor(self.size, thread_name_prefix="rlhub-verify")

    async def _call(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def verify(self, domain: str, task: Task, completion: str) -> Verified:
        return await self._call(verify_task, self.registry, domain, task, completion)

    async def start(self, episode_id: str, domain: str, task: Task) -> EpisodeRunner:
        return await self._call(start_episode, self.registry, domain, task)

    async def step(self, ref: EpisodeRunner, completion: str) -> dict[str, Any]:
        return await self._call(ref.step, completion)

    async def drop(self, ref: EpisodeRunner) -> None:
        await self._call(ref.close)

    def info(self) -> dict[str, Any]:
        return {"kind": self.kind, "workers": self.size}

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


class VerifierActor:
    """A Ray actor holding a registry and the episodes started on it (decorated lazily).

    Tasks arrive as ``Task.to_dict()`` and verifications leave as ``Verified.to_dict()``: they
    cross the process boundary as plain data.

    ``spec`` describes the server's registry (:attr:`rlhub.Registry.spec`: what discovery read,
    the default sandbox and the mixture's judge routes), so the actor rebuilds the same one."""

    MAX_EPISODES = 100_000

    def __init__(self, spec: RegistrySpec) -> None:
        self.registry = Registry.from_spec(spec)
        self.episodes: OrderedDict[str, EpisodeRunner] = OrderedDict()
        self.lock = threading.Lock()

    def verify(self, domain: str, task: dict[str, Any], completion: str) -> dict[str, Any]:
        return verify_task(self.registry, domain, Task.from_dict(task), completion).to_dict()

    def start(self, episode_id: str, domain: str, task: dict[str, Any]) -> str:
        runner = start_episode(self.registry, domain, Task.from_dict(task))
        with self.lock:
            self.episodes[episode_id] = runner
            while len(self.episodes) > self.MAX_EPISODES:  # the server expires them first
                self.episodes.popitem(last=False)
        return episode_id

    def step(self, episode_id: str, completion: str) -> dict[str, Any]:
        with self.lock:
            runner = self.episodes.get(episode_id)
        if runner is None:
            raise KeyError(f"episode {episode_id!r} is not held by this actor")
        return runner.step(completion)

    def drop(self, episode_id: str) -> None:
        with self.lock:
            runner = self.episodes.pop(episode_id, None)
        if runner is not None:
            runner.close()

    def info(self) -> dict[str, Any]:
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "domains": len(self.registry.ids())}


RLHUB_ENV_VARS = ("RLHUB_PLUGINS", "RLHUB_DOMAINS_PATH", "RLHUB_BLOCK_PLUGINS", "RLHUB_HOME",
                  "RLHUB_DISABLE_AUTOLOAD", "RLHUB_SANDBOX", "RLHUB_CONFIG", "RLHUB_CACHE")


class Slot:
    """One live actor of a :class:`RayPool`, with the calls it has in flight."""

    def __init__(self, actor: Any, info: dict[str, Any]):
        self.actor, self.info, self.inflight = actor, info, 0


class RayPool:
    """Verification on :class:`VerifierActor` s (see the module docstring).

    ``address``: ``"local"`` starts a private Ray instance (own temp dir, no dashboard) that
    :meth:`close` shuts down; anything else (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``)
    joins that cluster. ``workers`` actors of ``num_cpus`` each (default: as many as the
    cluster's available CPUs hold, at most 32), each running ``threads`` calls at once.

    Start-up returns as soon as one actor is up; the others join as Ray places them. When none is
    up within ``start_timeout_s`` it raises, naming what the actors ask for and what the cluster
    has. An actor that dies is replaced, and each call it had in flight is retried on another
    (at most :attr:`RETRIES` times; then :class:`~rlhub.errors.SandboxError`: an infrastructure
    failure, never the model's).
    """

    kind = "ray"
    RETRIES = 2
    MAX_DEFAULT = 32

    def __init__(self, address: str, workers: int | None, threads: int = 8,
                 num_cpus: float = 1.0, start_timeout_s: float = 120.0,
                 spec: RegistrySpec | None = None):
        import ray

        self.temp_dir: str | None = None
        self.owns_ray = not ray.is_initialized()
        if self.owns_ray:
            self._init_ray(ray, address)
        self.spec = spec or RegistrySpec()
        env = {k: os.environ[k] for k in (*RLHUB_ENV_VARS, *self._judge_keys()) if k in os.environ}
        self.factory = ray.remote(max_concurrency=max(1, threads))(VerifierActor).options(
            num_cpus=num_cpus, scheduling_strategy="SPREAD", runtime_env={"env_vars": env})
        self.threads, self.num_cpus, self.start_timeout_s = threads, num_cpus, start_timeout_s
        self.size = max(1, workers) if workers else self.cluster_size(ray, num_cpus)
        self.live: list[Slot] = []
        self.pending: dict[Any, Any] = {}  # an actor's first info() call -> the actor
        self.replaced = 0
        self.lock = threading.Lock()
        self.closed = threading.Event()
        for _ in range(self.size):
            self._spawn()
        self._wait_first(ray)
        self.grower = threading.Thread(target=self._grow, name="rlhub-ray-actors", daemon=True)
        self.grower.start()

    @classmethod
    def cluster_size(cls, ray: Any, num_cpus: float) -> int:
        """How many actors of ``num_cpus`` the cluster's available CPUs hold (1..MAX_DEFAULT)."""
        free = float(ray.available_resources().get("CPU", 0.0))
        return max(1, min(cls.MAX_DEFAULT, int(free // max(num_cpus, 1e-9))))

    def _judge_keys(self) -> list[str]:
        """The key variables of the mixture's inline judges: the actors call them too."""
        judges = self.spec.services.judges
        return judges.key_variables() if judges is not None else []

    def _init_ray(self, ray: Any, address: str) -> None:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        if address == "local":
            self.temp_dir = tempfile.mkdtemp(prefix="rlserve-ray-", dir="/tmp")
            ray.init(include_dashboard=False, _temp_dir=self.temp_dir, log_to_driver=False,
                     configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)

    def _spawn(self) -> None:
        actor = self.factory.remote(self.spec)
        with self.lock:
            self.pending[actor.info.remote()] = actor

    def _promote(self, ray: Any, timeout: float) -> None:
        """Move the actors whose first call answered within ``timeout`` to the live list."""
        with self.lock:
            refs = list(self.pending)
        if not refs:
            return
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        for ref in ready:
            with self.lock:
                actor = self.pending.pop(ref)
            try:
                slot = Slot(actor, ray.get(ref))
            except Exception:  # noqa: BLE001 - it died starting: ask for another
                self._spawn()
                continue
            with self.lock:
                self.live.append(slot)

    def _wait_first(self, ray: Any) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while not self.live and time.monotonic() < deadline:
            self._promote(ray, min(1.0, max(0.0, deadline - time.monotonic())))
        if not self.live:
            message = self.no_actor_message(ray)
            self.close()
            from rlhub.errors import SandboxError

            raise SandboxError(message)

    def no_actor_message(self, ray: Any) -> str:
        free = {k: v for k, v in ray.available_resources().items() if k in ("CPU", "memory")}
        total = {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "memory")}
        return (f"no verifier actor started within {self.start_timeout_s:g} s: {self.size} "
                f"actors each ask for {{'CPU': {self.num_cpus:g}}} and stay pending; the cluster "
                f"has {free.get('CPU', 0.0):g} of {total.get('CPU', 0.0):g} CPUs available. "
                "Lower --workers or --ray-actor-cpus, or add resources to the cluster")

    def _grow(self) -> None:
        import ray

        while not self.closed.is_set():
            if self.pending:
                with contextlib.suppress(Exception):  # the cluster went away: close() follows
                    self._promote(ray, 1.0)
            else:
                self.closed.wait(0.5)

    def _least_loaded(self) -> Slot:
        with self.lock:
            if self.live:
                return min(self.live, key=lambda slot: slot.inflight)
        from rlhub.errors import SandboxError

        raise SandboxError(f"no live verifier actor ({len(self.pending)} pending)")

    async def _slot(self) -> Slot:
        """The least loaded live actor, waiting (bounded) while replacements start."""
        deadline = time.monotonic() + self.start_timeout_s
        while not self.live and time.monotonic() < deadline and not self.closed.is_set():
            await asyncio.sleep(0.1)
        return self._least_loaded()

    def _lost(self, slot: Slot) -> None:
        """``slot``'s actor died: drop it and ask for a replacement."""
        with self.lock:
            if slot not in self.live:
                return
            self.live.remove(slot)
            self.replaced += 1
        self._spawn()

    async def _on(self, slot: Slot, method: str, *args: Any) -> Any:
        slot.inflight += 1
        try:
            return await getattr(slot.actor, method).remote(*args)
        finally:
            slot.inflight -= 1

    async def _retried(self, method: str, *args: Any) -> Any:
        from ray.exceptions import RayActorError

        from rlhub.errors import SandboxError

        for attempt in range(self.RETRIES + 1):
            slot = await self._slot()
            try:
                return await self._on(slot, method, *args)
            except RayActorError as exc:
                self._lost(slot)
                if attempt == self.RETRIES:
                    raise SandboxError(f"the verifier actor died {attempt + 1} times running "
                                       f"this call: {type(exc).__name__}") from exc
        raise AssertionError("unreachable")

    async def verify(self, domain: str, task: Task, completion: str) -> Verified:
        return Verified.from_dict(await self._retried("verify", domain, task.to_dict(), completion))

    async def start(self, episode_id: str, domain: str, task: Task) -> tuple[Slot, str]:
        slot = await self._slot()
        return slot, await self._on(slot, "start", episode_id, domain, task.to_dict())

    async def step(self, ref: tuple[Slot, str], completion: str) -> dict[str, Any]:
        from ray.exceptions import RayActorError

        try:
            return await self._on(ref[0], "step", ref[1], completion)
        except RayActorError as exc:  # its state died with the actor: the episode is gone
            self._lost(ref[0])
            raise KeyError(f"episode {ref[1]!r} was lost with its actor") from exc

    async def drop(self, ref: tuple[Slot, str]) -> None:
        with contextlib.suppress(Exception):  # a dead actor holds nothing to drop
            await self._on(ref[0], "drop", ref[1])

    def info(self) -> dict[str, Any]:
        with self.lock:
            live = [slot.info for slot in self.live]
            pending = len(self.pending)
        return {"kind": self.kind, "workers": self.size, "live": len(live), "pending": pending,
                "replaced": self.replaced, "threads_per_worker": self.threads,
                "cpus_per_worker": self.num_cpus, "nodes": len({a["node"] for a in live}),
                "actor_pids": [a["pid"] for a in live]}

    def close(self) -> None:
        import ray

        self.closed.set()
        if ray.is_initialized():
            with self.lock:
                actors = [slot.actor for slot in self.live] + list(self.pending.values())
            for actor in actors:
                with contextlib.suppress(Exception):  # an actor that is already gone
                    ray.kill(actor)
            if self.owns_ray:
                ray.shutdown()
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def make_pool(registry: Registry, workers: int | None, ray_address: str | None = None,
              threads: int = 8, ray_actor_cpus: float = 1.0,
              ray_start_timeout_s: float = 120.0) -> Pool:
    """The pool for ``rlhub serve``'s options: Ray actors with ``--ray`` (``workers`` None: sized
    from the cluster), else ``workers`` threads (None: 4 per CPU, at most 32)."""
    if ray_address:
        return RayPool(ray_address, workers, threads, ray_actor_cpus, ray_start_timeout_s,
                       registry.spec)
    return ThreadPool(registry, workers or min(32, 4 * (os.cpu_count() or 1)))
