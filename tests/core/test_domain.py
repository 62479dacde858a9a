"""Domain.verify weights and clamps components and never raises; sampling is seeded."""

from __future__ import annotations

import math

import toyplug

from rlhub import Domain, Manifest, Task, Verdict


def make(check, **manifest):
    class D(Domain):
        def generate(self, rng, split, index):
            return {"prompt": "p", "answer": rng.randrange(10**6)}

    D.check = lambda self, task, completion: check(task, completion)
    raw = toyplug.manifest("d", **manifest)
    return D(Manifest.parse(raw, plugin="toy"))


TWO = {"range": [0, 1], "components": {"a": {"weight": 0.25}, "b": {"weight": 0.75},
                                       "log": {"weight": 0.0}}}


def test_the_reward_is_the_declared_weighted_sum_of_components():
    d = make(lambda t, c: Verdict({"a": 1.0, "b": 0.5, "log": 1.0}, False), reward=TWO)
    score = d.verify(d.task("train", 0, 0), "x")
    assert math.isclose(score.reward, 0.25 + 0.375)
    assert score.components == {"a": 1.0, "b": 0.5, "log": 1.0}


def test_components_are_clamped_and_missing_ones_are_zero():
    d = make(lambda t, c: Verdict({"a": 7.0, "b": float("nan")}, True), reward=TWO)
    score = d.verify(d.task("train", 0, 0), "x")
    assert score.components == {"a": 1.0, "b": 0.0, "log": 0.0}
    assert score.reward == 0.25 and score.passed


def test_a_crashing_verifier_becomes_minimum_reward_with_an_error():
    def boom(task, completion):
        raise ZeroDivisionError("division by zero")

    score = make(boom).verify(Task("t", "toy/d-v1", "p"), "x")
    assert (score.reward, score.passed) == (0.0, False)
    assert score.error == "ZeroDivisionError: division by zero"


def test_a_non_string_completion_is_recorded_not_raised():
    score = make(lambda t, c: Verdict({}, True)).verify(Task("t", "toy/d-v1", "p"), None)
    assert score.error == "TypeError: expected the completion as str, found NoneType"


def test_sampling_is_a_function_of_version_split_seed_and_index():
    d = make(lambda t, c: Verdict({}, False))
    assert d.task("train", 3, 5) == d.task("train", 3, 5)
    others = {d.task("test", 3, 5).answer, d.task("train", 4, 5).answer, d.task("train", 3, 6).answer}
    assert d.task("train", 3, 5).answer not in others
    bumped = make(lambda t, c: Verdict({}, False), version="1.0.1")
    assert bumped.task("train", 3, 5).answer != d.task("train", 3, 5).answer


def test_an_unknown_split_is_refused_with_the_known_ones():
    d = make(lambda t, c: Verdict({}, False))
    try:
        d.task("validation", 0, 0)
    except ValueError as exc:
        assert str(exc) == ("domain 'toy/d-v1': expected a split in ['train', 'test'], "
                            "found 'validation'")
    else:
        raise AssertionError("expected ValueError")


def test_the_default_episode_repairs_until_a_pass_or_max_turns():
    answers = iter(["wrong", "right"])
    d = make(lambda t, c: Verdict({"correct": float(c == "right")}, c == "right", "try again"),
             turns={"max_turns": 3, "repair_discount": 0.5})
    episode = d.start(Task("t", "toy/d-v1", "p"))
    first = episode.step(next(answers))
    assert not first.done and "try again" in first.observation
    second = episode.step(next(answers))
    assert second.done and second.score.passed and second.observation is None
