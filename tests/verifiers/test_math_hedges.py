"""The math verifier against one boxed answer naming several values: set and logic notation has
no place in an answer whose gold is a single value (math-verify reads whichever part is right)."""

from __future__ import annotations

import pytest

from rlhub import Task
from rlhub.verifiers.mathv import Math

OPERATORS = [r"\cup", r"\cap", r"\setminus", r"\sqcup", r"\uplus", r"\ominus", r"\lor", r"\land"]


def task(answer: str) -> Task:
    return Task("t-1", "math/x-v2", "Compute.", answer=answer, gold=f"\\boxed{{{answer}}}")


@pytest.fixture(scope="module")
def math() -> Math:
    return Math({})


@pytest.mark.parametrize("op", OPERATORS)
def test_a_value_joined_to_a_set_earns_nothing_with_the_right_value_first_or_last(math, op):
    for gold, other in (("21", "0"), ("0.98", "7")):
        for boxed in (f"{gold} {op} \\{{{other}\\}}", f"\\{{{other}\\}} {op} {gold}"):
            verdict = math.check(task(gold), f"\\boxed{{{boxed}}}")
            assert not verdict.passed and verdict.failure == "answer", boxed
            assert "set or logic notation" in verdict.feedback


@pytest.mark.parametrize("boxed", [r"21 + [7, 8]", r"[7, 8] + 21", r"21 \times \emptyset",
                                   r"\{21\}"])
def test_intervals_sets_and_the_empty_set_beside_a_single_value_earn_nothing(math, boxed):
    assert not math.check(task("21"), f"\\boxed{{{boxed}}}").passed


def test_a_gold_that_is_a_set_or_an_interval_keeps_its_notation(math):
    assert math.check(task(r"\{1, 2\}"), r"\boxed{\{2, 1\}}").passed
    assert math.check(task(r"(3, \infty)"), r"\boxed{(3, \infty)}").passed
    assert math.check(task("21"), r"\boxed{21}").passed
