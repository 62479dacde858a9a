"""Fixtures of the model-based verifier tests: scripted judge servers and a toy judged domain."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rlhub import Task
from rlhub.testing.judge_server import ScriptedJudge
import rlhub

REFERENCE = ("Plants capture sunlight with chlorophyll in their chloroplasts and use its energy to "
             "turn water and carbon dioxide into glucose, releasing oxygen.")
RUBRIC = {"version": "test-1", "criteria": {"correctness": "Facts are right.",
                                            "clarity": "Easy to follow."}}


@pytest.fixture
def judge() -> Iterator[Callable[..., ScriptedJudge]]:
    """Start a :class:`ScriptedJudge` (mode and options as arguments); stopped after the test."""
    started: list[ScriptedJudge] = []

    def start(mode: str = "good", **kwargs: Any) -> ScriptedJudge:
        server = ScriptedJudge(mode, **kwargs).start()
        started.append(server)
        return server

    yield start
    rlhub.registry().services.judge_endpoints.close()  # the tests' REG: forget the servers
    for server in started:
        server.stop()


@pytest.fixture
def task() -> Task:
    return Task("photo-1", "toy/explain-v1", "Explain photosynthesis in two sentences.",
                answer=REFERENCE, gold=REFERENCE,
                meta={"key_points": ["chlorophyll captures sunlight", "water and carbon dioxide",
                                     "glucose", "oxygen released"]})


@pytest.fixture
def options() -> Callable[..., dict[str, Any]]:
    """``options(url, **extra)``: a pointwise judge at ``url`` grading against the task's answer."""

    def make(url: str, **extra: Any) -> dict[str, Any]:
        return {"url": url, "model": "scripted-judge", "rubric": RUBRIC, "reference": "answer",
                "backoff_s": 0.01, **extra}

    return make
