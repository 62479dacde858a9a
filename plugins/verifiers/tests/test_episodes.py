"""Multi-turn and tool-using verifiers environments played through rlhub's step protocol."""

from __future__ import annotations

import asyncio
import re

from rlhub.rollout import rollout

GUESS, TOOLS = "vf/rlhub-test-guess-v1", "vf/rlhub-test-tools-v1"


class Bisector:
    """A scripted policy (rlhub's policy protocol) that bisects 1..64 from higher/lower hints."""

    async def generate(self, batch, **_):
        return [self.guess(messages) for messages in batch]

    @staticmethod
    def guess(messages) -> str:
        lo, hi = 1, 64
        for message in messages:
            hint = re.match(r"(-?\d+) is wrong: go (higher|lower)", message["content"])
            if hint and message["role"] == "user":
                value = int(hint.group(1))
                lo, hi = (value + 1, hi) if hint.group(2) == "higher" else (lo, value - 1)
        return str((lo + hi) // 2)


class Constant:
    """A degenerate policy: the same guess every turn."""

    async def generate(self, batch, **_):
        return ["32" for _ in batch]


def test_the_env_plays_the_user_and_a_bisecting_player_wins_every_game(vf_registry):
    domain = vf_registry.get(GUESS)
    for index in range(4):
        traj = asyncio.run(rollout(Bisector(), domain, domain.task("test", 0, index)))
        assert (traj.status, traj.reward) == ("passed", 1.0), traj.turns
        assert len(traj.turns) > 1 and not any(t.attempt for t in traj.turns[:-1])
        assert traj.turns[0].observation.endswith("go higher.") or \
            traj.turns[0].observation.endswith("go lower.")


def test_a_constant_guess_wins_only_the_game_whose_secret_it_is(vf_registry):
    domain = vf_registry.get(GUESS)
    results = [asyncio.run(rollout(Constant(), domain, domain.task("train", 0, i)))
               for i in range(6)]
    secrets = [domain.source_task(domain.task("train", 0, i)).data.secret for i in range(6)]
    assert [t.reward for t in results] == [float(s == 32) for s in secrets]
    assert all(len(t.turns) == domain.manifest.max_turns for t in results if t.reward == 0)


def test_verify_scores_one_reply_as_the_whole_game(vf_registry):
    domain = vf_registry.get(GUESS)
    task = domain.task("train", 0, 2)
    secret = domain.source_task(task).data.secret
    assert domain.verify(task, str(secret)).reward == 1.0
    assert domain.verify(task, str(secret % 64 + 1)).reward == 0.0


def test_tool_calls_run_in_process_and_only_the_answer_is_scored(vf_registry):
    domain = vf_registry.get(TOOLS)
    task = domain.task("train", 0, 0)
    assert '<tool name="multiply">' in task.prompt[-1]["content"]
    a, b = map(int, re.findall(r"\d+", task.prompt[-1]["content"])[:2])
    episode = domain.start(task)
    first = episode.step(f'<tool name="multiply">{{"a": {a}, "b": {b}}}</tool>')
    assert (first.done, first.info["attempt"]) == (False, False)
    assert first.observation == f'<result tool="multiply">{a * b}</result>'
    last = episode.step(str(a * b))
    assert (last.done, last.score.reward, last.score.passed) == (True, 1.0, True)


def test_bad_tool_calls_come_back_as_errors_the_policy_can_read(vf_registry):
    domain = vf_registry.get(TOOLS)
    episode = domain.start(domain.task("train", 0, 1))
    calls = ('<tool name="multiply">[1, 2]</tool><tool name="divide">{}</tool>'
             '<tool name="multiply">{"a": 1}</tool>'
             + '<tool name="multiply">{"a":1,"b":1}</tool>' * 3)
    observation = episode.step(calls).observation
    assert observation.splitlines()[0] == ('<result tool="multiply">error: ValueError: expected '
                                           'a JSON object of arguments</result>')
    assert "error: unknown tool 'divide'; the tools are multiply." in observation
    assert "error: TypeError" in observation and "missing 1 required positional" in observation
    assert observation.splitlines()[-1] == "(only the first 4 calls were run)"
    assert episode.step("0").score.reward == 0.0


STALL = "vf/rlhub-test-stall-v1"


def test_a_tool_that_never_returns_is_cut_off_and_a_flood_is_truncated(vf_registry, monkeypatch):
    from rlhub_verifiers import tools

    monkeypatch.setattr(tools, "CALL_TIMEOUT_S", 0.5)
    domain = vf_registry.get(STALL)
    episode = domain.start(domain.task("train", 0, 0))
    calls = '<tool name="wait">{}</tool><tool name="flood">{}</tool>'
    observation = episode.step(calls).observation
    waited, flooded = observation.split("\n")
    assert waited == '<result tool="wait">error: the wait tool did not answer within 0.5 s</result>'
    assert len(flooded) == len('<result tool="flood"></result>') + tools.RESULT_CHARS
    assert episode.step("done").score.reward == 1.0


def test_a_stalled_reward_is_a_bounded_verifier_error(vf_registry, monkeypatch):
    from rlhub_verifiers import domain as vf_domain

    monkeypatch.setattr(vf_domain, "STEP_TIMEOUT_S", 1.0)
    domain = vf_registry.get(STALL)
    score = domain.verify(domain.task("train", 0, 1), "stall")
    assert (score.reward, score.passed, score.failure) == (0.0, False, "verifier")
    assert score.error == "TimeoutError: the verifiers environment did not answer within 1 s"
