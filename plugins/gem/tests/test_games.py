"""Every GEM domain can be won by a scripted player and pays degenerate players nothing."""

from __future__ import annotations

import statistics

import pytest

import rlhub
from gem_players import make_player, ta_players  # noqa: I001 - tests/ is on sys.path

REG = rlhub.registry()
IDS = [i for i in REG.ids() if i.startswith("gem/")]
SEEDS = 6


def tasks(domain_id: str) -> list[rlhub.Task]:
    return REG.get(domain_id).sample(SEEDS, split="test", seed=3)


def scripted(domain_id: str) -> list[float]:
    domain = REG.get(domain_id)
    env_id = domain.params["env_id"]
    return [ta_players.play(domain, task, lambda ep: make_player(env_id, ep)).score.reward
            for task in tasks(domain_id)]


def test_the_bridge_provides_the_gem_games_no_other_plugin_has():
    assert len(IDS) >= 6


@pytest.mark.parametrize("domain_id", IDS)
def test_a_scripted_player_wins_on_at_least_one_seed(domain_id):
    assert 1.0 in scripted(domain_id)


@pytest.mark.parametrize("domain_id", IDS)
def test_constant_and_echoing_players_earn_less_than_the_scripted_player(domain_id):
    domain = REG.get(domain_id)
    env_id = domain.params["env_id"]
    skilled = statistics.mean(scripted(domain_id))

    def first_move_forever(episode):
        move = make_player(env_id, episode)(episode.opening)
        return lambda observation: move

    players = {"empty": lambda ep: lambda obs: "", "echo": lambda ep: lambda obs: obs,
               "first move forever": first_move_forever}
    for name, make in players.items():
        rewards = [ta_players.play(domain, task, make).score.reward for task in tasks(domain_id)]
        assert statistics.mean(rewards) < skilled, f"{domain_id}: {name} earned {rewards}"
        assert 1.0 not in rewards or "Minesweeper" in env_id, f"{domain_id}: {name} won"
