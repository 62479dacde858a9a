"""The tiny domains: gold passes, near misses fail, splits are disjoint, lambdas run sandboxed."""

from __future__ import annotations

import pytest
import rlhub
from rlhub_math import catalog
from rlhub_math.tiny import GENERATORS, split_of

IDS = [catalog.tiny_id(task) for task in catalog.TINY]


def test_every_tiny_task_has_a_generator_and_a_registered_domain():
    assert set(catalog.TINY) == set(GENERATORS)
    assert set(IDS) <= set(rlhub.registry().ids())


@pytest.mark.parametrize("domain_id", IDS)
def test_gold_passes_and_the_echoed_prompt_fails(domain_id):
    domain = rlhub.registry().get(domain_id)
    for task in domain.sample(10, split="test", seed=3):
        assert domain.verify(task, task.gold).reward == 1.0, (task.prompt, task.gold)
        assert domain.verify(task, task.prompt).reward == 0.0, task.prompt


@pytest.mark.parametrize("domain_id", IDS)
def test_train_and_test_problems_are_disjoint(domain_id):
    domain = rlhub.registry().get(domain_id)
    train = {t.prompt for t in domain.sample(200, split="train", seed=0)}
    test = {t.prompt for t in domain.sample(60, split="test", seed=0)}
    assert not train & test
    assert all(split_of(p) == "test" for p in test)


def test_exact_answers_are_computed_from_the_prompt():
    registry = rlhub.registry()
    for task in registry.get("math/tiny-succ-v1").sample(50, seed=1):
        assert int(task.gold) == int(task.prompt.removesuffix("+1=")) + 1
    for task in registry.get("math/tiny-reverse-v1").sample(50, seed=1):
        assert task.gold == task.prompt.removeprefix("rev ")[::-1]
    for task in registry.get("math/tiny-count-v1").sample(50, seed=1):
        _, digit, _, digits = task.prompt.split()
        assert int(task.gold) == digits.count(digit)


def test_the_joint_mixtures_answers_are_computed_from_the_prompt():
    registry = rlhub.registry()

    def tasks(name):
        return registry.get(f"math/tiny-{name}-v1").sample(60, seed=2)

    for t in tasks("pred"):
        assert int(t.gold) == int(t.prompt.removesuffix("-1=")) - 1
    for t in tasks("add"):
        n, k = t.prompt.removesuffix("=").split("+")
        assert int(t.gold) == int(n) + int(k) and 2 <= int(k) <= 9
    for t in tasks("mirror"):
        assert t.gold == t.prompt.removeprefix("rev ")[::-1] and t.gold.isalpha()
    for t in tasks("rotate"):
        digits = t.prompt.removeprefix("rot ")
        assert t.gold == digits[1:] + digits[0]
    for name, op in (("times1", "*1="), ("times10", "*10=")):
        for t in tasks(name):
            assert int(t.gold) == int(t.prompt.removesuffix(op)) * int(op[1:-1])
    for t in tasks("neg"):
        assert t.gold == "-" + t.prompt[2:-2]
    for t in tasks("copy"):
        assert t.gold == t.prompt.removeprefix("copy ")
    for t in tasks("parity"):
        bits = t.prompt.removeprefix("parity ")
        assert len(bits) == 10 and int(t.gold) == bits.count("1") % 2
    for t in tasks("mod7"):
        assert int(t.gold) == int(t.prompt.removesuffix("%7=")) % 7
    for t in tasks("mul"):
        a, b = t.prompt.removesuffix("=").split("*")
        assert int(t.gold) == int(a) * int(b)


def test_the_interfering_pair_asks_the_same_prompts_and_pays_for_different_answers():
    import dataclasses
    import random

    for seed in range(50):  # one generator's prompts are the other's, draw for draw
        a = GENERATORS["pick-first"](random.Random(seed))
        b = GENERATORS["pick-last"](random.Random(seed))
        assert a[0] == b[0] and (a[1], b[1]) == (a[0][5], a[0][-1])
    registry = rlhub.registry()
    first = registry.get("math/tiny-pick-first-v1")
    last = registry.get("math/tiny-pick-last-v1")
    differ = [t for t in first.sample(40, seed=4) if t.gold != t.prompt[-1]]
    assert len(differ) > 20
    for task in differ:  # the last digit scores nothing under the first-digit convention
        assert first.verify(task, task.prompt[-1]).reward == 0.0
        twin = dataclasses.replace(task, domain=last.id, answer=task.prompt[-1],
                                   gold=task.prompt[-1])
        assert last.verify(twin, twin.gold).reward == 1.0
        assert last.verify(twin, task.gold).reward == 0.0


def test_a_lambda_with_the_wrong_constant_fails_its_hidden_tests_in_the_sandbox():
    domain = rlhub.registry().get("math/tiny-lambda-v1")
    task = domain.sample(1, seed=0)[0]
    wrong = task.gold[:-1] + str((int(task.gold[-1]) + 1) % 10)
    score = domain.verify(task, wrong)
    assert score.reward == 0.0 and score.exec is not None
    assert "tests failed" in score.feedback


def test_a_def_with_the_same_function_passes_and_invalid_python_never_reaches_the_sandbox():
    domain = rlhub.registry().get("math/tiny-lambda-v1")
    task = domain.sample(1, seed=0)[0]
    a, b = task.meta["a"], task.meta["b"]
    assert domain.verify(task, f"def f(x):\n    return {a} * x + ({b})\n").passed
    score = domain.verify(task, task.prompt)
    assert score.exec is None and "not valid Python" in score.feedback
