"""Every TextArena domain can be won by a scripted player and pays degenerate players nothing."""

from __future__ import annotations

import functools
import random
import statistics
import string

import pytest

import rlhub
from rlhub_textarena.catalog import base_variants
from textarena_players import ORACLES, make_player, play  # noqa: I001 - tests/ is on sys.path

REG = rlhub.registry()
IDS = [i for i in REG.ids() if i.startswith("textarena/")]
SEEDS = 6
CHANCE = {"Blackjack", "Secretary", "ThreeCardMonte", "2048", "Minesweeper"}
ONE_MOVE = {"ThreeCardMonte"}  # the first move is the whole game
# Against an opponent that never leaves an immediate win, sound play draws (0.5) nearly every game
# and wins about one in twenty: on these games the scripted player must draw, not win, in SEEDS.
DRAWN = {"Chopsticks"}


def game_of(domain_id: str) -> str:
    return REG.manifest(domain_id).data["params"]["env_id"].split("-v0")[0]


# `make test` plays each game's base variant (else its first); the harder, longer and larger
# variants are marked slow (`make test-slow`).
SAMPLE = base_variants({i: REG.manifest(i).data["params"]["env_id"] for i in IDS})
# A domain's two tests share one worker, which plays its scripted games once (scripted is cached).
PARAMS = [pytest.param(i, marks=[pytest.mark.xdist_group(f"textarena-games-{i}")]
                       + ([] if i in SAMPLE else [pytest.mark.slow])) for i in IDS]


def tasks(domain_id: str, n: int = SEEDS) -> list[rlhub.Task]:
    return REG.get(domain_id).sample(n, split="test", seed=3)


@functools.cache
def scripted(domain_id: str) -> list[float]:
    domain = REG.get(domain_id)
    return [play(domain, task, lambda ep: make_player(game_of(domain_id), ep)).score.reward
            for task in tasks(domain_id)]


@pytest.mark.parametrize("domain_id", PARAMS)
def test_a_scripted_player_wins_on_at_least_one_seed(domain_id):
    lo, hi = REG.manifest(domain_id).reward_range
    rewards = scripted(domain_id)
    assert max(rewards) > lo, f"{domain_id}: the scripted player earned {rewards}"
    if game_of(domain_id) in DRAWN:
        assert statistics.mean(rewards) >= (lo + hi) / 2, f"{domain_id}: it lost ({rewards})"
    elif REG.manifest(domain_id).data["params"]["reward"] in ("win", "duel"):
        assert hi in rewards, f"{domain_id}: no seed was won ({rewards})"


def constant_players(domain_id: str) -> dict[str, object]:
    """Degenerate players: the same text every turn, or the scripted player's first move forever."""
    garbage = "".join(random.Random(7).choice(string.printable) for _ in range(200))

    def first_move_forever(episode):
        move = make_player(game_of(domain_id), episode)(episode.opening)
        return lambda observation: move

    players = {"empty": lambda ep: lambda obs: "", "garbage": lambda ep: lambda obs: garbage,
               "echo": lambda ep: lambda obs: obs, "first move forever": first_move_forever}
    if game_of(domain_id) in ONE_MOVE:
        del players["first move forever"]
    return players


@pytest.mark.parametrize("domain_id", PARAMS)
def test_constant_and_echoing_players_earn_less_than_the_scripted_player(domain_id):
    """A two-player game's opponent plays seeded moves, so a blind legal player (the echo copies
    the first legal move TextArena lists) can win a game the opponent throws; it must earn at
    most a quarter of what the scripted player does. Puzzles without chance it must never win."""
    domain, game = REG.get(domain_id), game_of(domain_id)
    _, hi = domain.manifest.reward_range
    skilled = statistics.mean(scripted(domain_id))
    duel = domain.manifest.data["params"]["reward"] == "duel"
    for name, make in constant_players(domain_id).items():
        rewards = [play(domain, task, make).score.reward for task in tasks(domain_id)]
        assert statistics.mean(rewards) < skilled, f"{domain_id}: {name} earned {rewards}"
        if duel:
            assert statistics.mean(rewards) <= skilled / 4, f"{domain_id}: {name} earned {rewards}"
        elif game not in CHANCE:
            assert hi not in rewards, f"{domain_id}: the {name} player won {rewards}"


def test_the_oracle_players_are_only_those_the_docstring_names():
    assert ORACLES <= {game_of(i) for i in IDS}
