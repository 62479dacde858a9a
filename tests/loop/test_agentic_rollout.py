"""Agentic episodes through the rollout loop: tool calls are turns but not repairs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rlhub
from rlhub.rollout import rollout


class Scripted:
    """A policy that answers with the given completions in order, one per turn."""

    def __init__(self, completions: list[str]):
        self.completions = list(completions)

    def info(self) -> dict[str, Any]:
        return {"spec": "scripted"}

    async def generate(self, messages_batch: list[list[dict[str, str]]], **sampling: Any) -> list[str]:
        return [self.completions.pop(0) for _ in messages_batch]


@pytest.fixture
def calculator():
    reg = rlhub.registry()
    if "agentic/calculator-v2" not in reg.ids():
        pytest.skip("the rlhub-agentic plugin is not installed")
    return reg.get("agentic/calculator-v2")


def test_a_tool_call_then_the_right_answer_earns_the_undiscounted_reward(calculator):
    task = calculator.task("test", 0, 0)
    traj = asyncio.run(rollout(Scripted(['<tool name="calculator">6*7</tool>', task.gold]),
                               calculator, task))
    assert len(traj.turns) == 2 and "42" in traj.turns[0].observation
    assert [t.attempt for t in traj.turns] == [False, True]
    assert traj.reward == 1.0 and traj.passed and traj.first_pass_attempt == 0


def test_a_wrong_answer_then_a_repair_is_discounted_once(calculator):
    task = calculator.task("test", 0, 1)
    traj = asyncio.run(rollout(Scripted(["<answer>-1</answer>", task.gold]), calculator, task))
    assert [t.score.passed for t in traj.turns] == [False, True]
    assert traj.reward == pytest.approx(calculator.manifest.repair_discount)
