"""The rollout loop: repair with discounting, kept components, and failures recorded as data."""

from __future__ import annotations

import asyncio
import math

import pytest

from rlhub.evaluate import EvalConfig, reverify, run_eval
from rlhub.rollout import Turn, final_reward, rollout
from rlhub.task import Score
from rlhub.store import TrajectoryStore

import loopplugin


def _one(reg, domain_id: str, spec: str, index: int = 0):
    domain = reg.get(domain_id)
    policy = loopplugin.Oracle(spec)
    task = domain.task("test", 0, index)
    return asyncio.run(rollout(policy, domain, task)), policy


def test_a_wrong_then_right_answer_earns_the_reward_discounted_once(reg) -> None:
    traj, policy = _one(reg, "looptest/reverse-v1", "wrong-first")
    assert [t.completion for t in traj.turns] == ["wrong", traj.task.answer]
    assert [t.score.passed for t in traj.turns] == [False, True]
    assert "expected the word reversed, found 'wrong'" in traj.turns[0].score.feedback
    assert traj.turns[1].messages[0]["role"] == "user"
    assert "expected the word reversed" in traj.turns[1].messages[0]["content"]
    assert traj.reward == pytest.approx(1.0 * 0.5 ** 1)
    assert traj.passed and traj.status == "passed" and traj.first_pass_attempt == 1
    assert policy.calls == 2


def test_a_right_first_answer_is_not_discounted_and_stops_the_episode(reg) -> None:
    traj, _ = _one(reg, "looptest/reverse-v1", "right")
    assert len(traj.turns) == 1 and traj.reward == 1.0 and traj.first_pass_attempt == 0


def test_the_reward_is_the_declared_weighted_sum_and_every_component_is_kept(reg) -> None:
    right, _ = _one(reg, "looptest/add-v1", "right")
    wrong, _ = _one(reg, "looptest/add-v1", "wrong-first")
    assert right.turns[0].score.components == {"correct": 1.0, "digits": 1.0}
    assert right.reward == pytest.approx(1.0)
    assert wrong.turns[0].score.components == {"correct": 0.0, "digits": 0.0}
    assert wrong.reward == 0.0 and wrong.status == "failed"


def test_discounting_moves_rewards_toward_the_range_minimum() -> None:
    turns = [Turn(0, [], "a", Score(-1.0)), Turn(1, [], "b", Score(1.0, passed=True))]
    reward, passed, first = final_reward(turns, lo=-1.0, discount=0.5)
    assert (reward, passed, first) == (0.0, True, 1)


def test_turns_marked_as_not_attempts_do_not_count_as_repairs() -> None:
    turns = [Turn(0, [], "tool call", attempt=False),
             Turn(1, [], "answer", Score(1.0, passed=True))]
    assert final_reward(turns, lo=0.0, discount=0.5) == (1.0, True, 0)


def test_a_verifier_crash_is_recorded_on_the_turn_and_scores_the_minimum(reg) -> None:
    traj, _ = _one(reg, "looptest/crashy-v1", "right", index=1)
    assert traj.turns[0].score.error == "RuntimeError: verifier exploded"
    assert traj.reward == 0.0 and traj.status == "failed"
    assert traj.error == "RuntimeError: verifier exploded"


def test_an_episode_that_raises_ends_the_trajectory_as_an_env_error(reg) -> None:
    traj, _ = _one(reg, "looptest/brokenenv-v1", "right")
    assert traj.status == "env_error" and "environment lost its state" in traj.error
    assert traj.reward == 0.0 and len(traj.turns) == 1


def test_a_verification_that_overruns_its_time_is_recorded_as_a_timeout(reg) -> None:
    traj, _ = _one(reg, "looptest/slow-v1", "right")
    assert traj.status == "verify_timeout" and traj.reward == 0.0
    # cut at the loop's deadline (3 x 0.1 s), not after the check's 3 s sleep
    assert 0.3 <= traj.turns[0].verify_s < 2.5


def test_a_failing_policy_is_recorded_as_a_policy_error(reg) -> None:
    class Dead:
        async def generate(self, batch, **kw):
            raise ConnectionError("endpoint is down")

    domain = reg.get("looptest/reverse-v1")
    traj = asyncio.run(rollout(Dead(), domain, domain.task("test", 0, 0)))
    assert traj.status == "policy_error" and "endpoint is down" in traj.error
    assert traj.turns[0].completion is None and traj.reward == 0.0


def test_garbage_output_is_stored_and_reverified_without_breaking_the_run(reg, tmp_path) -> None:
    cfg = EvalConfig(mixture={"domains": {"looptest/add-v1": {}, "looptest/reverse-v1": {}}},
                     policy="oracle:garbage", out=str(tmp_path / "run"), n=3, tensorboard=False)
    metrics = run_eval(cfg, registry=reg)
    rows = TrajectoryStore(cfg.out).rows()
    assert len(rows) == 6 and metrics["overall"]["pass@1"] == 0.0
    completion = rows[0]["turns"][0]["completion"]
    assert completion.startswith("\x00\x1b[31m?") and len(completion) > 100_000
    assert reverify(cfg.out, registry=reg) == {"checked": 6, "mismatches": []}


def test_eval_metrics_show_the_repair_gain_of_a_scripted_repair(reg, tmp_path) -> None:
    cfg = EvalConfig(mixture={"strategy": "uniform", "domains": {"looptest/reverse-v1": {},
                                                                 "looptest/add-v1": {}}},
                     policy="oracle:wrong-first", out=str(tmp_path / "run"), n=5, k=2,
                     flush_every=3, concurrency=4)
    metrics = run_eval(cfg, registry=reg)
    rev, add = metrics["domains"]["looptest/reverse-v1"], metrics["domains"]["looptest/add-v1"]
    assert (rev["first_try_pass@1"], rev["pass@1"], rev["repair_gain"]) == (0.0, 1.0, 1.0)
    assert rev["pass_by_attempt"] == [0.0, 1.0] and rev["reward_mean"] == pytest.approx(0.5)
    assert (add["pass@1"], add["pass@2"], add["turns_mean"]) == (0.0, 0.0, 1.0)
    rows = TrajectoryStore(cfg.out).rows()
    assert len(rows) == 20 and len({r["trajectory_id"] for r in rows}) == 20
    assert all(len(r["turns"]) == 2 for r in rows if r["domain"] == "looptest/reverse-v1")
    assert all(math.isfinite(r["reward"]) for r in rows)
    assert reverify(cfg.out, registry=reg) == {"checked": 20, "mismatches": []}


def test_eval_pass_rates_cover_the_models_outcomes_and_count_verifier_crashes_apart(reg, tmp_path):
    cfg = EvalConfig(mixture={"domains": {"looptest/crashy-v1": {}, "looptest/reverse-v1": {}}},
                     policy="oracle:right", out=str(tmp_path / "run"), n=6, k=2,
                     tensorboard=False)
    metrics = run_eval(cfg, registry=reg)
    crashy = metrics["domains"]["looptest/crashy-v1"]  # odd task indices crash the verifier
    assert (crashy["pass@1"], crashy["pass@2"], crashy["reward_mean"]) == (1.0, 1.0, 1.0)
    assert (crashy["n_samples"], crashy["n_scored"], crashy["infra_failures"]) == (12, 6, 6)
    assert crashy["failure_counts"] == {"none": 6, "verifier": 6}
    assert metrics["overall"]["pass@1"] == 1.0 and metrics["overall"]["infra_failures"] == 6
