"""Scripted players for the GEM domains: each shows its game can be won through the bridge.

They read what GEM shows the policy (its board and feedback), or the same public facts from the
environment object, and answer in GEM's ``\\boxed{...}`` action format. Search helpers come from
the TextArena bridge's players (``plugins/textarena/tests/textarena_players.py``).
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The TextArena players and the duel players they import live in the TextArena bridge's tests/.
sys.path.insert(0, str(Path(__file__).parents[2] / "textarena" / "tests"))
import textarena_players as ta_players  # noqa: E402

Player = Callable[[str], str]


def boxed(player: Player) -> Player:
    """A TextArena-style player (``[x y]``) speaking GEM's ``\\boxed{x y}``."""
    return lambda observation: re.sub(r"^\[(.*)\]$", r"\\boxed{\1}", player(observation))


def make_player(env_id: str, episode: Any) -> Player:
    env = episode.game.env
    return PLAYERS[env_id.split(":")[1].split("-v0")[0]](env)


def guess_the_number(env: Any) -> Player:
    return boxed(ta_players.guess_the_number(env, ""))


def minesweeper(env: Any) -> Player:
    """GEM declares a win only when every mine is flagged: flag known mines, then reveal."""
    def play(observation: str) -> str:
        mines, (r, c) = ta_players.sweep(env.rows, env.cols, env.num_mines, env.revealed, env.grid)
        unflagged = sorted(p for p in mines if not env.flags[p[0]][p[1]])
        if unflagged:
            return "\\boxed{flag %d %d}" % unflagged[0]
        return f"\\boxed{{reveal {r} {c}}}"
    return play


def fifteen_puzzle(env: Any) -> Player:
    n = env.num_rows
    start = tuple(v or 0 for row in env.board for v in row)
    slide = {"up": n, "down": -n, "left": 1, "right": -1}

    def moves(state: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
        blank, out = state.index(0), []
        for move, delta in slide.items():
            tile = blank + delta
            if 0 <= tile < n * n and (abs(delta) == n or tile // n == blank // n):
                nxt = list(state)
                nxt[blank], nxt[tile] = nxt[tile], 0
                out.append((f"\\boxed{{{move}}}", tuple(nxt)))
        return out
    goal = (*range(1, n * n), 0)
    return ta_players.script(iter(ta_players.bfs(start, lambda s: s == goal, moves) or []))


def sudoku(env: Any) -> Player:
    size = env.scale
    board = [row[:] for row in env.board]
    _solve(board, size)
    empties = [(r, c) for r in range(size) for c in range(size) if env.board[r][c] == 0]
    return ta_players.script(f"\\boxed{{{r + 1} {c + 1} {board[r][c]}}}" for r, c in empties)


def _solve(board: list[list[int]], size: int) -> bool:
    box = int(size ** 0.5)
    for r, c in itertools.product(range(size), range(size)):
        if board[r][c] == 0:
            used = set(board[r]) | {board[i][c] for i in range(size)} | {
                board[i][j] for i in range(r // box * box, r // box * box + box)
                for j in range(c // box * box, c // box * box + box)}
            for value in range(1, size + 1):
                if value not in used:
                    board[r][c] = value
                    if _solve(board, size):
                        return True
            board[r][c] = 0
            return False
    return True


def sokoban(env: Any) -> Player:
    return boxed(ta_players.sokoban(env, ""))


PLAYERS: dict[str, Callable[[Any], Player]] = {
    "GuessTheNumber": guess_the_number, "Minesweeper": minesweeper,
    "FifteenPuzzle": fifteen_puzzle, "Sudoku": sudoku, "Sokoban": sokoban,
}
