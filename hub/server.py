"""``rlhub serve``: the reward and environment server (FastAPI + uvicorn).

Endpoints (JSON in, JSON out, ``Content-Type: application/json``):

=============================  =====================================================================
``POST /get_reward``           OpenRLHF's remote reward protocol (see :mod:`.server_protocol`).
                               Always 200 with one reward per query; bad labels and failed
                               verifiers give the minimum reward and ``error = 1``.
``GET /v1/domains``            Every registered domain: id, version, tags, reward range, turns.
``POST /v1/sample``            ``{domain, n, split, seed, start}`` tasks of a domain, or
                               ``{n}`` / ``{slot, group_size}`` from the server's mixture.
``POST /v1/verify``            ``{task, completion}`` (or ``{items: [...]}``) → score(s).
``POST /v1/episodes``          ``{task}`` or ``{domain, split, seed, index}`` → ``episode_id``,
                               ``observation`` (the task prompt), ``max_turns``.
``POST /v1/episodes/{id}/step`` ``{completion}`` → ``observation, reward, done, info``; the step
                               rewards sum to the trajectory reward (:class:`.EpisodeRunner`).
``DELETE /v1/episodes/{id}``   Close an episode early (idle ones expire after ``episode_ttl_s``).
``POST /v1/scheduler/observe`` ``{domain, group_rewards}`` or ``{samples: [{domain, group,
                               reward, group_size}]}`` (grouped by the server).
``GET /v1/scheduler/weights``  The mixture of the next batch and the grouping state.
``GET /health``, ``/metrics``  Liveness with pool and queue state; Prometheus metrics.
=============================  =====================================================================

Backpressure: the server queues, it does not reject. OpenRLHF retries a failed reward call 5 times
one second apart and then silently drops the reward, which crashes training later; so a 503 under
load would be the worst answer. At most ``max_inflight`` requests are admitted at once (default
64 per worker); a request beyond that waits at the admission gate *before its body is read*, so a
parked request holds only its headers and uvicorn's paused read buffer (at most 64 KiB), and
connections beyond those wait in the listen backlog (``backlog``, kernel memory). Admitted work
goes to a pool of ``workers`` threads or Ray actors (:mod:`.server_pool`); the event loop only
parses and answers. A verification that overruns ``verify_timeout_s × 3`` of its domain is
answered with the minimum reward and ``error = 1`` (its thread finishes in the background).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rlhub.errors import DomainNotFound, RlhubError
from rlhub.hub.server_metrics import Metrics
from rlhub.hub.server_pool import Pool, make_pool
from rlhub.hub.server_protocol import (
    DEFAULT_STRIP_TOKENS,
    LabelError,
    Outcome,
    answer,
    batch_items,
    decode_sample,
    outcome_from_score,
)
from rlhub.hub.server_state import EpisodeTable, SchedulerHub
from rlhub.task import Task

VERIFY_TIMEOUT_FACTOR = 3.0
MAX_SAMPLE_N = 10_000


@dataclass
class ServerConfig:
    """Options of ``rlhub serve``; see the module docstring for the queueing ones."""

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int | None = None  # threads: 4 per CPU (at most 32); Ray: as the cluster holds
    ray: str | None = None
    ray_threads: int = 8
    ray_actor_cpus: float = 1.0
    ray_start_timeout_s: float = 120.0
    mixture: str | None = None
    max_inflight: int | None = None
    backlog: int = 4096
    strip_tokens: tuple[str, ...] = DEFAULT_STRIP_TOKENS
    episode_ttl_s: float = 900.0
    max_episodes: int = 10_000
    max_body_bytes: int = 64 << 20
    log_level: str = "warning"

    @property
    def admission(self) -> int:
        return self.max_inflight or 64 * max(1, self.workers or 4 * (os.cpu_count() or 1))


class ApiError(Exception):
    """A client error on a ``/v1`` endpoint: answered as ``{"error": message}`` with ``status``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Gate:
    """The admission gate: at most ``limit`` requests admitted, the rest wait (never rejected)."""

    def __init__(self, limit: int, metrics: Metrics):
        self.semaphore = asyncio.Semaphore(limit)
        self.metrics = metrics
        self.limit = limit
        self.waiting = 0
        self.inflight = 0

    @contextlib.asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        self.waiting += 1
        self.metrics.waiting.inc()
        try:
            await self.semaphore.acquire()
        finally:
            self.waiting -= 1
            self.metrics.waiting.dec()
        self.inflight += 1
        self.metrics.inflight.inc()
        try:
            yield
        finally:
            self.inflight -= 1
            self.metrics.inflight.dec()
            self.semaphore.release()


class Hub:
    """What the endpoints call: registry, pool, episodes, scheduler, metrics."""

    def __init__(self, config: ServerConfig, registry: Any):
        self.config = config
        self.registry = registry
        self.metrics = Metrics()
        self.gate = Gate(config.admission, self.metrics)
        self.episodes = EpisodeTable(config.episode_ttl_s, config.max_episodes)
        self._background: set[asyncio.Future[Any]] = set()  # drops in flight, kept referenced
        self.scheduler = SchedulerHub(self._scheduler(), config.episode_ttl_s)
        self.pool: Pool | None = None
        self.startup_error: Exception | None = None  # why open() failed, for run() to raise
        self.started = time.time()

    def _scheduler(self) -> Any | None:
        if not self.config.mixture:
            return None
        from rlhub.scheduler import Scheduler

        return Scheduler.from_config(self.config.mixture, self.registry)

    def open(self) -> None:
        self.pool = make_pool(self.registry, self.config.workers, self.config.ray,
                              self.config.ray_threads, self.config.ray_actor_cpus,
                              self.config.ray_start_timeout_s)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    # -- rewards ---------------------------------------------------------------------------

    async def rewards(self, body: Any) -> dict[str, Any]:
        queries, prompts, labels = batch_items(body)
        outcomes = await asyncio.gather(*(self.reward_one(q, p, lab)
                                          for q, p, lab in zip(queries, prompts, labels)))
        return answer(list(outcomes))

    async def reward_one(self, query: Any, prompt: Any, label: Any) -> Outcome:
        sample = decode_sample(query, prompt, label, self.config.strip_tokens)
        manifest = self._manifest(sample.domain)
        lo = manifest.reward_range[0] if manifest else 0.0
        metric_domain = manifest.id if manifest else "unknown"
        if sample.problem or manifest is None:
            kind = "prompt_mismatch" if sample.prompt_mismatch else "label"
            self.metrics.errors.labels(metric_domain, kind).inc()
            problem = sample.problem or f"label: unknown domain {sample.domain!r}"
            return Outcome.failure(lo, problem, prompt_mismatch=sample.prompt_mismatch)
        outcome = await self._verify(manifest, sample.task, sample.response)  # type: ignore[arg-type]
        self.metrics.verified(metric_domain, outcome)
        return outcome

    def _manifest(self, domain: str | None) -> Any | None:
        if domain is None:
            return None
        try:
            return self.registry.manifest(domain)
        except DomainNotFound:
            return None

    def _known_manifest(self, domain: str) -> Any:
        """The manifest of a task's domain; an unknown one is a 404."""
        manifest = self._manifest(domain)
        if manifest is None:
            raise ApiError(404, f"unknown domain {domain!r}; GET /v1/domains lists them")
        return manifest

    async def _verify(self, manifest: Any, task: Task, completion: str) -> Outcome:
        lo = manifest.reward_range[0]
        timeout = float(manifest.data.get("verify_timeout_s") or 10.0) * VERIFY_TIMEOUT_FACTOR
        assert self.pool is not None
        try:
            result = await asyncio.wait_for(
                self.pool.verify(manifest.id, task.to_dict(), completion), timeout)
        except TimeoutError:
            self.metrics.errors.labels(manifest.id, "timeout").inc()
            return Outcome.failure(lo, f"verification did not finish within {timeout:g} s")
        except Exception as exc:  # noqa: BLE001 - a failed verifier is a 0 reward, not a 500
            self.metrics.errors.labels(manifest.id, "verifier").inc()
            return Outcome.failure(lo, f"{type(exc).__name__}: {exc}")
        if result["score"].get("error"):
            self.metrics.errors.labels(manifest.id, "verifier").inc()
        return outcome_from_score(result["score"], manifest.reward_range, result["verify_ms"])

    # -- /v1 -------------------------------------------------------------------------------

    def domains(self) -> list[dict[str, Any]]:
        rows = []
        for domain_id in self.registry.ids():
            m = self.registry.manifest(domain_id)
            rows.append({**m.summary_row(), "reward_range": list(m.reward_range),
                         "max_turns": m.max_turns, "repair_discount": m.repair_discount,
                         "sandbox": m.data["sandbox"].get("kind", "none")})
        return rows

    async def sample(self, body: dict[str, Any]) -> dict[str, Any]:
        n = _int(body, "n", 1, 1, MAX_SAMPLE_N)
        if body.get("domain"):
            domain = self._domain(body["domain"])
            split, seed = str(body.get("split", "train")), _int(body, "seed", 0)
            start = _int(body, "start", 0, 0)
            tasks = await asyncio.to_thread(_sample, domain, n, split, seed, start)
            return {"source": "domain", "tasks": [t.to_dict() for t in tasks]}
        if not self.scheduler.enabled:
            raise ApiError(400, "expected 'domain' (this server runs without --mixture, so it "
                                "has no scheduler to sample from), found none")
        if body.get("slot") is not None:
            size = _int(body, "group_size", 1, 1)
            lease = await asyncio.to_thread(self.scheduler.lease, str(body["slot"]), size)
            return {"source": "scheduler", "tasks": [lease.task.to_dict()], "lease": lease.id}
        tasks = await asyncio.to_thread(self.scheduler.sample, n)
        return {"source": "scheduler", "tasks": [t.to_dict() for t in tasks]}

    def _domain(self, domain_id: Any) -> Any:
        try:
            return self.registry.get(str(domain_id))
        except DomainNotFound as exc:
            raise ApiError(404, str(exc)) from None
        except RlhubError as exc:
            raise ApiError(500, str(exc)) from None

    async def verify(self, body: dict[str, Any]) -> dict[str, Any]:
        if isinstance(body.get("items"), list):
            return {"results": list(await asyncio.gather(*(self._verify_item(item)
                                                           for item in body["items"])))}
        return await self._verify_item(body)

    async def _verify_item(self, item: Any) -> dict[str, Any]:
        task = _task(item)
        completion = _completion(item)
        manifest = self._known_manifest(task.domain)
        outcome = await self._verify(manifest, task, completion)
        self.metrics.verified(manifest.id, outcome)
        return {"domain": manifest.id, "task_id": task.id, "reward": outcome.reward,
                "score": outcome.score, "passed": bool(outcome.logs["passed"]),
                "error": outcome.error, "verify_ms": outcome.logs["verify_ms"]}

    async def open_episode(self, body: dict[str, Any]) -> dict[str, Any]:
        if "task" in body:
            task = _task(body)
        else:
            domain = self._domain(body.get("domain"))
            task = await asyncio.to_thread(domain.task, str(body.get("split", "train")),
                                           _int(body, "seed", 0), _int(body, "index", 0, 0))
        manifest = self._known_manifest(task.domain)
        self._sweep()
        assert self.pool is not None
        entry = self.episodes.add(task.domain, None)
        try:
            entry.ref = await self.pool.start(entry.id, task.domain, task.to_dict())
        except Exception as exc:  # noqa: BLE001 - the domain's start() failed
            self.episodes.pop(entry.id)
            raise ApiError(500, f"{task.domain}: start() raised {type(exc).__name__}: {exc}") \
                from None
        self.metrics.episodes_open.set(len(self.episodes.entries))
        return {"episode_id": entry.id, "task": task.to_dict(), "observation": task.prompt,
                "max_turns": manifest.max_turns, "reward_range": list(manifest.reward_range),
                "expires_in_s": self.config.episode_ttl_s}

    async def step(self, body: dict[str, Any], episode_id: str) -> dict[str, Any]:
        entry = self.episodes.get(episode_id)
        if entry is None:
            raise ApiError(404, f"unknown episode {episode_id!r} (never opened, closed, or "
                                f"idle for more than {self.config.episode_ttl_s:g} s)")
        completion = _completion(body)
        assert self.pool is not None
        async with entry.lock:
            try:
                result = await self.pool.step(entry.ref, completion)
            except KeyError:  # a Ray actor restarted or evicted it (RayTaskError subclasses it)
                self.episodes.pop(episode_id)
                raise ApiError(404, f"episode {episode_id!r} is no longer held by its verifier "
                                    "worker (restarted or evicted); reset a new one") from None
            except RuntimeError as exc:
                raise ApiError(409, f"episode {episode_id}: {exc}") from None
        if result["done"]:
            await self.close_episode(episode_id)
        return {"episode_id": episode_id, **result}

    async def close_episode(self, episode_id: str) -> bool:
        entry = self.episodes.pop(episode_id)
        if entry is not None and self.pool is not None:
            await self.pool.drop(entry.ref)
        self.metrics.episodes_open.set(len(self.episodes.entries))
        return entry is not None

    def _sweep(self) -> None:
        gone = self.episodes.sweep()
        if gone:
            self.metrics.episodes_expired.inc(len(gone))
            if self.pool is not None:
                for entry in gone:
                    task = asyncio.ensure_future(self.pool.drop(entry.ref))
                    self._background.add(task)
                    task.add_done_callback(self._background.discard)
        self.metrics.episodes_open.set(len(self.episodes.entries))

    async def sweeper(self) -> None:
        period = min(30.0, max(1.0, self.config.episode_ttl_s / 10))
        while True:
            await asyncio.sleep(period)
            self._sweep()

    async def observe(self, body: dict[str, Any]) -> dict[str, Any]:
        if not self.scheduler.enabled:
            raise ApiError(400, "this server runs without --mixture, so it has no scheduler "
                                "to observe into")
        if isinstance(body.get("samples"), list):
            samples = [self._sample_report(s) for s in body["samples"]]
            completed = 0
            for domain, group, reward, size in samples:
                completed += await asyncio.to_thread(self.scheduler.record, domain, group,
                                                     reward, size)
            return {"recorded": len(samples), "completed_groups": completed}
        self._known_scheduled(body.get("domain"))
        groups = body.get("group_rewards")
        if not isinstance(groups, list) or not all(isinstance(g, list) for g in groups):
            raise ApiError(400, "expected 'group_rewards' as a list of lists of rewards (one "
                                f"per prompt group), found {type(groups).__name__}")
        zero = await asyncio.to_thread(self.scheduler.observe, body["domain"], groups)
        return {"observed_groups": len(groups), "zero_variance": zero}

    def _sample_report(self, item: Any) -> tuple[str, str, float, int]:
        """``(domain, group, reward, group_size)`` of one per-sample report, validated."""
        try:
            report = (item["domain"], str(item["group"]), float(item["reward"]),
                      int(item.get("group_size", 1)))
        except (KeyError, TypeError, ValueError):
            raise ApiError(400, "expected each sample as {domain, group, reward, group_size}, "
                                f"found {item!r}") from None
        self._known_scheduled(report[0])
        return report

    def _known_scheduled(self, domain: Any) -> None:
        if domain not in self.scheduler.weights():
            raise ApiError(400, f"expected a domain of the server's mixture, found {domain!r}; "
                                "GET /v1/scheduler/weights lists them")

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "uptime_s": time.time() - self.started,
                "domains": len(self.registry.ids()),
                "pool": self.pool.info() if self.pool else None,
                "queue": {"limit": self.gate.limit, "waiting": self.gate.waiting,
                          "inflight": self.gate.inflight},
                "episodes": len(self.episodes.entries), "scheduler": self.scheduler.state()}


def _sample(domain: Any, n: int, split: str, seed: int, start: int) -> list[Task]:
    try:
        return domain.sample(n, split=split, seed=seed, start=start)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


def _task(item: Any) -> Task:
    data = item.get("task") if isinstance(item, dict) else None
    if not isinstance(data, dict):
        raise ApiError(400, "expected 'task' to be an object (Task.to_dict()), found "
                            f"{type(data).__name__}")
    try:
        return Task.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise ApiError(400, str(exc)) from None


def _completion(item: dict[str, Any]) -> str:
    completion = item.get("completion")
    if not isinstance(completion, str):
        raise ApiError(400, "expected 'completion' to be a string, found "
                            f"{type(completion).__name__}")
    return completion


def _int(body: dict[str, Any], key: str, default: int, lo: int | None = None,
         hi: int | None = None) -> int:
    value = body.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or (lo is not None and value < lo) \
            or (hi is not None and value > hi):
        bounds = f" in [{lo}, {hi}]" if hi is not None else (f" >= {lo}" if lo is not None else "")
        raise ApiError(400, f"expected {key!r} to be an integer{bounds}, found {value!r}")
    return value


# -- the app -----------------------------------------------------------------------------------


def create_app(config: ServerConfig | None = None, registry: Any = None) -> Any:
    """The FastAPI app; the pool starts with the app's lifespan and stops with it."""
    from fastapi import FastAPI

    config = config or ServerConfig()
    if registry is None:
        from rlhub.plugins import registry as default_registry

        registry = default_registry()
    hub = Hub(config, registry)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        try:
            await asyncio.to_thread(hub.open)
        except Exception as exc:
            hub.startup_error = exc
            raise
        sweeper = asyncio.create_task(hub.sweeper())
        try:
            yield
        finally:
            sweeper.cancel()
            await asyncio.to_thread(hub.close)

    app = FastAPI(title="rlhub", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.hub = hub
    _routes(app, hub)
    return app


def _routes(app: Any, hub: Hub) -> None:
    route = _Router(app, hub)
    route("POST", "/get_reward", hub.rewards, gated=True, reward=True)
    route("GET", "/v1/domains", lambda _: _const({"domains": hub.domains()}))
    route("POST", "/v1/sample", hub.sample)
    route("POST", "/v1/verify", hub.verify, gated=True)
    route("POST", "/v1/episodes", hub.open_episode, gated=True)
    route("POST", "/v1/episodes/{episode_id}/step", hub.step, gated=True)
    route("DELETE", "/v1/episodes/{episode_id}",
          lambda _, episode_id: _closed(hub, episode_id))
    route("POST", "/v1/scheduler/observe", hub.observe)
    route("GET", "/v1/scheduler/weights",
          lambda _: _const({"weights": hub.scheduler.weights(), **hub.scheduler.state()}))
    route("GET", "/health", lambda _: _const(hub.health()))

    from starlette.responses import Response

    async def metrics(_: Any) -> Any:
        body, content_type = hub.metrics.render()
        return Response(body, media_type=content_type)

    app.router.add_route("/metrics", metrics, methods=["GET"])


async def _const(value: Any) -> Any:
    return value


async def _closed(hub: Hub, episode_id: str) -> dict[str, Any]:
    return {"episode_id": episode_id, "closed": await hub.close_episode(episode_id)}


class _Router:
    """Registers JSON endpoints: body parsing, admission, errors, metrics in one place."""

    def __init__(self, app: Any, hub: Hub):
        self.app = app
        self.hub = hub

    def __call__(self, method: str, path: str, fn: Callable[..., Awaitable[Any]], *,
                 gated: bool = False, reward: bool = False) -> None:
        from starlette.responses import Response

        hub, name = self.hub, path

        async def endpoint(request: Any) -> Any:
            started = time.perf_counter()
            if gated:
                async with hub.gate.admit():
                    status, value = await _handle(request, fn, hub.config.max_body_bytes, reward)
            else:
                status, value = await _handle(request, fn, hub.config.max_body_bytes, reward)
            hub.metrics.requests.labels(name, str(status)).inc()
            hub.metrics.latency.labels(name).observe(time.perf_counter() - started)
            return Response(json.dumps(value).encode(), status_code=status,
                            media_type="application/json")

        self.app.router.add_route(path, endpoint, methods=[method])


async def _handle(request: Any, fn: Callable[..., Awaitable[Any]], max_body: int,
                  reward: bool) -> tuple[int, Any]:
    """Run one endpoint: ``(status, JSON value)``; client errors become ``{"error": ...}``."""
    try:
        body = await _body(request, max_body) if request.method == "POST" else None
        return 200, await fn(body, **request.path_params)
    except ApiError as exc:
        return exc.status, {"error": str(exc)}
    except LabelError as exc:
        return 400, {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - the server answers JSON even for its own bugs
        if reward:
            return 500, {"error": f"{type(exc).__name__}: {exc}", "rewards": [], "scores": []}
        return 500, {"error": f"{type(exc).__name__}: {exc}"}


async def _body(request: Any, max_body: int) -> Any:
    size = int(request.headers.get("content-length") or 0)
    if size > max_body:
        raise ApiError(413, f"expected a body of at most {max_body} bytes, found {size}")
    raw = await request.body()
    if len(raw) > max_body:
        raise ApiError(413, f"expected a body of at most {max_body} bytes, found {len(raw)}")
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise ApiError(400, f"expected a JSON body, found invalid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise ApiError(400, f"expected a JSON object body, found {type(body).__name__}")
    return body


def run(config: ServerConfig, ready: Callable[[str, dict[str, Any]], None] | None = None) -> None:
    """Serve until interrupted (``rlhub serve``); ``ready(url, pool info)`` once it listens.

    A pool that could not start (no Ray actor up in time, say) is raised here, after uvicorn
    gave up, so the command exits with its message."""
    from rlhub.serving import serve

    app = create_app(config)
    hub = app.state.hub

    def listening(url: str) -> None:
        if ready is not None:
            ready(url, hub.pool.info() if hub.pool else {})

    started = serve(app, host=config.host, port=config.port, ready=listening,
                    backlog=config.backlog, log_level=config.log_level, access_log=False,
                    lifespan="on")
    if hub.startup_error is not None:
        raise hub.startup_error
    if not started:
        raise RlhubError("rlhub serve did not start; the lines above say why")
