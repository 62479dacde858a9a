"""Monitoring: TensorBoard scalars per domain and reward-distribution shift warnings."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest

from rlhub.evaluate import EvalConfig, run_eval
from rlhub.monitor import Monitor, ShiftDetector, ks_2samp
from rlhub.rollout import Trajectory, Turn
from rlhub.task import Score, Task


def _traj(domain: str, reward: float, status: str | None = None,
          failure: str | None = None) -> Trajectory:
    failure = failure or ("none" if reward >= 1.0 else "answer")
    score = Score(reward, exec=None if status is None else {"status": status}, failure=failure)
    turn = Turn(0, [], "x", score)
    return Trajectory(domain, Task("t", domain, "p"), turns=[turn], reward=reward,
                      passed=reward >= 1.0, failure=failure)


def test_a_shift_in_one_domain_logs_a_warning_naming_that_domain(caplog) -> None:
    rng = random.Random(0)
    detector = ShiftDetector(window=40, alpha=0.01)
    with caplog.at_level(logging.WARNING, logger="rlhub.monitor"):
        for _ in range(80):
            detector.add("math/a-v1", rng.gauss(0.2, 0.05))
            detector.add("code/b-v1", rng.gauss(0.5, 0.05))
        for _ in range(60):
            detector.add("math/a-v1", rng.gauss(0.8, 0.05))
            detector.add("code/b-v1", rng.gauss(0.5, 0.05))
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert warnings[0].startswith("reward distribution shift in domain math/a-v1: KS D=")


def test_a_stable_stream_raises_no_alarm() -> None:
    rng = random.Random(1)
    detector = ShiftDetector(window=32, alpha=0.001)
    assert all(detector.add("d", float(rng.random() < 0.3)) is None for _ in range(400))


def test_the_fallback_ks_test_agrees_with_the_statistic_definition() -> None:
    d, p = ks_2samp([0.0] * 50, [1.0] * 50)
    assert d == 1.0 and p < 1e-10
    d, p = ks_2samp([0.1, 0.2, 0.3], [0.1, 0.2, 0.3])
    assert d == 0.0 and p == 1.0


def test_monitor_writes_per_domain_reward_pass_rate_and_sandbox_scalars(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monitor = Monitor(str(tmp_path / "tb"))
    for reward, status in ((1.0, "ok"), (0.0, "timeout"), (1.0, "ok")):
        monitor.observe(_traj("math/a-v1", reward, status))
    monitor.observe(_traj("code/b-v1", 0.0))
    monitor.close()
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"reward/math/a-v1/mean", "reward/math/a-v1/std", "pass_rate/math/a-v1",
            "reward/code/b-v1/mean", "sandbox/ok", "sandbox/timeout"} <= tags
    assert acc.Scalars("reward/math/a-v1/mean")[-1].value == pytest.approx(2 / 3)
    assert acc.Scalars("pass_rate/code/b-v1")[-1].value == 0.0
    assert acc.Scalars("sandbox/ok")[-1].value == 2


def test_faults_that_are_not_the_models_are_counted_per_domain_and_kept_out_of_rewards(
        tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monitor = Monitor(str(tmp_path / "tb"), window=4, alpha=0.5)
    for _ in range(4):
        monitor.observe(_traj("code/b-v1", 1.0))
    for failure in ("sandbox", "sandbox", "judge", "verifier") * 3:
        monitor.observe(_traj("code/b-v1", 0.0, "infra_error", failure=failure))
    monitor.observe(_traj("code/b-v1", 1.0))
    monitor.close()
    assert monitor.failures == {"code/b-v1": {"sandbox": 6, "judge": 3, "verifier": 3}}
    assert monitor.shifts == [] and monitor.detector.reference["code/b-v1"] == [1.0] * 4
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert acc.Scalars("failures/code/b-v1/sandbox")[-1].value == 6
    assert acc.Scalars("failures/code/b-v1/judge")[-1].value == 3
    assert [e.value for e in acc.Scalars("reward/code/b-v1/mean")] == [1.0]
    assert acc.Scalars("pass_rate/code/b-v1")[-1].value == 1.0


def test_an_eval_run_leaves_tensorboard_events_in_the_run_directory(reg, tmp_path) -> None:
    out = tmp_path / "run"
    run_eval(EvalConfig(mixture={"domains": {"looptest/reverse-v1": {}}}, policy="oracle:right",
                        out=str(out), n=3), registry=reg)
    assert list((out / "tb").glob("events.out.tfevents.*"))


def _clustered_groups(rng: random.Random, groups: int, size: int = 8) -> list[list[float]]:
    """A stationary stream of GRPO groups whose prompt decides most of the outcome: a third of
    the prompts are solved 90% of the time, the rest 5% (as a tiny model counting digits)."""
    out = []
    for _ in range(groups):
        p = 0.9 if rng.random() < 0.35 else 0.05
        out.append([float(rng.random() < p) for _ in range(size)])
    return out


def test_the_trainers_shift_test_takes_one_value_per_group_and_stays_quiet_on_a_steady_stream(
        tmp_path: Path) -> None:
    stream = _clustered_groups(random.Random(7), 1200)
    per_group = Monitor(str(tmp_path / "g"), window=64, alpha=0.01, shift_unit="group")
    per_rollout = Monitor(str(tmp_path / "t"), window=64, alpha=0.01)
    for group in stream:
        per_group.observe_group("count", group)
        for reward in group:
            per_group.observe(_traj("count", reward))
            per_rollout.observe(_traj("count", reward))
    per_group.close()
    per_rollout.close()
    assert per_group.shifts == []
    assert len(per_rollout.shifts) >= 3  # 64 correlated rollouts are not 64 samples


def test_the_group_shift_test_still_catches_a_real_drop(tmp_path: Path) -> None:
    monitor = Monitor(str(tmp_path / "tb"), window=32, alpha=0.01, shift_unit="group")
    rng = random.Random(3)
    for group in _clustered_groups(rng, 64):
        monitor.observe_group("count", group)
    for _ in range(64):
        monitor.observe_group("count", [float(rng.random() < 0.02) for _ in range(8)])
    monitor.close()
    assert monitor.shifts and monitor.shifts[0].current_mean < monitor.shifts[0].reference_mean
