"""Prometheus metrics of ``rlhub serve`` (``GET /metrics``), in a registry of their own.

Names (all prefixed ``rlhub_``): ``requests_total{endpoint,status}``,
``request_seconds{endpoint}``, ``verifications_total{domain,outcome}`` (outcome ``passed``,
``failed`` or ``error``), ``verify_seconds{domain}``, ``verifier_errors_total{domain,kind}``
(kind ``label``, ``prompt_mismatch``, ``verifier``, ``timeout``),
``infra_retries_total{domain,failure}`` (verifications repeated after a sandbox, verifier or
judge failure), ``queue_waiting`` (requests
parked before admission), ``queue_inflight`` (admitted, waiting for or using the pool),
``episodes_open`` and ``episodes_expired_total``. Domain labels are the ids of registered domains
only (an unknown id counts as ``unknown``), so a client cannot blow up the label set.
"""

from __future__ import annotations

from typing import Any

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                   30.0, 60.0)


class Metrics:
    """The server's metric objects; ``render()`` gives the text exposition format."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("rlhub_requests_total", "HTTP requests by endpoint and status",
                                ["endpoint", "status"], registry=r)
        self.latency = Histogram("rlhub_request_seconds", "HTTP request latency", ["endpoint"],
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.verifications = Counter("rlhub_verifications_total", "Verified samples",
                                     ["domain", "outcome"], registry=r)
        self.verify_seconds = Histogram("rlhub_verify_seconds", "Verification time per sample",
                                        ["domain"], buckets=LATENCY_BUCKETS, registry=r)
        self.errors = Counter("rlhub_verifier_errors_total", "Samples that could not be verified",
                              ["domain", "kind"], registry=r)
        self.retries = Counter("rlhub_infra_retries_total", "Verifications repeated after an "
                               "infrastructure failure", ["domain", "failure"], registry=r)
        self.waiting = Gauge("rlhub_queue_waiting", "Requests parked before admission",
                             registry=r)
        self.inflight = Gauge("rlhub_queue_inflight", "Admitted requests not yet answered",
                              registry=r)
        self.episodes_open = Gauge("rlhub_episodes_open", "Open episodes", registry=r)
        self.episodes_expired = Counter("rlhub_episodes_expired_total",
                                        "Episodes removed by expiry or eviction", registry=r)
        self._series: dict[tuple[Any, ...], Any] = {}

    def render(self) -> tuple[bytes, str]:
        """The server's own metrics plus the process-wide default registry (judge endpoints)."""
        from prometheus_client import REGISTRY, CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry) + generate_latest(REGISTRY), CONTENT_TYPE_LATEST

    def series(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once per label set (every request counts into
        a few; the labels are the server's routes, statuses and registered domains, so few)."""
        found = self._series.get((metric, *labels))
        if found is None:
            found = self._series[metric, *labels] = metric.labels(*labels)
        return found

    def answered(self, endpoint: str, status: int, seconds: float) -> None:
        """Count one answered request of ``endpoint`` (its route's path) and its latency."""
        self.series(self.requests, endpoint, str(status)).inc()
        self.series(self.latency, endpoint).observe(seconds)

    def verified(self, domain: str, outcome: Any) -> None:
        """Count one verified sample (``outcome`` is a :class:`~rlhub.integrations.server.protocol.Outcome`)."""
        if outcome.error is not None:
            label = "error"
        else:
            label = "passed" if outcome.passed else "failed"
        self.series(self.verifications, domain, label).inc()
        self.series(self.verify_seconds, domain).observe(outcome.verify_ms / 1e3)
