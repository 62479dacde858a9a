"""pytest plugin shipped with rlhub (entry point ``pytest11``): fixtures for plugin authors.

* ``rlhub_registry(plugins=[...], domain_files=[...], sandbox=...)`` builds an isolated registry
  (no autoloaded plugins unless ``autoload=True``) for the test to pass to what it tests; its
  sandbox backends stop after the test.
* ``rlhub_sandbox(handler)`` makes a sandbox double whose ``run`` calls ``handler(request)`` and
  returns its ExecResult; pass it as a registry's default backend
  (``rlhub_registry(sandbox=double)``), the way httpx takes a ``MockTransport``.
* ``RLHUB_REQUIRE`` turns skips into failures: ``all`` fails every skipped test (CI, where a
  missing Docker engine, Ray, OpenRLHF, chromium or moto must not pass as "skipped"), a
  comma-separated list of words fails the skips whose reason names one (``docker,chromium``).
  Without it a run that skipped anything ends with one line saying what was skipped and why.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

REQUIRE_ENV = "RLHUB_REQUIRE"


def required(reason: str) -> bool:
    """True when ``RLHUB_REQUIRE`` makes a skip for ``reason`` a failure."""
    words = [w.strip().lower() for w in os.environ.get(REQUIRE_ENV, "").split(",") if w.strip()]
    return "all" in words or any(w in reason.lower() for w in words)


def skip_reason(report: Any) -> str:
    """The reason of a skipped test or collector report."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(reason).removeprefix("Skipped: ")


def _enforce(report: Any) -> None:
    if report.skipped and not hasattr(report, "wasxfail") and required(skip_reason(report)):
        reason = skip_reason(report)
        report.outcome = "failed"
        report.longrepr = (f"{REQUIRE_ENV}={os.environ.get(REQUIRE_ENV)} requires what this "
                           f"test would have skipped for: {reason}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Iterator[None]:
    outcome = yield
    _enforce(outcome.get_result())  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: Any) -> Iterator[None]:
    outcome = yield
    _enforce(outcome.get_result())  # type: ignore[attr-defined]


def skip_summary(reasons: Sequence[str]) -> str:
    """One line: how many tests were skipped, for which reasons, and how to make that fail."""
    counts = Counter(r.split(";")[0].strip()[:70] for r in reasons)
    parts = ", ".join(f"{n} x {why}" for why, n in counts.most_common())
    return (f"rlhub: {len(reasons)} skipped for what this machine lacks ({parts}); "
            f"{REQUIRE_ENV}=all (as .ci/run sets) makes such skips fail")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    reasons = [skip_reason(r) for r in terminalreporter.stats.get("skipped", [])]
    if reasons:
        terminalreporter.write_line(skip_summary(reasons), yellow=True, bold=True)


@pytest.fixture
def rlhub_registry() -> Iterator[Callable[..., Any]]:
    from rlhub.plugins import Registry

    made: list[Registry] = []

    def make(*, plugins: Sequence[object] = (), domain_files: Sequence[Any] = (),
             autoload: bool = False, block: Sequence[str] = (), sandbox: Any = None) -> Registry:
        made.append(Registry(plugins=plugins, domain_files=domain_files, autoload=autoload,
                             block=block, sandbox=sandbox))
        return made[-1]

    yield make
    for reg in made:
        reg.services.close()


class SandboxDouble:
    """A sandbox backend that answers with a handler function (httpx MockTransport style)."""

    name = "double"

    def __init__(self, handler: Callable[[Any], Any]):
        self.handler = handler
        self.requests: list[Any] = []
        self.closed = False

    def run(self, request: Any) -> Any:
        self.requests.append(request)
        return self.handler(request)

    async def run_batch(self, requests: Sequence[Any]) -> list[Any]:
        return [await asyncio.to_thread(self.run, r) for r in requests]

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "active": [], "missing": ["everything: this is a test double"]}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def rlhub_sandbox() -> Callable[[Callable[[Any], Any]], SandboxDouble]:
    return SandboxDouble
