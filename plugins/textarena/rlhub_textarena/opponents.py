"""The built-in opponents of the two-player TextArena games: fixed, deterministic, cheap.

TextArena ships no offline opponent (its agents call LLM APIs or ask a human), so the bridge plays
the other seat itself. Each opponent reads the game's state (it is part of the environment, like a
dealer), is seeded from the task's seed, and never sees the policy's reasoning:

* ``tactical`` (TicTacToe, Wild TicTacToe, Connect Four, SimpleTak, Chopsticks): take a move that
  wins at once; else take the spot where the policy would win at once; else a seeded random legal
  move. Both tests run the game itself on a copy of its state, so the rules are TextArena's.
* ``othello``: a corner when it can, else the move that leaves it the most discs (seeded ties).
* ``nim``: the winning reply (nim-sum zero) three times in four, else a seeded random removal.
* ``pig``: roll until the turn total reaches 20 or wins the game, then hold (the textbook rule).

An opponent whose best reply is a fixed move sequence the policy could replay blindly would pay
for memorising it, which is why the games are ones where a fixed line of play loses (see the
catalog's left-out reasons for the rest).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

Opponent = Callable[[Any, int, random.Random], str]
Candidates = Callable[[Any], list[tuple[str, Any]]]


# -- playing a move on a copy ------------------------------------------------------------------


def trial(env: Any, action: str, player: int) -> Any | None:
    """A copy of ``env`` after ``player`` plays ``action``, or None when the game refuses it."""
    sim = copy.deepcopy(env)
    sim.state.current_player_id = player
    sim.state.error_count = 0
    sim.step(action)
    info = sim.state.game_info.get(player, {}) if sim.state.done else {}
    refused = sim.state.error_count > 0 or info.get("invalid_move")
    return None if refused else sim


def wins(sim: Any | None, player: int) -> bool:
    return sim is not None and sim.state.done and (sim.state.rewards or {}).get(player) == 1


def tactical(candidates: Candidates) -> Opponent:
    """Win now; else block the policy's immediate win; else a seeded random legal move."""
    def move(env: Any, me: int, rng: random.Random) -> str:
        options = candidates(env)
        legal = [(a, key, sim) for a, key in options if (sim := trial(env, a, me)) is not None]
        for action, _, sim in legal:
            if wins(sim, me):
                return action
        threats = {key for a, key in options if wins(trial(env, a, 1 - me), 1 - me)}
        blocks = [(a, k, s) for a, k, s in legal if k in threats]
        return rng.choice(blocks or legal)[0]
    return move


def cells(board_of: Callable[[Any], list[list[Any]]], empty: Any, fmt: str) -> Candidates:
    """One placement per empty cell of a square-indexed board (``fmt`` takes the cell number)."""
    def candidates(env: Any) -> list[tuple[str, Any]]:
        board = board_of(env)
        width = len(board[0])
        return [(fmt.format(r * width + c), r * width + c) for r, row in enumerate(board)
                for c, cell in enumerate(row) if cell == empty]
    return candidates


def wild_cells(env: Any) -> list[tuple[str, Any]]:
    spots = cells(lambda e: e.state.game_state["board"], "", "{}")(env)
    return [(f"[{mark} {cell}]", cell) for _, cell in spots for mark in "XO"]


def columns(env: Any) -> list[tuple[str, Any]]:
    board = env.state.game_state["board"]
    return [(f"[col {c}]", c) for c in range(len(board[0])) if board[0][c] == "."]


def hands(env: Any) -> list[tuple[str, Any]]:
    moves = [(f"[attack {m} {o}]", ("attack", m, o)) for m in (0, 1) for o in (0, 1)]
    total = sum(env.state.game_state["hands"][env.state.current_player_id])
    return moves + [(f"[split {left} {total - left}]", ("split", left))
                    for left in range(total + 1)]


def othello(env: Any, me: int, rng: random.Random) -> str:
    valid = env.state.game_state["valid_moves"] or []
    if not valid:
        return "[pass]"
    corners = {0, env.N - 1}
    best = [m for m in valid if m[0] in corners and m[1] in corners]
    if not best:
        key = "black_count" if me == 0 else "white_count"
        counts = [(trial(env, f"[{r}, {c}]", me).state.game_state[key], [r, c]) for r, c in valid]
        top = max(count for count, _ in counts)
        best = [m for count, m in counts if count == top]
    r, c = rng.choice(best)
    return f"[{r}, {c}]"


def nim(env: Any, me: int, rng: random.Random) -> str:
    piles = env.state.game_state["piles"]
    total = 0
    for pile in piles:
        total ^= pile
    winning = [(i, pile - (pile ^ total)) for i, pile in enumerate(piles) if pile ^ total < pile]
    if winning and rng.random() < 0.75:
        i, take = rng.choice(winning)
    else:
        i = rng.choice([i for i, pile in enumerate(piles) if pile])
        take = rng.randint(1, piles[i])
    return f"[{i} {take}]"


def pig(env: Any, me: int, rng: random.Random) -> str:
    state = env.state.game_state
    turn_total, score = state["turn_total"], state["scores"][me]
    done = turn_total >= 20 or score + turn_total >= env.winning_score
    return "[hold]" if done else "[roll]"


def _board(env: Any) -> list[list[Any]]:
    return env.state.game_state["board"]


OPPONENTS: dict[str, Opponent] = {
    "TicTacToe": tactical(cells(_board, "", "[{}]")),
    "WildTicTacToe": tactical(wild_cells),
    "ConnectFour": tactical(columns),
    "SimpleTak": tactical(cells(_board, "", "[{}]")),
    "Chopsticks": tactical(hands),
    "Othello": othello,
    "Nim": nim,
    "PigDice": pig,
}
