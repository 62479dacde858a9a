"""The episode driver and its turn limit: one done rule, one trajectory, for every caller."""

from __future__ import annotations

import asyncio

import pytest
import toyplug

from rlhub import Domain, Episode, Manifest, SandboxError, Score, StepResult, Task, Verdict
from rlhub.episodes import EpisodeDriver, StepRewards, TimeLimit, open_episode
from rlhub.integrations.server.pool import EpisodeRunner
from rlhub.rollout import Rollout, RolloutJob


def make(check, turns=(3, 0.5), reward=(0, 1), episode=None):
    class D(Domain):
        def generate(self, rng, split, index):
            return {"prompt": "p", "answer": "a"}

        def start(self, task):
            return episode(self, task) if episode else Episode(self, task)

    D.check = lambda self, task, completion: check(completion)
    manifest = toyplug.manifest("d", turns={"max_turns": turns[0], "repair_discount": turns[1]},
                                reward={"range": list(reward),
                                        "components": {"correct": {"weight": 1.0}}})
    return D(Manifest.parse(manifest, plugin="toy"))


def right_is(answer):
    return lambda c: Verdict({"correct": float(c == answer)}, c == answer, "try again")


def play(domain, completions):
    """The driver's trajectory for ``completions``, stepped in order until it is done."""
    driver = EpisodeDriver(domain, domain.task("train", 0, 0))
    assert driver.open()
    for completion in completions:
        if driver.done:
            break
        driver.step(driver.turn(completion))
    driver.close()
    return driver, driver.finish()


class Chatty:
    """An episode that never ends by itself: every answer is wrong and gets an observation."""

    def __init__(self, domain, task):
        self.steps = 0
        self.closed = 0

    def step(self, completion):
        self.steps += 1
        return StepResult(f"obs {self.steps}", Score(0.25, {"correct": 0.25}, failure="answer"),
                          False)

    def close(self):
        self.closed += 1


def test_the_turn_limit_truncates_an_episode_that_would_go_on():
    limited = TimeLimit(Chatty(None, None), 2)
    first = limited.step("a")
    assert (first.done, first.truncated, first.observation) == (False, False, "obs 1")
    last = limited.step("b")
    assert (last.done, last.truncated, last.observation) == (True, True, None)
    assert last.score.reward == 0.25 and last.score.failure == "answer"


def test_an_episode_that_ends_itself_on_the_last_turn_is_not_truncated():
    domain = make(right_is("a"), turns=(2, 0.5))
    episode = open_episode(domain, domain.task("train", 0, 0))
    assert not episode.step("wrong").done
    last = episode.step("a")
    assert last.done and last.score.passed and not last.truncated


def test_the_turn_limit_needs_at_least_one_turn():
    with pytest.raises(ValueError, match="expected max_turns >= 1, found 0"):
        TimeLimit(Chatty(None, None), 0)


def test_the_turn_limit_closes_the_episode_it_wraps_and_forwards_its_attributes():
    inner = Chatty(None, None)
    limited = TimeLimit(inner, 3)
    limited.step("x")
    limited.close()
    assert (inner.closed, limited.steps) == (1, 1)


def test_running_out_of_turns_is_the_models_failure_to_answer_not_a_fault():
    driver, traj = play(make(right_is("a"), turns=(2, 0.5)), ["wrong", "still wrong", "a"])
    assert driver.truncated and len(traj.turns) == 2
    assert traj.turns[0].observation.startswith("Your answer did not pass.")
    assert traj.turns[-1].observation is None
    assert (traj.status, traj.failure, traj.passed, traj.reward) == ("failed", "answer",
                                                                     False, 0.0)


def test_a_repaired_pass_is_discounted_once_per_failed_attempt():
    driver, traj = play(make(right_is("a"), turns=(3, 0.5), reward=(-1, 1)), ["x", "y", "a"])
    assert not driver.truncated
    assert (traj.status, traj.failure, traj.first_pass_attempt) == ("passed", "none", 2)
    assert traj.reward == -1 + 2 * 0.5 ** 2


class CrashesOnTurnTwo(Episode):
    def step(self, completion):
        if self.turn == 1:
            raise SandboxError("the worker pool is gone")
        return super().step(completion)


def test_a_crash_mid_episode_ends_it_with_its_failure_class_not_as_the_models_zero():
    domain = make(right_is("a"), episode=CrashesOnTurnTwo)
    driver, traj = play(domain, ["wrong", "a", "a"])
    assert driver.done and not driver.truncated and len(traj.turns) == 2
    crashed = traj.turns[-1]
    assert (crashed.status, crashed.score.failure) == ("env_error", "sandbox")
    assert crashed.score.error == "step() raised SandboxError: the worker pool is gone"
    assert (traj.status, traj.failure, traj.passed) == ("env_error", "sandbox", False)


def test_the_server_ends_a_crashed_episode_at_the_minimum_with_the_same_class():
    domain = make(right_is("a"), episode=CrashesOnTurnTwo, reward=(-1, 1))
    runner = EpisodeRunner(domain, domain.task("train", 0, 0))
    first = runner.step("wrong")
    crashed = runner.step("a")
    assert (first["done"], crashed["done"]) == (False, True)
    assert crashed["info"]["score"]["failure"] == "sandbox"
    assert first["reward"] + crashed["reward"] == crashed["info"]["return"] == -1.0
    with pytest.raises(RuntimeError, match="the episode is done"):
        runner.step("a")


def test_a_start_that_raises_ends_the_trajectory_with_the_class_it_names():
    def broken(domain, task):
        raise SandboxError("no image")

    driver = EpisodeDriver(make(right_is("a"), episode=broken), Task("t", "toy/d-v1", "p"))
    assert not driver.open() and driver.done
    assert isinstance(driver.start_error, SandboxError)
    traj = driver.finish()
    assert (traj.status, traj.failure, traj.turns) == ("env_error", "sandbox", [])
    assert traj.error == "start() raised SandboxError: no image"


def test_the_rollout_loop_and_the_server_stop_a_chatty_episode_at_the_same_turn():
    domain = make(right_is("a"), turns=(3, 0.5), episode=Chatty)

    class Wrong:
        async def generate(self, conversations, **_):
            return ["wrong" for _ in conversations]

    job = RolloutJob(domain, domain.task("train", 0, 0))
    traj = asyncio.run(Rollout(Wrong(), job, {}).run())
    runner = EpisodeRunner(domain, domain.task("train", 0, 0))
    answers = [runner.step("wrong") for _ in range(3)]
    assert len(traj.turns) == 3 and [a["done"] for a in answers] == [False, False, True]
    assert traj.turns[-1].observation is None and answers[-1]["observation"] is None
    assert traj.reward == answers[-1]["info"]["return"] == 0.25 * 0.5 ** 2
    assert sum(a["reward"] for a in answers) == traj.reward


def test_step_rewards_always_sum_to_the_return():
    rewards = StepRewards()
    steps = [rewards.reward(v) for v in (0.0, 0.5, 0.25, 1.0)]
    assert steps == [0.0, 0.5, -0.25, 0.75] and sum(steps) == 1.0
