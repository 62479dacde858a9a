"""Judge endpoints: the shared, bounded, failsafe client behind every model-based verifier.

An LLM judge is a remote dependency inside the reward: at RL scale thousands of verifications per
minute hit one server, and a slow or dead judge must never stall the run. Every judge call goes
through the :class:`JudgeEndpoint` of its base URL, one object per URL in the registry's services
(:class:`JudgeEndpoints`, held by :class:`rlhub.services.Services`), shared by all its domains and
verifier instances (one object per full configuration: URL, key, timeouts and retries; every
object of one URL shares that URL's slots):

* **concurrency limit**: at most ``concurrency`` requests in flight to the URL (a bounded
  semaphore; callers queue for a slot);
* **deadline**: one judgement (queueing, every attempt, every backoff) ends by its deadline;
  running out raises :class:`JudgeTimeout`;
* **retries with backoff**: connection errors, timeouts, 408/409/429/5xx and malformed judge
  output are retried with jittered exponential backoff; other 4xx are not;
* **metrics**: request latency and outcome counts, kept in :data:`STATS` (read by
  :func:`judge_scalars` for TensorBoard) and mirrored to ``prometheus_client`` metrics in the
  default registry when it is installed, so the server's ``/metrics`` shows them.

:class:`JudgeCache` is the services' result cache (LRU, thread-safe, with single-flight so that
identical concurrent requests, common in GRPO groups, call the judge once). The metrics alone
are the process's, as Prometheus's are.

Configuration, first match wins: the verifier's options, then ``RLHUB_JUDGE_CONCURRENCY``,
``RLHUB_JUDGE_DEADLINE_S``, ``RLHUB_JUDGE_TIMEOUT_S`` and ``RLHUB_JUDGE_RETRIES``, then the
defaults of :class:`EndpointConfig`. The first caller of a URL fixes its concurrency; a later
caller asking for another gets a warning (and its own key, timeouts and retries).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from rlhub.errors import VerifierError

log = logging.getLogger("rlhub.judge")
T = TypeVar("T")
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_BACKOFF_S = 4.0
ENV = {"concurrency": "RLHUB_JUDGE_CONCURRENCY", "deadline_s": "RLHUB_JUDGE_DEADLINE_S",
       "timeout_s": "RLHUB_JUDGE_TIMEOUT_S", "retries": "RLHUB_JUDGE_RETRIES"}


class JudgeError(VerifierError):
    """A judge endpoint failed to give a usable judgement."""

    failure = "judge"


class JudgeMalformed(JudgeError):
    """The judge answered, but not in the required format."""


class JudgeTimeout(JudgeError):
    """The judgement did not finish before its deadline."""


class JudgeUnavailable(JudgeError):
    """Every attempt failed (or no endpoint is configured); the failsafe applies."""


@dataclass(frozen=True)
class EndpointConfig:
    """Limits of one endpoint: requests in flight, time budgets and retry policy."""

    url: str
    concurrency: int = 8
    deadline_s: float = 30.0
    timeout_s: float = 20.0
    retries: int = 2
    backoff_s: float = 0.25
    api_key: str = ""

    @classmethod
    def from_options(cls, url: str, options: dict[str, Any]) -> EndpointConfig:
        """Options override ``RLHUB_JUDGE_*`` variables, which override the defaults."""
        if not url.startswith(("http://", "https://")):
            raise JudgeUnavailable(f"judge endpoint: expected a URL starting with http:// or "
                                   f"https:// (the API root, e.g. http://127.0.0.1:8000/v1), "
                                   f"found {url!r}")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in ("url", "api_key"):
                continue
            raw = options.get(f.name, os.environ.get(ENV.get(f.name, ""), None))
            if raw is not None:
                values[f.name] = type(getattr(cls, f.name))(raw)
        key_env = str(options.get("api_key_env", "RLHUB_JUDGE_API_KEY"))
        return cls(url=url.rstrip("/"), api_key=os.environ.get(key_env, ""), **values)


# -- metrics ---------------------------------------------------------------------------------


class JudgeStats:
    """Thread-safe counters per endpoint: requests by outcome, latency, failsafes, cache use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str], int] = {}
        self.latency: dict[str, list[float]] = {}  # url -> [count, total seconds, max seconds]
        self.failsafe: dict[str, int] = {}
        self.cache: dict[str, int] = {"hit": 0, "miss": 0}
        self.in_flight: dict[str, int] = {}

    def request(self, url: str, outcome: str, seconds: float) -> None:
        with self._lock:
            self.requests[(url, outcome)] = self.requests.get((url, outcome), 0) + 1
            count, total, worst = self.latency.get(url, [0, 0.0, 0.0])
            self.latency[url] = [count + 1, total + seconds, max(worst, seconds)]
        _prometheus().request(url, outcome, seconds)

    def failed(self, url: str) -> None:
        with self._lock:
            self.failsafe[url] = self.failsafe.get(url, 0) + 1
        _prometheus().failsafe(url)

    def cached(self, hit: bool) -> None:
        with self._lock:
            self.cache["hit" if hit else "miss"] += 1
        _prometheus().cache(hit)

    def flight(self, url: str, delta: int) -> None:
        with self._lock:
            self.in_flight[url] = self.in_flight.get(url, 0) + delta
        _prometheus().flight(url, delta)

    def snapshot(self) -> dict[str, Any]:
        """A JSON-ready copy: ``{endpoints: {url: {...}}, cache: {hit, miss}}``."""
        with self._lock:
            out: dict[str, Any] = {}
            for (url, outcome), n in self.requests.items():
                out.setdefault(url, {"requests": {}})["requests"][outcome] = n
            for url, (count, total, worst) in self.latency.items():
                out[url].update(latency_mean_s=total / count, latency_max_s=worst)
            for url, n in self.failsafe.items():
                out.setdefault(url, {"requests": {}})["failsafe"] = n
            return {"endpoints": out, "cache": dict(self.cache)}


class _Prometheus:
    """The prometheus_client mirror of :class:`JudgeStats`; a no-op when it is not installed."""

    def __init__(self) -> None:
        try:
            import prometheus_client as prom
        except ImportError:
            self.enabled = False
            return
        self.enabled = True
        self.latency = prom.Histogram(
            "rlhub_judge_request_seconds", "Latency of one judge request, by endpoint.",
            ["endpoint"], buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
        self.requests = prom.Counter("rlhub_judge_requests_total",
                                     "Judge requests by endpoint and outcome.",
                                     ["endpoint", "outcome"])
        self.failsafes = prom.Counter("rlhub_judge_failsafe_total",
                                      "Judgements that ended in the failsafe.", ["endpoint"])
        self.caches = prom.Counter("rlhub_judge_cache_total", "Judge cache lookups.", ["result"])
        self.in_flight = prom.Gauge("rlhub_judge_in_flight", "Judge requests in flight.",
                                    ["endpoint"])

    def request(self, url: str, outcome: str, seconds: float) -> None:
        if self.enabled:
            self.latency.labels(url).observe(seconds)
            self.requests.labels(url, outcome).inc()

    def failsafe(self, url: str) -> None:
        if self.enabled:
            self.failsafes.labels(url).inc()

    def cache(self, hit: bool) -> None:
        if self.enabled:
            self.caches.labels("hit" if hit else "miss").inc()

    def flight(self, url: str, delta: int) -> None:
        if self.enabled:
            self.in_flight.labels(url).inc(delta)


STATS = JudgeStats()
_PROM: _Prometheus | None = None
_PROM_LOCK = threading.Lock()


def _prometheus() -> _Prometheus:
    """The process's one set of Prometheus judge metrics (registered once, on first use)."""
    global _PROM
    with _PROM_LOCK:
        if _PROM is None:
            _PROM = _Prometheus()
        return _PROM


def judge_scalars() -> dict[str, float]:
    """Scalars for TensorBoard, e.g. ``judge/127.0.0.1:8000/latency_mean_s``.

    The hook the run monitor reads at each flush (``writer.add_scalar(tag, value, step)`` for every
    item). Counts are cumulative since the process started.
    """
    snap = STATS.snapshot()
    out: dict[str, float] = {"judge/cache/hit": snap["cache"]["hit"],
                             "judge/cache/miss": snap["cache"]["miss"]}
    for url, data in snap["endpoints"].items():
        name = url.split("://", 1)[-1].split("/", 1)[0]
        for outcome, n in data.get("requests", {}).items():
            out[f"judge/{name}/requests/{outcome}"] = float(n)
        for key in ("latency_mean_s", "latency_max_s", "failsafe"):
            if key in data:
                out[f"judge/{name}/{key}"] = float(data[key])
    return out


# -- the endpoint ----------------------------------------------------------------------------


class _Retry(Exception):
    """One attempt failed in a way worth another try; ``outcome`` names how."""

    def __init__(self, outcome: str, message: str):
        super().__init__(message)
        self.outcome = outcome


class JudgeEndpoint:
    """One OpenAI-compatible endpoint with its limits; see the module docstring.

    Thread-safe: rlhub's server and the rollout loop call verifiers from thread pools. The
    ``httpx.Client`` is created per process (a forked worker builds its own).
    """

    def __init__(self, config: EndpointConfig, slots: tuple[threading.BoundedSemaphore, int]
                 | None = None):
        self.config = config
        self.url = config.url
        limit = max(1, config.concurrency)
        self._slots, self.limit = slots or (threading.BoundedSemaphore(limit), limit)
        self._client: Any = None
        self._pid = 0
        self._lock = threading.Lock()

    def client(self) -> Any:
        with self._lock:
            if self._client is None or self._pid != os.getpid():
                try:
                    import httpx
                except ImportError as exc:
                    raise JudgeUnavailable("judge: expected httpx to be installed, found none; "
                                           "pip install 'rlhub[judge]'") from exc

                n = max(1, self.config.concurrency)
                key = self.config.api_key
                headers = {"Authorization": f"Bearer {key}"} if key else {}
                self._client = httpx.Client(headers=headers, limits=httpx.Limits(
                    max_connections=n, max_keepalive_connections=n))
                self._pid = os.getpid()
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None and self._pid == os.getpid():
                self._client.close()
            self._client = None

    def complete(self, body: dict[str, Any], parse: Callable[[str], T], *,
                 deadline: float | None = None) -> T:
        """POST ``body`` to ``/chat/completions`` and ``parse`` the reply text, within limits.

        ``deadline`` is a ``time.monotonic()`` instant (default: now + ``deadline_s``). Raises
        :class:`JudgeTimeout` when it passes, :class:`JudgeUnavailable` when attempts run out,
        :class:`JudgeError` for a non-retryable HTTP status.
        """
        deadline = deadline if deadline is not None else time.monotonic() + self.config.deadline_s
        last = "no attempt was made"
        for attempt in range(self.config.retries + 1):
            if attempt:
                self._backoff(attempt, deadline, last)
            try:
                text, seconds = self._attempt(body, deadline)
            except _Retry as exc:
                last = str(exc)
                continue
            try:
                value = parse(text)
            except JudgeMalformed as exc:
                STATS.request(self.url, "malformed", seconds)
                last = f"malformed judge output: {exc}"
                continue
            STATS.request(self.url, "ok", seconds)
            return value
        raise JudgeUnavailable(f"judge {self.url}: {self.config.retries + 1} attempts failed; "
                               f"last: {last}")

    def _backoff(self, attempt: int, deadline: float, last: str) -> None:
        delay = min(MAX_BACKOFF_S, self.config.backoff_s * 2 ** (attempt - 1))
        delay *= 0.5 + random.random() / 2
        if time.monotonic() + delay >= deadline:
            raise JudgeTimeout(f"judge {self.url}: deadline of {self.config.deadline_s:g} s "
                               f"reached after {attempt} attempts; last: {last}")
        time.sleep(delay)

    def _attempt(self, body: dict[str, Any], deadline: float) -> tuple[str, float]:
        """One request under a concurrency slot: ``(reply text, seconds)``, or ``_Retry``."""
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not self._slots.acquire(timeout=remaining):
            raise JudgeTimeout(f"judge {self.url}: no free slot among "
                               f"{self.limit} before the deadline of "
                               f"{self.config.deadline_s:g} s")
        STATS.flight(self.url, +1)
        start = time.perf_counter()
        try:
            return self._post(body, min(self.config.timeout_s, deadline - time.monotonic()), start)
        finally:
            STATS.flight(self.url, -1)
            self._slots.release()

    def _post(self, body: dict[str, Any], timeout: float, start: float) -> tuple[str, float]:
        import httpx

        def done(outcome: str) -> float:
            seconds = time.perf_counter() - start
            STATS.request(self.url, outcome, seconds)
            return seconds

        try:
            resp = self.client().post(f"{self.url}/chat/completions", json=body,
                                      timeout=max(0.001, timeout))
        except httpx.TimeoutException as exc:
            raise _Retry("timeout", f"no reply within {done('timeout'):.2f} s ({exc!r})") from exc
        except httpx.HTTPError as exc:
            done("connect_error")
            raise _Retry("connect_error", f"{type(exc).__name__}: {exc}") from exc
        if resp.status_code in RETRY_STATUS:
            done("http_error")
            raise _Retry("http_error", f"HTTP {resp.status_code}: {resp.text[:200]}")
        if resp.status_code >= 400:
            done("http_error")
            raise JudgeError(f"judge {self.url}: HTTP {resp.status_code} (not retried): "
                             f"{resp.text[:300]}")
        seconds = time.perf_counter() - start
        try:
            return reply_text(resp), seconds
        except JudgeMalformed as exc:
            STATS.request(self.url, "malformed", seconds)
            raise _Retry("malformed", f"malformed judge response: {exc}") from exc


def reply_text(resp: Any) -> str:
    """The first choice's message content of a chat-completions response."""
    try:
        content = resp.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise JudgeMalformed(f"expected an OpenAI chat-completions response with "
                             f"choices[0].message.content, found {resp.text[:200]!r}") from exc
    if not isinstance(content, str):
        raise JudgeMalformed(f"expected message content as a string, "
                             f"found {type(content).__name__}")
    return content


# -- the cache -------------------------------------------------------------------------------


def cache_key(*parts: Any) -> str:
    """A digest of JSON-serialisable parts: (endpoint, model, options, domain, source, prompt,
    ...)."""
    blob = json.dumps(parts, sort_keys=True, default=repr, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class JudgeCache:
    """A thread-safe LRU of judgements with single-flight; failures are never cached."""

    def __init__(self, max_entries: int = 65536):
        self.max_entries = max_entries
        self._data: OrderedDict[str, Any] = OrderedDict()
        self._pending: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def get_or_compute(self, key: str, compute: Callable[[], T], *, timeout: float) -> T:
        """The cached value of ``key``, or ``compute()`` (run once across concurrent callers)."""
        while True:
            with self._lock:
                if key in self._data:
                    self._data.move_to_end(key)
                    STATS.cached(True)
                    return self._data[key]  # type: ignore[no-any-return]
                event = self._pending.get(key)
                if event is None:
                    self._pending[key] = threading.Event()
                    break
            if not event.wait(timeout):  # the leader is still at it; do our own call
                STATS.cached(False)
                return compute()
            # the leader finished: loop to find its value, or take the lead if it failed
        STATS.cached(False)
        try:
            value = compute()
            with self._lock:
                self._data[key] = value
                while len(self._data) > self.max_entries:
                    self._data.popitem(last=False)
            return value
        finally:
            with self._lock:
                self._pending.pop(key).set()

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


class JudgeEndpoints:
    """The judge endpoints of one :class:`rlhub.services.Services` and the judgement cache they
    share; two of them share nothing (but the process's metrics, :data:`STATS`).

    :meth:`endpoint` hands out one endpoint per full configuration (URL, key, timeouts,
    retries), so no caller is answered under another's key or limits; every endpoint of one URL
    shares its requests in flight, whose number the URL's first caller fixes."""

    def __init__(self, cache_entries: int = 65536):
        self.cache = JudgeCache(cache_entries)
        self._endpoints: dict[EndpointConfig, JudgeEndpoint] = {}
        self._slots: dict[str, tuple[threading.BoundedSemaphore, int]] = {}
        self._warned: set[EndpointConfig] = set()
        self._lock = threading.Lock()

    def endpoint(self, url: str, options: dict[str, Any] | None = None) -> JudgeEndpoint:
        """The endpoint for ``url`` with ``options`` (see the class docstring)."""
        config = EndpointConfig.from_options(url, options or {})
        limit = max(1, config.concurrency)
        with self._lock:
            existing = self._endpoints.get(config)
            if existing is None:
                slots = self._slots.setdefault(config.url, (threading.BoundedSemaphore(limit),
                                                            limit))
                if slots[1] != limit and config not in self._warned:
                    self._warned.add(config)
                    log.warning("judge endpoint %s already allows %d requests in flight; "
                                "ignoring the concurrency %d another verifier asked for",
                                config.url, slots[1], config.concurrency)
                self._endpoints[config] = existing = JudgeEndpoint(config, slots)
            return existing

    def close(self) -> None:
        """Close and forget every endpoint and empty the cache."""
        with self._lock:
            for ep in self._endpoints.values():
                ep.close()
            self._endpoints.clear()
            self._slots.clear()
        self.cache.clear()
