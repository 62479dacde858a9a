"""``rlhub serve``: the reward and environment server (FastAPI + uvicorn).

Endpoints (JSON in, JSON out, ``Content-Type: application/json``):

=============================  =====================================================================
``POST /get_reward``           OpenRLHF's remote reward protocol (see :mod:`.protocol`).
                               Always 200 with one reward per query; bad, forged or unserved
                               labels and failed verifiers give the minimum reward and
                               ``error = 1`` (failure class ``label`` for a refused label).
``GET /v1/domains``            Every registered domain: id, version, tags, reward range, turns.
``POST /v1/sample``            ``{domain, n, split, seed, start}`` tasks of a domain, or
                               ``{n}`` / ``{lease: KEY}`` from the server's mixture (a lease gives
                               every request with its key the same task); each with a ``labels``
                               entry the server signed.
``POST /v1/verify``            ``{label or task, completion}`` (or ``{items: [...]}``) → score(s).
``POST /v1/episodes``          ``{label}``, ``{task}`` or ``{domain, split, seed, index}`` →
                               ``episode_id``, ``observation`` (the task prompt), ``max_turns``,
                               ``tools`` (OpenAI function specs; empty for domains without).
``POST /v1/episodes/{id}/step`` ``{completion}`` or ``{message}`` (an OpenAI assistant message
                               with ``tool_calls``) → ``observation, reward, done, info,
                               messages`` (a tool turn's assistant message and ``tool`` results);
                               the step rewards sum to the trajectory reward
                               (:class:`.EpisodeRunner`).
``DELETE /v1/episodes/{id}``   Close an episode early (idle ones expire after ``episode_ttl_s``).
``POST /v1/scheduler/observe`` ``{domain, group_rewards}``: one inner list per prompt group.
``GET /v1/scheduler/weights``  The mixture of the next batch and the grouping state.
``GET /health``, ``/metrics``  Liveness with pool and queue state; Prometheus metrics.
=============================  =====================================================================

Request and response bodies are pydantic models (:mod:`.bodies`); a body that does not fit its
model is answered 400 with what was expected and what was found.

Calls that change state (``/v1/sample``, ``/v1/episodes``, ``.../step``, ``/v1/scheduler/observe``)
take an ``Idempotency-Key`` header (:mod:`.dedupe`): a retry with the same key gets the first
request's answer instead of running again. A verification (``/get_reward``, ``/v1/verify``) that
meets an infrastructure failure (class ``sandbox``, ``verifier`` or ``judge``) is repeated up to
``infra_retries`` times before the server answers (an episode step is not: its episode ends, and
the OpenRLHF agent replays it on a new one); every answer carries the failure class
(``extra_logs``: ``trainable`` and ``failure_<class>``; ``/v1/verify`` and steps: ``failure``).

Backpressure: the server queues, it does not reject. OpenRLHF retries a failed reward call 5 times
one second apart and then silently drops the reward, which crashes training later; so a 503 under
load would be the worst answer. At most ``max_inflight`` requests are admitted at once (default
64 per worker); every endpoint that does work passes this admission gate, and a request beyond
the limit waits there. A request is admitted only once its whole body has arrived: bodies are read
first, each under ``body_timeout_s`` and ``max_body_bytes`` (:func:`.guard.read_raw`), so a client
that sends its body slowly (or never) holds its connection until that deadline and never a slot.
Connections are capped per client address (``max_connections_per_client``, 4096: OpenRLHF opens
one per sample, so one trainer host may hold thousands; the server raises its open-files limit to
hold them) and must send each request's headers within ``header_timeout_s`` (:mod:`.connections`);
connections beyond those wait in the listen backlog (``backlog``, kernel memory). Admitted work
goes to a pool of ``workers`` threads or Ray actors (:mod:`.pool`); the event loop only parses
and answers. A verification that
overruns ``verify_timeout_s × 3`` of its domain is answered with the minimum reward and
``error = 1`` (its thread finishes in the background).

Trust (:mod:`rlhub.labels`): every task arriving from a client, in a ``/get_reward`` label or a
``/v1`` body, goes through one :class:`~rlhub.labels.LabelGate`: it is verified only when the
server can regenerate it from its coordinates or it carries the server key's signature, and only
for a served domain (the mixture's and ``--allow-domain`` globs; every installed domain when
neither is given). A label text the gate admitted before is recalled on the event loop (OpenRLHF
sends a prompt's label with each of its samples); any other label is checked on a thread.
Limits (:mod:`.guard`): bodies are read as a stream and refused past ``max_body_bytes``; at most
``max_items`` samples per request (413; ``/v1/sample``'s ``n`` too); one sample's crash is that
sample's failure. SIGTERM stops the server within ``shutdown_grace_s`` plus a moment, even while
verifications still run.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from rlhub import labels
from rlhub.errors import DomainNotFound, LabelError, ManifestError, RlhubError
from rlhub.failures import of_exception
from rlhub.integrations.server.bodies import (
    UNSCHEDULED,
    EpisodeRequest,
    LeaseAnswer,
    ObserveRequest,
    RewardAnswer,
    RewardRequest,
    SampleAnswer,
    SampleRequest,
    StepRequest,
    TaskRef,
    VerifyItem,
    VerifyRequest,
    VerifyResult,
    VerifyResults,
    validate,
)
from rlhub.integrations.server.connections import ConnectionLimits, limited_protocol, raise_open_files
from rlhub.integrations.server.dedupe import Answer, RequestLog, error
from rlhub.integrations.server.guard import (
    BodyBudget,
    RequestRefused,
    claimed_domain,
    exit_past_stuck_threads,
    isolated,
    label_refused,
    parse_json_object,
    read_raw,
)
from rlhub.integrations.server.metrics import Metrics
from rlhub.integrations.server.pool import Pool, make_pool
from rlhub.integrations.server.protocol import (
    DEFAULT_STRIP_TOKENS,
    ApiError,
    Outcome,
    answer,
    decode_response,
    outcome_from_score,
)
from rlhub.integrations.server.state import EpisodeTable, SharedScheduler
from rlhub.task import Task

if TYPE_CHECKING:
    from rlhub.plugins import Registry

#: Failure classes a verification is repeated on (``--infra-retries``): faults of the
#: infrastructure that may pass, unlike a refused label or the model's own outcome.
RETRYABLE = frozenset({"sandbox", "verifier", "judge"})
#: What this server speaks beyond the endpoints, listed by ``/health`` for clients to check.
FEATURES = ("idempotency-key", "lease-key", "failure-classes")


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
    max_body_bytes: int = 16 << 20
    max_buffered_bytes: int = 1 << 30  # bodies in memory at once, arriving or parked at the gate
    body_timeout_s: float = 30.0
    header_timeout_s: float = 10.0
    max_connections_per_client: int = 4096
    max_items: int = 1024
    infra_retries: int = 2
    max_request_keys: int = 50_000
    max_request_log_bytes: int = 64 << 20
    max_kept_answer_bytes: int = 1 << 20
    label_key_file: str | None = None
    allow_domains: tuple[str, ...] = ()
    shutdown_grace_s: float = 3.0
    openenv: bool = False
    log_level: str = "warning"

    @property
    def admission(self) -> int:
        return self.max_inflight or 64 * max(1, self.workers or 4 * (os.cpu_count() or 1))


class Gate:
    """The admission gate: at most ``limit`` requests admitted, the rest wait (never rejected)."""

    def __init__(self, limit: int, metrics: Metrics):
        self.semaphore = asyncio.Semaphore(limit)
        self.metrics = metrics
        self.limit = limit
        self.waiting = 0
        self.inflight = 0
        self.reading = 0  # requests whose body is still arriving (they hold no slot)

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


class RewardService:
    """What the endpoints call: registry, pool, episodes, scheduler, metrics."""

    def __init__(self, config: ServerConfig, registry: Registry):
        self.config = config
        self.registry = registry
        self.metrics = Metrics()
        self.gate = Gate(config.admission, self.metrics)
        self.episodes = EpisodeTable(config.episode_ttl_s, config.max_episodes)
        self.requests = RequestLog(config.episode_ttl_s, config.max_request_keys,
                                   config.max_request_log_bytes, config.max_kept_answer_bytes)
        self.connections = ConnectionLimits(config.max_connections_per_client,
                                            config.header_timeout_s)
        self.bodies = BodyBudget(config.max_buffered_bytes)
        self._background: set[asyncio.Future[Any]] = set()  # drops in flight, kept referenced
        self.scheduler = SharedScheduler(self._scheduler(), config.episode_ttl_s)
        self.label_key = labels.load_key(config.label_key_file) or labels.new_key()
        self.labels = labels.LabelGate(registry, key=self.label_key, domains=self._served())
        self.context = {"max_items": config.max_items}  # what request bodies are validated with
        self.pool: Pool | None = None
        self.startup_error: Exception | None = None  # why open() failed, for run() to raise
        self.started = time.time()

    def _served(self) -> set[str] | None:
        """The domains labels may name: the mixture's and the allowed globs (None: all)."""
        if not self.config.mixture and not self.config.allow_domains:
            return None
        served = set(self.scheduler.weights()) if self.scheduler.enabled else set()
        if self.config.allow_domains:
            served |= set(self.registry.match(list(self.config.allow_domains)))
        return served

    def _scheduler(self) -> Any | None:
        if not self.config.mixture:
            return None
        from rlhub.scheduler import Scheduler
        from rlhub.judges import mixture_judges

        self.registry.services.use_judges(mixture_judges(self.config.mixture, self.registry))
        return Scheduler.from_config(self.config.mixture, self.registry)

    def open(self) -> None:
        """Start the pool and build ``/v1/domains`` (every manifest parsed: seconds on a loaded
        machine, paid before the server answers ``/health``, never by a client's request)."""
        _ = self.domain_rows
        self.pool = make_pool(self.registry, self.config.workers, self.config.ray,
                              self.config.ray_threads, self.config.ray_actor_cpus,
                              self.config.ray_start_timeout_s)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    # -- rewards ---------------------------------------------------------------------------

    async def rewards(self, body: RewardRequest) -> RewardAnswer:
        work = [isolated(self.reward_one(q, p, lab), 0.0) for q, p, lab in body.samples()]
        # OpenRLHF sends one sample per request: awaited in place, it needs no task of its own
        outcomes = [await work[0]] if len(work) == 1 else await asyncio.gather(*work)
        return RewardAnswer(**answer(list(outcomes)))

    async def reward_one(self, query: Any, prompt: Any, label: Any) -> Outcome:
        try:
            task, manifest = self.labels.recall(label) or \
                await asyncio.to_thread(self.labels.admitted, label)
        except LabelError as exc:
            return self._refused(label, exc)
        sample = decode_response(query, prompt, task.domain, task, self.config.strip_tokens)
        if sample.problem:
            kind = "prompt_mismatch" if sample.prompt_mismatch else "label"
            self.metrics.errors.labels(manifest.id, kind).inc()
            return Outcome.failure(manifest.reward_range[0], sample.problem, "label",
                                   prompt_mismatch=sample.prompt_mismatch)
        outcome = await self._verify(manifest, task, sample.response)
        self.metrics.verified(manifest.id, outcome)
        return outcome

    def _refused(self, label: Any, exc: LabelError) -> Outcome:
        """A refused label: the claimed domain's minimum (when it exists), failure ``label``."""
        manifest = self._manifest(claimed_domain(label))
        self.metrics.errors.labels(manifest.id if manifest else "unknown", "label").inc()
        return label_refused(manifest, str(exc))

    async def _open(self, ref: TaskRef) -> Any:
        """The authentic task of a ``/v1`` body: its ``label``, or its ``task`` as a label."""
        return await asyncio.to_thread(self.labels.open, ref.claimed_label())

    def _manifest(self, domain: str | None) -> Any | None:
        if domain is None:
            return None
        try:
            return self.registry.manifest(domain)
        except (DomainNotFound, ManifestError):
            return None

    def _known_manifest(self, domain: str) -> Any:
        """The manifest of a task's domain; an unknown one is a 404, an invalid one (listed,
        refused on use) a 500 naming the field, as :meth:`_domain` says."""
        try:
            return self.registry.manifest(domain)
        except DomainNotFound:
            raise ApiError(404, f"unknown domain {domain!r}; GET /v1/domains lists them") from None
        except ManifestError as exc:
            raise ApiError(500, str(exc)) from None

    async def _verify(self, manifest: Any, task: Task, completion: str) -> Outcome:
        """Verify, repeating an infrastructure failure up to ``infra_retries`` times.

        A verification that overran its deadline is not repeated: it would hold the request
        for as long again.
        """
        for attempt in range(self.config.infra_retries + 1):
            outcome, overran = await self._verify_once(manifest, task, completion)
            failure = outcome.failure_class
            if failure not in RETRYABLE or overran or attempt == self.config.infra_retries:
                break
            self.metrics.retries.labels(manifest.id, failure).inc()
        outcome.retries = attempt
        return outcome

    async def _verify_once(self, manifest: Any, task: Task, completion: str
                           ) -> tuple[Outcome, bool]:
        """One verification on the pool: ``(outcome, True when it overran its deadline)``."""
        lo = manifest.reward_range[0]
        timeout = manifest.verify_deadline_s
        assert self.pool is not None
        try:
            verified = await asyncio.wait_for(self.pool.verify(manifest.id, task, completion),
                                              timeout)
        except TimeoutError:
            self.metrics.errors.labels(manifest.id, "timeout").inc()
            return Outcome.failure(lo, f"verification did not finish within {timeout:g} s",
                                   "verifier"), True
        except Exception as exc:  # noqa: BLE001 - a failed verifier is a 0 reward, not a 500
            self.metrics.errors.labels(manifest.id, "verifier").inc()
            return Outcome.failure(lo, f"{type(exc).__name__}: {exc}", of_exception(exc)), False
        if verified.score.error:
            self.metrics.errors.labels(manifest.id, "verifier").inc()
        return outcome_from_score(verified.score, manifest.reward_range, verified.verify_ms), False

    # -- /v1 -------------------------------------------------------------------------------

    @functools.cached_property
    def domain_rows(self) -> list[dict[str, Any]]:
        """``/v1/domains``: built once (the registry does not change while the server runs)."""
        return self.domains()

    def domains(self) -> list[dict[str, Any]]:
        rows = []
        for domain_id in self.registry.ids():
            try:
                m = self.registry.manifest(domain_id)
            except ManifestError:  # refused on use, as by every other route
                continue
            rows.append({**m.summary_row(), "reward_range": list(m.reward_range),
                         "max_turns": m.max_turns, "repair_discount": m.repair_discount,
                         "sandbox": m.data["sandbox"].get("kind", "none")})
        return rows

    async def sample(self, body: SampleRequest) -> SampleAnswer:
        if body.domain:
            domain = self._domain(body.domain)
            tasks = await asyncio.to_thread(_sample, domain, body.n, body.split, body.seed,
                                            body.start)
            return SampleAnswer(source="domain", tasks=[t.to_dict() for t in tasks],
                                labels=self._signed(tasks))
        if not self.scheduler.enabled:
            raise ApiError(400, "expected 'domain' (this server runs without --mixture, so it "
                                "has no scheduler to sample from), found none")
        if body.lease is not None:
            task = await asyncio.to_thread(self.scheduler.lease, body.lease)
            return LeaseAnswer(source="scheduler", tasks=[task.to_dict()], lease=body.lease,
                               labels=self._signed([task]))
        tasks = await asyncio.to_thread(self.scheduler.sample, body.n)
        return SampleAnswer(source="scheduler", tasks=[t.to_dict() for t in tasks],
                            labels=self._signed(tasks))

    def _signed(self, tasks: list[Task]) -> list[dict[str, Any]]:
        """Labels of tasks this server hands out, signed with its key (see :mod:`rlhub.labels`)."""
        return [labels.make_label(t, key=self.label_key) for t in tasks]

    def _domain(self, domain_id: Any) -> Any:
        try:
            return self.registry.get(str(domain_id))
        except DomainNotFound as exc:
            raise ApiError(404, str(exc)) from None
        except RlhubError as exc:
            raise ApiError(500, str(exc)) from None

    async def verify(self, body: VerifyRequest) -> VerifyResult | VerifyResults:
        if body.items is not None:
            return VerifyResults(results=list(await asyncio.gather(
                *(self._verify_item(item) for item in body.items))))
        return await self._verify_item(body)

    async def _verify_item(self, item: VerifyItem) -> VerifyResult:
        try:
            task = await self._open(item)
        except LabelError as exc:
            return self._refused_item(item, exc)
        manifest = self._known_manifest(task.domain)
        outcome = await self._verify(manifest, task, item.text)
        self.metrics.verified(manifest.id, outcome)
        return VerifyResult(domain=manifest.id, task_id=task.id, reward=outcome.reward,
                            score=outcome.score, passed=outcome.passed,
                            error=outcome.error, failure=outcome.failure_class,
                            retries=outcome.retries, verify_ms=outcome.verify_ms)

    def _refused_item(self, item: VerifyItem, exc: LabelError) -> VerifyResult:
        label = item.label if "label" in item.model_fields_set else {"task": item.task}
        outcome = self._refused(label, exc)
        return VerifyResult(domain=claimed_domain(label), task_id=None, reward=outcome.reward,
                            score=outcome.score, passed=False, error=outcome.error,
                            failure=outcome.failure_class, retries=0, verify_ms=0.0)

    async def open_episode(self, body: EpisodeRequest) -> dict[str, Any]:
        try:
            if body.names_task:
                task = await self._open(body)
            else:
                self.labels.admit(str(body.domain))
                domain = self._domain(body.domain)
                task = await asyncio.to_thread(domain.task, body.split, body.seed, body.index)
        except LabelError as exc:
            raise ApiError(403, f"{exc} (failure class 'label')") from None
        manifest = self._known_manifest(task.domain)
        self._sweep()
        assert self.pool is not None
        entry = self.episodes.add(task.domain, None)
        try:
            entry.ref = await self.pool.start(entry.id, task.domain, task)
        except Exception as exc:  # noqa: BLE001 - the domain's start() failed
            self.episodes.pop(entry.id)
            raise ApiError(500, f"{task.domain}: start() raised {type(exc).__name__}: {exc}") \
                from None
        self.metrics.episodes_open.set(len(self.episodes.entries))
        tools = await asyncio.to_thread(self.registry.get(task.domain).tool_specs)
        return {"episode_id": entry.id, "task": task.to_dict(), "observation": task.prompt,
                "max_turns": manifest.max_turns, "reward_range": list(manifest.reward_range),
                "expires_in_s": self.config.episode_ttl_s, "tools": tools}

    async def step(self, body: StepRequest, episode_id: str) -> dict[str, Any]:
        entry = self.episodes.get(episode_id)
        if entry is None:
            raise ApiError(404, f"unknown episode {episode_id!r} (never opened, closed, or "
                                f"idle for more than {self.config.episode_ttl_s:g} s)")
        assert self.pool is not None
        async with entry.lock:
            try:
                result = await self.pool.step(entry.ref, body.text)
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

    async def observe(self, body: ObserveRequest) -> dict[str, Any]:
        if not self.scheduler.enabled:
            raise ApiError(400, "this server runs without --mixture, so it has no scheduler "
                                "to observe into")
        if body.domain not in self.scheduler.weights():
            raise ApiError(400, UNSCHEDULED.format(value=body.domain))
        groups = body.group_rewards
        zero = await asyncio.to_thread(self.scheduler.observe, body.domain, groups)
        return {"observed_groups": len(groups), "zero_variance": zero}

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "uptime_s": time.time() - self.started,
                "domains": len(self.registry.ids()),
                "pool": self.pool.info() if self.pool else None,
                "queue": {"limit": self.gate.limit, "waiting": self.gate.waiting,
                          "inflight": self.gate.inflight, "reading": self.gate.reading,
                          "body_bytes": self.bodies.held},
                "connections": self.connections.state(),
                "episodes": len(self.episodes.entries), "scheduler": self.scheduler.state(),
                "requests": self.requests.state(), "features": list(FEATURES)}


def _sample(domain: Any, n: int, split: str, seed: int, start: int) -> list[Task]:
    try:
        return domain.sample(n, split=split, seed=seed, start=start)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None


# -- the app -----------------------------------------------------------------------------------


def create_app(config: ServerConfig, registry: Registry) -> Any:
    """The FastAPI app serving ``registry``'s domains; the pool starts with the app's lifespan
    and stops with it."""
    from fastapi import FastAPI

    service = RewardService(config, registry)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        try:
            await asyncio.to_thread(service.open)
        except Exception as exc:
            service.startup_error = exc
            raise
        sweeper = asyncio.create_task(service.sweeper())
        try:
            yield
        finally:
            sweeper.cancel()
            await asyncio.to_thread(service.close)

    app = FastAPI(title="rlhub", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.service = service
    _routes(app, service)
    if config.openenv:
        from rlhub.integrations.exports.openenv_server import mount

        mount(app, service)
    return app


def _routes(app: Any, service: RewardService) -> None:
    route = _Router(app, service)
    route("POST", "/get_reward", service.rewards, RewardRequest, reward=True)
    route("GET", "/v1/domains", lambda _: _const({"domains": service.domain_rows}), gated=False)
    route("POST", "/v1/sample", service.sample, SampleRequest, idempotent=True)
    route("POST", "/v1/verify", service.verify, VerifyRequest)
    route("POST", "/v1/episodes", service.open_episode, EpisodeRequest, idempotent=True)
    route("POST", "/v1/episodes/{episode_id}/step", service.step, StepRequest, idempotent=True)
    route("DELETE", "/v1/episodes/{episode_id}",
          lambda _, episode_id: _closed(service, episode_id))
    route("POST", "/v1/scheduler/observe", service.observe, ObserveRequest, idempotent=True)
    route("GET", "/v1/scheduler/weights", lambda _: _const(
        {"weights": service.scheduler.weights(), **service.scheduler.state()}), gated=False)
    route("GET", "/health", lambda _: _const(service.health()), gated=False)

    from starlette.responses import Response

    async def metrics(_: Any) -> Any:
        body, content_type = service.metrics.render()
        return Response(body, media_type=content_type)

    app.router.add_route("/metrics", metrics, methods=["GET"])


async def _const(value: Any) -> Any:
    return value


async def _closed(service: RewardService, episode_id: str) -> dict[str, Any]:
    return {"episode_id": episode_id, "closed": await service.close_episode(episode_id)}


class _Router:
    """Registers JSON endpoints: body, admission, errors and metrics in one place.

    A POST endpoint names its body's model (:mod:`.bodies`): the endpoint is called with the
    validated model, and a body that does not fit it is answered 400 with what was expected and
    what was found. An endpoint may answer with a response model or a JSON-ready value.

    Every endpoint that does work is ``gated`` (the default): its body is read in full first
    (under the body deadline and size limit), then it waits at the admission gate. Only the
    constant-time reads (``/health``, ``/v1/domains``, the scheduler's weights) skip the gate.
    """

    def __init__(self, app: Any, service: RewardService):
        self.app = app
        self.service = service

    def __call__(self, method: str, path: str, fn: Callable[..., Awaitable[Any]],
                 model: type[BaseModel] | None = None, *, gated: bool = True,
                 reward: bool = False, idempotent: bool = False) -> None:
        from starlette.responses import Response

        service, name = self.service, path
        if model is not None:
            fn = _taking(model, fn, service.context)

        async def endpoint(request: Any) -> Any:
            started = time.perf_counter()
            status, body = await self._answer(request, fn, gated, reward, idempotent)
            service.metrics.answered(name, status, time.perf_counter() - started)
            return Response(body, status_code=status, media_type="application/json")

        self.app.router.add_route(path, endpoint, methods=[method])

    async def _answer(self, request: Any, fn: Callable[..., Awaitable[Any]], gated: bool,
                      reward: bool, idempotent: bool) -> Answer:
        try:
            raw = await self._body(request)
        except RequestRefused as exc:
            return error(exc.status, str(exc))
        try:
            return await self._run(request, raw, fn, gated, reward, idempotent)
        finally:
            self.service.bodies.give(len(raw))

    async def _run(self, request: Any, raw: bytes, fn: Callable[..., Awaitable[Any]],
                   gated: bool, reward: bool, idempotent: bool) -> Answer:
        run = functools.partial(_handle, request, raw, fn, reward)
        gate = self.service.gate
        if idempotent:
            return await self.service.requests.respond(request, raw, run, gate.admit)
        if not gated:
            return await run()
        async with gate.admit():
            return await run()

    async def _body(self, request: Any) -> bytes:
        """The whole body of a POST (see :func:`.guard.read_raw`), before any admission."""
        if request.method != "POST":
            return b""
        config, gate = self.service.config, self.service.gate
        gate.reading += 1
        try:
            return await read_raw(request, config.max_body_bytes, config.body_timeout_s,
                                  self.service.bodies)
        finally:
            gate.reading -= 1


def _taking(model: type[BaseModel], fn: Callable[..., Awaitable[Any]],
            context: dict[str, Any]) -> Callable[..., Awaitable[Any]]:
    """``fn`` called with its JSON body validated as ``model`` (see :func:`.bodies.validate`)."""

    async def call(body: Any, **params: Any) -> Any:
        return await fn(validate(model, body, context), **params)

    return call


async def _handle(request: Any, raw: bytes, fn: Callable[..., Awaitable[Any]],
                  reward: bool) -> Answer:
    """Run one endpoint: ``(status, JSON bytes)``; client errors become ``{"error": ...}``."""
    try:
        body = parse_json_object(raw) if request.method == "POST" else None
        answered = await fn(body, **request.path_params)
        if isinstance(answered, BaseModel):
            return 200, answered.model_dump_json().encode()
        return 200, json.dumps(answered).encode()
    except (ApiError, RequestRefused) as exc:
        return error(exc.status, str(exc))
    except Exception as exc:  # noqa: BLE001 - the server answers JSON even for its own bugs
        message = f"{type(exc).__name__}: {exc}"
        if reward:
            return 500, json.dumps({"error": message, "rewards": [], "scores": []}).encode()
        return error(500, message)


def uvicorn_options(service: RewardService) -> dict[str, Any]:
    """The uvicorn options that bound connections, headers and WebSocket messages (see the
    module docstring); every way of serving the app passes them."""
    config = service.config
    return {"http": limited_protocol(service.connections), "ws_max_size": config.max_body_bytes,
            "backlog": config.backlog, "timeout_graceful_shutdown": config.shutdown_grace_s}


def run(config: ServerConfig, registry: Registry,
        ready: Callable[[str, dict[str, Any]], None] | None = None) -> None:
    """Serve ``registry``'s domains until SIGTERM or SIGINT (``rlhub serve``), then exit within
    the shutdown grace; ``ready(url, pool info)`` once it listens.

    A pool that could not start (no Ray actor up in time, say) is raised here, after uvicorn
    gave up, so the command exits with its message."""
    from rlhub.serving import serve, settle_heap

    raise_open_files()
    app = create_app(config, registry)
    service = app.state.service

    def listening(url: str) -> None:
        settle_heap()
        if ready is not None:
            ready(url, service.pool.info() if service.pool else {})

    try:
        started = serve(app, host=config.host, port=config.port, ready=listening,
                        log_level=config.log_level, access_log=False, lifespan="on",
                        **uvicorn_options(service))
    finally:  # SIGINT arrives as KeyboardInterrupt: the interpreter would join stuck threads
        if service.startup_error is None:
            exit_past_stuck_threads(config.shutdown_grace_s)
    if service.startup_error is not None:
        raise service.startup_error
    if not started:
        raise RlhubError("rlhub serve did not start; the lines above say why")
