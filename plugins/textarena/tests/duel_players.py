"""Scripted players for the two-player TextArena domains (the policy's side against the built-in
opponent). Each reads the public board from the game's state, as the policy reads it from the
observation, and plays a plain strategy that beats the opponent on some seeds:

* board games: win at once, else block the opponent's immediate win, else a move that makes two winning threats (small boards), else the centre
  (TicTacToe, Connect Four, SimpleTak; Chopsticks takes the first legal move); Othello: a corner,
  else the most discs, as the opponent plays;
* Nim: the nim-sum-zero reply whenever there is one;
* Pig: hold at a turn total of 25 or when the banked score would win.

They test moves on copies of the game with :func:`rlhub_textarena.opponents.trial`, so the rules
are TextArena's own.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from rlhub_textarena import opponents

Player = Callable[[str], str]
FORK_SEARCH = 16  # legal moves up to which the player looks for a fork (it costs moves squared)


def _me(env: Any) -> int:
    return env.state.current_player_id


def board_player(candidates: opponents.Candidates,
                 centre: Callable[[Any, Any], float]) -> Callable[[Any, str], Player]:
    def make(env: Any, opening: str) -> Player:
        def play(observation: str) -> str:
            me, options = _me(env), candidates(env)
            legal = [(a, k) for a, k in options if opponents.trial(env, a, me) is not None]
            for action, _ in legal:
                if opponents.wins(opponents.trial(env, action, me), me):
                    return action
            threats = {k for a, k in options
                       if opponents.wins(opponents.trial(env, a, 1 - me), 1 - me)}
            blocks = [(a, k) for a, k in legal if k in threats]
            if not blocks and len(legal) <= FORK_SEARCH:
                blocks = [(a, k) for a, k in legal if forks(env, candidates, a, me)]
            return min(blocks or legal, key=lambda move: centre(env, move[1]))[0]
        return play
    return make


def forks(env: Any, candidates: opponents.Candidates, action: str, me: int) -> bool:
    """Whether ``action`` leaves ``me`` two or more moves that would win at once."""
    sim = opponents.trial(env, action, me)
    return sum(opponents.wins(opponents.trial(sim, a, me), me) for a, _ in candidates(sim)) >= 2


def cell_centre(env: Any, cell: int) -> float:
    """How far a cell is from the board's centre."""
    board = env.state.game_state["board"]
    r, c = divmod(cell, len(board[0]))
    return abs(r - (len(board) - 1) / 2) + abs(c - (len(board[0]) - 1) / 2)


def column_centre(env: Any, column: int) -> float:
    return abs(column - (len(env.state.game_state["board"][0]) - 1) / 2)


def _board(env: Any) -> list[list[Any]]:
    return env.state.game_state["board"]


def othello(env: Any, opening: str) -> Player:
    rng = random.Random(1)
    return lambda observation: opponents.othello(env, _me(env), rng)


def nim(env: Any, opening: str) -> Player:
    def play(observation: str) -> str:
        piles, total = env.state.game_state["piles"], 0
        for pile in piles:
            total ^= pile
        for i, pile in enumerate(piles):
            if pile ^ total < pile:
                return f"[{i} {pile - (pile ^ total)}]"
        i = max(range(len(piles)), key=lambda j: piles[j])
        return f"[{i} 1]"
    return play


def pig(env: Any, opening: str) -> Player:
    def play(observation: str) -> str:
        state, me = env.state.game_state, _me(env)
        total = state["turn_total"]
        return "[hold]" if total >= 25 or state["scores"][me] + total >= env.winning_score \
            else "[roll]"
    return play


DUEL_PLAYERS: dict[str, Callable[[Any, str], Player]] = {
    "TicTacToe": board_player(opponents.cells(_board, "", "[{}]"), cell_centre),
    "WildTicTacToe": board_player(opponents.wild_cells, cell_centre),
    "ConnectFour": board_player(opponents.columns, column_centre),
    "SimpleTak": board_player(opponents.cells(_board, "", "[{}]"), cell_centre),
    "Chopsticks": board_player(opponents.hands, lambda env, key: 0.0),
    "Othello": othello, "Nim": nim, "PigDice": pig,
}
