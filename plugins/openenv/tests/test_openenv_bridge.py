"""The OpenEnv bridge against a real OpenEnv server: discovery, the contract, play, failures."""

from __future__ import annotations

import asyncio
import re

from rlhub.rollout import rollout
from rlhub.testing import check_domain

GUESS = "openenv/guess-v1"


class Bisector:
    """A scripted player for the higher/lower server (written here, not in the plugin)."""

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


def test_a_declared_server_is_a_domain_and_an_unreachable_one_is_left_out(oe_registry):
    assert [i for i in oe_registry.ids() if i.startswith("openenv/")] == [GUESS]
    manifest = oe_registry.manifest(GUESS)
    assert (manifest.version, manifest.data["license"], manifest.data["summary"]) == (
        "2.1.0", "BSD-3-Clause", "Higher/lower over 1..64")
    assert manifest.data["params"]["action"] == "message"
    assert manifest.data["params"]["bridge"] == {"plugin": "rlhub-openenv", "source": "guess",
                                                 "source_version": "2.1.0"}
    (gone,) = [e for e in oe_registry.left_out if e["plugin"] == "openenv"]
    assert gone["id"] == "openenv/gone-v1"
    assert gone["reason"].startswith("describing it failed: ConnectError")


def test_the_bridged_server_meets_the_contract(oe_registry):
    assert check_domain(GUESS, registry=oe_registry) == []


def test_a_scripted_player_wins_every_seed_and_steps_are_not_attempts(oe_registry):
    domain = oe_registry.get(GUESS)
    for index in range(3):
        traj = asyncio.run(rollout(Bisector(), domain, domain.task("test", 0, index)))
        assert (traj.status, traj.reward) == ("passed", 1.0)
        assert not any(t.attempt for t in traj.turns[:-1]) and traj.turns[-1].attempt


def test_verify_replays_the_tasks_seeded_reset_from_its_id(oe_registry):
    domain = oe_registry.get(GUESS)
    task = domain.task("train", 0, 4)
    winner = next(str(g) for g in range(1, 65) if domain.verify(task, str(g)).reward == 1.0)
    forged = type(task)(**{**task.to_dict(), "meta": {"reset_seed": 1}})
    assert domain.verify(forged, winner).reward == 1.0
    assert domain.verify(task, "not a number").reward == 0.0


def test_a_server_that_goes_away_is_a_sandbox_error_not_a_wrong_answer(fresh_server):
    from rlhub import Manifest
    from rlhub_openenv.config import manifest
    from rlhub_openenv.domain import make

    raw = manifest("openenv/flaky-v1", {"name": "flaky", "url": fresh_server.url}, {})
    flaky = make(Manifest.parse(raw, plugin="openenv"))
    task = flaky.task("train", 0, 0)
    episode = flaky.start(task)
    fresh_server.stop()
    score = flaky.verify(task, "32")
    assert (score.reward, score.passed, score.failure) == (0.0, False, "sandbox")
    assert score.error.startswith(f"SandboxError: OpenEnv server ws://127.0.0.1:"
                                  f"{fresh_server.port}/ws is unreachable")
    try:
        episode.step("32")
        raise AssertionError("a step on a dead server must raise")
    except Exception as exc:  # noqa: BLE001 - the rollout loop records it as env_error
        assert type(exc).__name__ == "SandboxError"
