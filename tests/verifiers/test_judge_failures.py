"""Failure injection: a down, slow, malformed or flaky judge never stalls and is always recorded."""

from __future__ import annotations

import time

import rlhub
from rlhub.domain import Domain
from rlhub.manifest import Manifest
from rlhub.testing.judge_server import down_url
from rlhub.verifiers import endpoints

REG = rlhub.registry()


class Judged(Domain):
    """A one-task domain whose manifest names the judge under test."""


def domain(options: dict, *, lo: float = 0.0) -> Judged:
    manifest = Manifest.parse({
        "id": "toy/judged-v1", "version": "1", "summary": "judged", "license": "MIT",
        "tags": ["judge"], "factory": "x:y", "verifier": {"name": "judge", "options": options},
        "reward": {"range": [lo, 1], "components": {"judge": {"weight": 1.0}}}}, plugin="toy")
    judged = Judged(manifest)
    judged.registry = REG
    return judged


def test_a_down_judge_scores_the_minimum_with_the_error_recorded_quickly(task, options):
    d = domain(options(down_url(), retries=2), lo=-1.0)
    start = time.perf_counter()
    score = d.verify(task, task.answer)
    assert time.perf_counter() - start < 15  # refused at once: no timeout is waited out
    assert score.reward == -1.0 and not score.passed
    assert score.error.startswith("JudgeUnavailable: judge http://127.0.0.1:")
    assert "3 attempts failed; last: ConnectError" in score.error


def test_a_slow_judge_is_cut_off_at_the_deadline(judge, task, options):
    server = judge("slow", delay_s=30.0)
    d = domain(options(server.url, deadline_s=1.0, timeout_s=4.0, retries=3))
    start = time.perf_counter()
    score = d.verify(task, task.answer)
    elapsed = time.perf_counter() - start
    # Without the deadline: 4 attempts x 4 s; with it, 1 s plus what a loaded machine adds.
    assert elapsed < 8.0, f"the judgement took {elapsed:.2f} s past a 1 s deadline"
    assert score.reward == 0.0 and score.error.startswith("JudgeTimeout: judge ")
    assert "deadline of 1 s" in score.error and "no reply within" in score.error


def test_malformed_output_is_retried_then_fails_safe(judge, task, options):
    server = judge("malformed")
    score = domain(options(server.url, retries=2)).verify(task, task.answer)
    assert server.judge_calls == 3
    assert score.reward == 0.0
    assert "malformed judge output: expected a JSON object" in score.error


def test_a_configured_fallback_replaces_the_minimum_and_keeps_the_error(judge, task, options):
    server = judge("malformed")
    score = domain(options(server.url, retries=0, fallback=0.4)).verify(task, task.answer)
    assert score.reward == 0.4 and not score.passed
    assert score.error.startswith("JudgeUnavailable: ") and score.error.endswith(
        "(fallback 0.4 used)")


def test_transient_server_errors_are_retried_with_backoff_until_the_judge_answers(
        judge, task, options):
    server = judge("flaky", fail_first=2)
    score = domain(options(server.url, retries=2)).verify(task, task.answer)
    assert server.judge_calls == 3 and score.reward == 1.0 and score.error is None


def test_a_missing_endpoint_names_the_options_and_variables_to_set(task, options, monkeypatch):
    monkeypatch.delenv("RLHUB_JUDGE_URL", raising=False)
    opts = options("")
    del opts["url"]
    score = domain(opts).verify(task, task.answer)
    assert score.reward == 0.0
    assert score.error.startswith("JudgeUnavailable: judge: no endpoint configured: expected "
                                  "options.endpoint naming a judge of your config's endpoints:, "
                                  "RLHUB_JUDGE_URL")


def test_failures_are_counted_for_the_metrics(judge, task, options):
    server = judge("malformed")
    before = endpoints.STATS.snapshot()["endpoints"].get(server.url, {})
    REG.services.verifier("judge", options(server.url, retries=1, fallback=0.0)).check(task, "x")
    after = endpoints.STATS.snapshot()["endpoints"][server.url]
    assert after["requests"]["malformed"] - before.get("requests", {}).get("malformed", 0) == 2
    assert after["failsafe"] - before.get("failsafe", 0) == 1
