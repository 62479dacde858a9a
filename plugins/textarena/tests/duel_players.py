"""Scripted players for the two-player TextArena domains (the policy's side against the built-in
opponent). Each reads the public board from the game's state, as the policy reads it from the
observation, and plays a plain strategy that beats the opponent on some seeds:

* board games (TicTacToe, Connect Four, SimpleTak, Chopsticks): win at once, else block the
  opponent's immediate win, else a move that makes two winning threats (small boards), else the
  centre; in Chopsticks only among moves after which the opponent cannot win at once;
* Othello: the opponent's own search, one ply deeper on boards up to 8×8;
* Nim: the nim-sum-zero reply whenever there is one;
* Pig: hold at a turn total of 25 or when the banked score would win;
* Breakthrough: win at once, else capture, else push its most advanced piece;
* Battleship: hunt and target, as the opponent does.

They test moves on copies of the game with :func:`rlhub_textarena.opponents.trial`, so the rules
are TextArena's own.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from rlhub_textarena import opponents, reversi

Player = Callable[[str], str]
FORK_SEARCH = 16  # legal moves up to which the player looks for a fork (it costs moves squared)


def _me(env: Any) -> int:
    return env.state.current_player_id


def board_player(candidates: opponents.Candidates, centre: Callable[[Any, Any], float],
                 careful: bool = False) -> Callable[[Any, str], Player]:
    """``careful``: keep to moves after which the opponent cannot win at once (Chopsticks)."""
    def make(env: Any, opening: str) -> Player:
        def play(observation: str) -> str:
            me = _me(env)
            legal = [(a, k) for a, k in candidates(env, me)
                     if opponents.trial(env, a, me) is not None]
            for action, _ in legal:
                if opponents.wins(opponents.trial(env, action, me), me):
                    return action
            if careful:
                legal = [(a, k) for a, k in legal if not opponents.can_win(
                    opponents.trial(env, a, me), candidates, 1 - me)] or legal
            threats = {k for a, k in candidates(env, 1 - me)
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
    wins = sum(opponents.wins(opponents.trial(sim, a, me), me) for a, _ in candidates(sim, me))
    return wins >= 2


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
    """The opponent's own search, one ply deeper on boards up to 8×8."""
    def play(observation: str) -> str:
        valid = env.state.game_state["valid_moves"] or []
        if not valid:
            return "[pass]"
        depth = opponents.OTHELLO_DEPTH.get(env.N, 0) + 1
        piece = "BW"[_me(env)]
        r, c = reversi.best_moves(env.state.game_state["board"], piece, depth, valid)[0]
        return f"[{r}, {c}]"
    return play


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


def breakthrough(env: Any, opening: str) -> Player:
    """Reach the far row, else stop a piece about to reach ours, else a safe capture, else the
    safe advance of the most advanced piece (safe: no enemy piece can take it next move)."""
    def play(observation: str) -> str:
        me, board = _me(env), env.state.game_state["board"]
        size, step = len(board), 1 if me == 0 else -1
        moves = opponents.advances(env, me)
        if not moves:
            return opponents.NO_MOVE
        threat_row, far_row = (1, size - 1) if me == 0 else (size - 2, 0)
        danger = {start for _, start, _ in opponents.advances(env, 1 - me)
                  if start[0] == threat_row}

        def safe(end: tuple[int, int]) -> bool:
            r, c = end[0] + step, end[1]
            return not (0 <= r < size and any(
                0 <= c + dc < size and board[r][c + dc] == "BW"[me] for dc in (-1, 1)))

        def rank(move: tuple[str, Any, Any]) -> tuple[bool, bool, bool, bool, int]:
            _, start, end = move
            return (end[0] == far_row, end in danger,
                    start[1] != end[1] and safe(end), safe(end), start[0] * step)
        return max(moves, key=rank)[0]
    return play


def battleship(env: Any, opening: str) -> Player:
    rng = random.Random(2)
    return lambda observation: opponents.battleship(env, _me(env), rng)


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
    "Chopsticks": board_player(opponents.hands, lambda env, key: 0.0, careful=True),
    "Othello": othello, "Nim": nim, "PigDice": pig,
    "Breakthrough": breakthrough, "Battleship": battleship,
}
