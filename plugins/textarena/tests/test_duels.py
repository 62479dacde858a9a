"""Two-player TextArena games against the bridge's built-in opponent: seats, replay, outcomes."""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys

import pytest

import rlhub
from rlhub_textarena import opponents
from rlhub_textarena.domain import unwrapped
from textarena_players import make_player, play  # noqa: I001 - tests/ is on sys.path

REG = rlhub.registry()
DUELS = [i for i in REG.ids() if i.startswith("textarena/")
         and REG.manifest(i).data["params"]["reward"] == "duel"]


def seat_of(task: rlhub.Task) -> int:
    return REG.get(task.domain).start(task).game.seat


def test_the_bridge_offers_thirty_six_two_player_levels_of_ten_games():
    games = {REG.manifest(i).data["params"]["opponent"] for i in DUELS}
    assert games == set(opponents.OPPONENTS) and len(DUELS) == 36


def test_the_policy_plays_either_seat_and_the_opponent_opens_when_it_is_player_1():
    domain = REG.get("textarena/tic-tac-toe-v1")
    tasks = domain.sample(12, split="train", seed=0)
    seats = [seat_of(t) for t in tasks]
    assert set(seats) == {0, 1}
    second = tasks[seats.index(1)]
    board = unwrapped(domain.start(second).game.env).state.game_state["board"]
    assert sum(cell != "" for row in board for cell in row) == 1
    assert "Player 0: [" in second.prompt  # the opponent's opening move, labelled


def moves_of(task: rlhub.Task, moves: list[str]) -> list[str]:
    episode = REG.get(task.domain).start(task)
    seen = []
    for move in moves:
        result = episode.step(move)
        seen.append(result.observation or result.score.feedback)
        if result.done:
            break
    return seen


def test_the_opponent_replays_the_same_game_for_the_same_task_whatever_else_runs():
    task = REG.get("textarena/connect-four-v1").task("test", 0, 2)
    line = [f"[col {c}]" for c in (3, 3, 2, 4, 1, 5, 0, 6)]
    first = moves_of(task, line)
    random.seed(1)
    moves_of(REG.get("textarena/connect-four-v1").task("test", 0, 3), line)
    assert moves_of(task, line) == first


def test_the_same_seed_and_index_deal_the_same_opening_in_a_fresh_process():
    """The opponent's opening move (the policy is player 1 on some of these) is part of the task."""
    code = ("import json, rlhub; d = rlhub.registry().get('textarena/othello-small-v1'); "
            "ts = d.sample(4, split='test', seed=6); "
            "print(json.dumps([[t.prompt, t.meta['seed']] for t in ts]))")
    runs = [json.loads(subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": h}).stdout.splitlines()[-1]) for h in ("1", "2")]
    here = REG.get("textarena/othello-small-v1").sample(4, split="test", seed=6)
    assert runs[0] == runs[1] == [[t.prompt, t.meta["seed"]] for t in here]
    assert {seat_of(t) for t in here} == {0, 1}


def test_other_seeds_meet_other_opponent_moves():
    domain = REG.get("textarena/othello-small-v1")
    openings = {t.prompt for t in domain.sample(8, split="train", seed=4) if seat_of(t) == 1}
    assert len(openings) > 1


def test_a_won_game_pays_1_a_drawn_one_half_and_a_lost_one_nothing():
    domain = REG.get("textarena/tic-tac-toe-v1")
    outcomes = {}
    for task in domain.sample(12, split="test", seed=3):
        score = play(domain, task, lambda ep: make_player("TicTacToe", ep)).score
        outcomes[(score.components["won"], score.components["drawn"])] = score.reward
    assert outcomes[(1.0, 0.0)] == 1.0 and outcomes[(0.0, 1.0)] == 0.5
    lost = play(domain, domain.task("test", 3, 0), lambda ep: lambda obs: "[9]").score
    assert (lost.reward, lost.components["won"], lost.components["drawn"]) == (0.0, 0.0, 0.0)
    assert lost.components["game_reward"] == -1.0


def test_an_episode_cut_short_by_the_turn_budget_pays_nothing_even_when_ahead():
    domain = REG.get("textarena/pig-dice-v1")
    task = domain.task("train", 0, 0)
    score = domain.verify(task, "[roll]")  # one move: the one-shot surface ends the episode
    assert score.reward == 0.0 and "before the game did" in score.feedback


def test_an_opponent_without_a_legal_move_loses_as_textarenas_rules_say():
    domain = REG.get("textarena/breakthrough-tiny-v1")
    task = next(t for t in domain.sample(8, split="train", seed=0) if seat_of(t) == 0)
    episode = domain.start(task)
    env = unwrapped(episode.game.env)
    board = env.state.game_state["board"]
    for row in board:
        row[:] = [""] * len(row)
    board[-1][0], board[-2][0], board[0][0] = "B", "W", "W"  # Black's one piece is blocked
    result = episode.step("[a1a2]")
    assert result.done and result.score.reward == 1.0


def test_the_built_in_opponent_blocks_a_blind_line_and_the_line_loses():
    domain = REG.get("textarena/connect-four-v1")
    for task in domain.sample(6, split="train", seed=0):  # four in column 0, unless blocked
        score = play(domain, task, lambda ep: lambda obs: "[col 0]").score
        assert score.reward == 0.0 and score.components["game_reward"] == -1.0


@pytest.mark.parametrize("game", sorted(opponents.OPPONENTS))
def test_every_opponent_move_is_one_textarena_accepts(game):
    domain_id = next(i for i in DUELS if REG.manifest(i).data["params"]["opponent"] == game)
    domain = REG.get(domain_id)
    for task in domain.sample(3, split="test", seed=5):  # a refused move would raise
        assert play(domain, task, lambda ep: make_player(game, ep)).done


def test_trying_a_move_leaves_the_real_game_untouched():
    domain = REG.get("textarena/tic-tac-toe-v1")
    env = unwrapped(domain.start(domain.task("train", 0, 0)).game.env)
    before = copy.deepcopy(env.state.game_state)
    sims = [opponents.trial(env, f"[{i}]", env.state.current_player_id) for i in range(9)]
    assert env.state.game_state == before and any(s is not None for s in sims)


def test_a_megabyte_line_is_cut_before_connect_fours_quadratic_move_parser_sees_it():
    """ConnectFour parses moves with ``.*\\[(?:col\\s*)?(\\d+)\\].*``: a 1 MB line held one
    verification for minutes. Cut to its last 2,000 characters it is one refused move; a move at
    the end of a long line still counts."""
    domain = REG.get("textarena/connect-four-large-v1")
    task = domain.task("train", 0, 0)
    flood = domain.verify(task, json.dumps(list(range(200_000))))
    assert flood.reward == 0.0 and flood.components["moves"] == 0.0
    tail = domain.verify(task, "x" * 50_000 + " [col 3]")
    assert tail.components["moves"] == 1.0
