"""Every score, turn and trajectory says whose fault a failure was; only the model's are trainable."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import toyplug

from rlhub import (FAILURES, TRAINABLE, Domain, Manifest, SandboxError, Score, StepResult, Task,
                   Verdict, is_trainable)
from rlhub.errors import LabelError
from rlhub.rollout import Rollout, RolloutJob, Trajectory, Turn
from rlhub.store import SCHEMA, TrajectoryStore, trajectory_row
from rlhub.verifiers.endpoints import JudgeUnavailable


def make(check, **manifest):
    class D(Domain):
        def generate(self, rng, split, index):
            return {"prompt": "p", "answer": "a"}

    D.check = lambda self, task, completion: check(task, completion)
    return D(Manifest.parse(toyplug.manifest("d", **manifest), plugin="toy"))


def score_of(check, completion="x"):
    return make(check).verify(Task("t", "toy/d-v1", "p"), completion)


def raising(exc):
    def check(task, completion):
        raise exc
    return check


def test_only_the_models_own_outcomes_are_trainable():
    assert TRAINABLE == {"none", "answer", "timeout"}
    assert set(FAILURES) == {"none", "answer", "timeout", "sandbox", "verifier", "judge",
                             "label", "policy"}
    assert [c for c in FAILURES if is_trainable(c)] == ["none", "answer", "timeout"]


def test_a_pass_is_none_and_a_wrong_answer_is_the_answers_fault():
    assert score_of(lambda t, c: Verdict({"correct": 1.0}, True)).failure == "none"
    wrong = score_of(lambda t, c: Verdict({"correct": 0.0}, False, "no"))
    assert (wrong.failure, wrong.trainable) == ("answer", True)


@pytest.mark.parametrize(("exc", "failure"), [
    (ZeroDivisionError("boom"), "verifier"),
    (SandboxError("no worker started"), "sandbox"),
    (JudgeUnavailable("judge down"), "judge"),
    (LabelError("forged"), "label"),
])
def test_a_check_that_raises_gets_the_class_its_exception_names(exc, failure):
    score = score_of(raising(exc))
    assert (score.failure, score.trainable, score.reward, score.passed) == (
        failure, False, 0.0, False)
    assert score.error == f"{type(exc).__name__}: {exc}"


def test_the_sandbox_status_in_a_verdict_decides_between_timeout_and_infrastructure():
    slow = score_of(lambda t, c: Verdict({}, False, "slow", {"status": "timeout"}))
    down = score_of(lambda t, c: Verdict({}, False, "", {"status": "infra_error"}))
    assert (slow.failure, slow.trainable) == ("timeout", True)
    assert (down.failure, down.trainable) == ("sandbox", False)


def test_a_pass_claimed_over_a_broken_sandbox_is_not_a_pass():
    score = score_of(lambda t, c: Verdict({"correct": 1.0}, True, "", {"status": "infra_error"}))
    assert (score.failure, score.passed) == ("sandbox", False)


def test_a_verdict_naming_an_unknown_class_is_a_verifier_bug():
    score = score_of(lambda t, c: Verdict({}, False, failure="network"))
    assert score.failure == "verifier"
    assert "expected one of" in score.error and "found 'network'" in score.error


def test_the_repair_episode_ends_on_a_fault_that_is_not_the_models():
    domain = make(raising(SandboxError("pool is gone")), turns={"max_turns": 3,
                                                                "repair_discount": 0.5})
    step = domain.start(domain.task("train", 0, 0)).step("x")
    assert step.done and step.observation is None and step.score.failure == "sandbox"


class Policy:
    """Answers every conversation with a fixed text, or fails like a dead endpoint."""

    def __init__(self, text):
        self.text = text

    async def generate(self, conversations, **_):
        if self.text is None:
            raise ConnectionError("endpoint refused the connection")
        return [self.text for _ in conversations]


def play(domain, text="x"):
    job = RolloutJob(domain, domain.task("train", 0, 0))
    return asyncio.run(Rollout(Policy(text), job, {}).run())


def test_a_trajectory_carries_its_turns_fault_and_is_never_a_pass():
    traj = play(make(raising(SandboxError("no worker")), turns={"max_turns": 3,
                                                                "repair_discount": 0.5}))
    assert len(traj.turns) == 1 and traj.turns[0].score.failure == "sandbox"
    assert (traj.failure, traj.passed) == ("sandbox", False)


def test_a_dead_policy_is_the_policys_fault():
    traj = play(make(lambda t, c: Verdict({"correct": 1.0}, True)), text=None)
    assert (traj.status, traj.failure) == ("policy_error", "policy")


def test_a_crashing_episode_start_is_the_verifiers_fault():
    domain = make(lambda t, c: Verdict({}, True))
    domain.start = raising(RuntimeError("no state"))
    traj = play(domain)
    assert (traj.status, traj.failure) == ("env_error", "verifier")


def test_an_episode_score_that_cannot_be_stored_is_the_verifiers_fault_not_a_crashed_run():
    domain = make(lambda t, c: Verdict({}, True))
    episode = domain.start(domain.task("train", 0, 0))
    episode.step = lambda completion: StepResult(None, Score(1.0, {"correct": "high"}, True), True)
    domain.start = lambda task: episode
    traj = play(domain)
    assert (traj.status, traj.failure, traj.passed) == ("env_error", "verifier", False)
    assert "could not convert string to float: 'high'" in traj.turns[0].score.error


def test_a_wrong_then_right_trajectory_has_no_failure():
    answers = iter(["wrong", "a"])
    domain = make(lambda t, c: Verdict({"correct": float(c == "a")}, c == "a"),
                  turns={"max_turns": 2, "repair_discount": 0.5})

    class Two(Policy):
        async def generate(self, conversations, **_):
            return [next(answers)]

    traj = asyncio.run(Rollout(Two(None), RolloutJob(domain, domain.task("train", 0, 0)),
                               {}).run())
    assert [t.score.failure for t in traj.turns] == ["answer", "none"]
    assert traj.failure == "none" and traj.passed


def test_the_store_keeps_failure_classes_and_upgrades_version_1_parts(tmp_path):
    store = TrajectoryStore(str(tmp_path / "run"))
    turn = Turn(0, [], "x", Score(0.0, failure="sandbox"), status="ok")
    traj = Trajectory("toy/d-v1", Task("t1", "toy/d-v1", "p"), turns=[turn], status="failed",
                      failure="sandbox")
    store.write([traj])
    assert [(r["failure"], r["turns"][0]["failure"]) for r in store.rows()] == [
        ("sandbox", "sandbox")]

    v1 = _version_1_table([
        {"status": "passed", "passed": True, "error": None},
        {"status": "failed", "passed": False, "error": None},
        {"status": "failed", "passed": False, "error": "JudgeUnavailable: down"},
        {"status": "policy_error", "passed": False, "error": "refused"},
        {"status": "verify_timeout", "passed": False, "error": "slow"},
    ])
    pq.write_table(v1, str(tmp_path / "run" / "trajectories" / "part-0-old.parquet"))
    old = sorted((r for r in store.rows() if r["domain"] == "old/d-v1"),
                 key=lambda r: r["task_id"])
    assert [r["failure"] for r in old] == ["none", "answer", "verifier", "policy", "verifier"]
    assert [r["turns"][0]["failure"] for r in old] == [r["failure"] for r in old]


def _version_1_table(outcomes):
    """A part as rlhub's schema version 1 wrote it: no failure columns."""
    def v1(struct_or_schema):
        return [f for f in struct_or_schema if f.name != "failure"]

    turn_v1 = pa.struct(v1(SCHEMA.field("turns").type.value_type))
    schema = pa.schema([f if f.name != "turns" else pa.field("turns", pa.list_(turn_v1))
                        for f in v1(SCHEMA)], metadata={"rlhub.schema_version": "1"})
    rows = []
    for i, outcome in enumerate(outcomes):
        traj = Trajectory("old/d-v1", Task(f"t{i}", "old/d-v1", "p"), turns=[Turn(0, [], "x")])
        row = trajectory_row(traj)
        row.update(outcome, schema_version=1)
        turn = row["turns"][0]
        turn.update(passed=outcome["passed"], error=outcome["error"],
                    status="ok" if outcome["status"] in ("passed", "failed") else outcome["status"])
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)


def test_a_served_episode_whose_step_raises_answers_the_minimum_with_its_fault():
    from rlhub.integrations.server.pool import EpisodeRunner

    class Broken:
        def step(self, completion):
            raise SandboxError("no worker")

    domain = make(lambda t, c: Verdict({}, True), reward={
        "range": [-1, 1], "components": {"correct": {"weight": 1.0}}})
    domain.start = lambda task: Broken()
    answer = EpisodeRunner(domain, domain.task("train", 0, 0)).step("x")
    assert (answer["reward"], answer["done"], answer["observation"]) == (-1.0, True, None)
    assert answer["info"]["score"] == {
        "reward": -1.0, "components": {}, "passed": False, "feedback": "",
        "error": "step() raised SandboxError: no worker", "exec": None, "failure": "sandbox"}
    assert (answer["info"]["passed"], answer["info"]["error"]) == (
        False, "step() raised SandboxError: no worker")
