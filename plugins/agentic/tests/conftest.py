"""Shared helpers for the agentic tests: build domains and drive episodes with scripted policies."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import rlhub
from rlhub import StepResult

Policy = Callable[[list[str]], str]


def drive(domain, task, policy: Policy) -> list[StepResult]:
    """Run one episode: ``policy(observations so far)`` gives each completion, until done.

    Checks the invariant ``rlhub reverify`` relies on: the final reward equals
    ``domain.verify(task, final_completion).reward``.
    """
    episode = domain.start(task)
    observations = [task.prompt_text()]
    results: list[StepResult] = []
    for _ in range(domain.manifest.max_turns):
        completion = policy(observations)
        result = episode.step(completion)
        results.append(result)
        if result.done:
            assert result.observation is None
            assert result.score.reward == domain.verify(task, completion).reward
            return results
        assert isinstance(result.observation, str) and result.observation
        observations.append(result.observation)
    raise AssertionError(f"episode of {domain.id} not done after max_turns")


@pytest.fixture
def domain() -> Callable[[str], rlhub.Domain]:
    return lambda name: rlhub.registry().get(f"agentic/{name}-v2")


@pytest.fixture
def play() -> Callable[..., list[StepResult]]:
    return drive


@pytest.fixture
def scripted() -> Callable[[list[str]], Policy]:
    """A policy that replays a fixed list of completions."""
    def make(completions: list[str]) -> Policy:
        return lambda observations: completions[len(observations) - 1]
    return make
