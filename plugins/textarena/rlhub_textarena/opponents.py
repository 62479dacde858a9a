"""The built-in opponents of the two-player TextArena games: fixed, deterministic, cheap.

TextArena ships no offline opponent (its agents call LLM APIs or ask a human), so the bridge plays
the other seat itself. Each opponent reads the game's state (it is part of the environment, like a
dealer), is seeded from the task's seed, and never sees the policy's reasoning:

* ``tactical`` (TicTacToe, Wild TicTacToe, Connect Four, SimpleTak, Chopsticks): take a move that
  wins at once; else take the spot where the policy would win at once (Chopsticks: a move after
  which the policy cannot win at once); else a seeded random legal move. The tests run the game
  itself on a copy of its state, so the rules are TextArena's.
* ``othello``: a shallow negamax search (:mod:`rlhub_textarena.reversi`; 3 plies on boards up to
  6×6, 2 on 8×8, 1 above) over square weights and mobility, seeded ties.
* ``breakthrough``: a move onto the far row; else capture a piece one step from its home row;
  else a capture; else a seeded random advance.
* ``battleship``: hunt and target: fire along a line of its hits, else next to a hit, else at a
  seeded random cell of one colour of the checkerboard (every ship covers one).
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

from rlhub_textarena import reversi

Opponent = Callable[[Any, int, random.Random], str]
OTHELLO_DEPTH = {4: 3, 6: 3, 8: 2}  # plies by board size; larger boards look one ply ahead
NO_MOVE = "[no legal move]"  # what an opponent with no legal move plays: TextArena's rules lose it
Candidates = Callable[[Any, int], list[tuple[str, Any]]]


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


def tactical(candidates: Candidates, careful: bool = False) -> Opponent:
    """Win now; else block the policy's immediate win; else a seeded random legal move.

    ``careful`` (games whose moves are not placements, where blocking a spot means nothing:
    Chopsticks) replaces blocking with a look one move ahead: a random move after which the policy
    cannot win at once, when there is one.
    """
    def move(env: Any, me: int, rng: random.Random) -> str:
        legal = [(a, key, sim) for a, key in candidates(env, me)
                 if (sim := trial(env, a, me)) is not None]
        for action, _, sim in legal:
            if wins(sim, me):
                return action
        if careful:
            blocks = [(a, k, s) for a, k, s in legal if not can_win(s, candidates, 1 - me)]
        else:
            threats = {k for a, k in candidates(env, 1 - me) if wins(trial(env, a, 1 - me), 1 - me)}
            blocks = [(a, k, s) for a, k, s in legal if k in threats]
        return rng.choice(blocks or legal)[0] if legal else NO_MOVE
    return move


def can_win(env: Any, candidates: Candidates, player: int) -> bool:
    """Whether ``player`` has a move in ``env`` that wins at once."""
    return any(wins(trial(env, a, player), player) for a, _ in candidates(env, player))


def cells(board_of: Callable[[Any], list[list[Any]]], empty: Any, fmt: str) -> Candidates:
    """One placement per empty cell of a square-indexed board (``fmt`` takes the cell number)."""
    def candidates(env: Any, player: int) -> list[tuple[str, Any]]:
        board = board_of(env)
        width = len(board[0])
        return [(fmt.format(r * width + c), r * width + c) for r, row in enumerate(board)
                for c, cell in enumerate(row) if cell == empty]
    return candidates


def wild_cells(env: Any, player: int) -> list[tuple[str, Any]]:
    spots = cells(lambda e: e.state.game_state["board"], "", "{}")(env, player)
    return [(f"[{mark} {cell}]", cell) for _, cell in spots for mark in "XO"]


def columns(env: Any, player: int) -> list[tuple[str, Any]]:
    board = env.state.game_state["board"]
    return [(f"[col {c}]", c) for c in range(len(board[0])) if board[0][c] == "."]


def hands(env: Any, player: int) -> list[tuple[str, Any]]:
    moves = [(f"[attack {m} {o}]", ("attack", m, o)) for m in (0, 1) for o in (0, 1)]
    total = sum(env.state.game_state["hands"][player])
    return moves + [(f"[split {left} {total - left}]", ("split", left))
                    for left in range(total + 1)]


def othello(env: Any, me: int, rng: random.Random) -> str:
    valid = env.state.game_state["valid_moves"] or []
    if not valid:
        return "[pass]"
    depth = OTHELLO_DEPTH.get(env.N, 1)
    r, c = rng.choice(reversi.best_moves(env.state.game_state["board"], "BW"[me], depth, valid))
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


def advances(env: Any, player: int) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """Breakthrough moves of ``player``: (action, from, to) for each forward step or capture."""
    board, mine, theirs = env.state.game_state["board"], "WB"[player], "BW"[player]
    step, size, moves = 1 if player == 0 else -1, len(board), []
    for r, row in enumerate(board):
        for c, piece in enumerate(row):
            if piece != mine or not 0 <= r + step < size:
                continue
            for dc in (-1, 0, 1):
                target = board[r + step][c + dc] if 0 <= c + dc < size else None
                if (dc == 0 and target == "") or (dc and target == theirs):
                    name = f"[{chr(97 + c)}{r + 1}{chr(97 + c + dc)}{r + step + 1}]"
                    moves.append((name, (r, c), (r + step, c + dc)))
    return moves


def breakthrough(env: Any, me: int, rng: random.Random) -> str:
    moves, board = advances(env, me), env.state.game_state["board"]
    far_row = len(board) - 1 if me == 0 else 0
    for action, _, end in moves:
        if end[0] == far_row:
            return action
    threat_row = 1 if me == 0 else len(board) - 2  # one step from this side's home row
    danger = {start for _, start, _ in advances(env, 1 - me) if start[0] == threat_row}
    captures = [m for m in moves if m[2] in danger] or [m for m in moves if m[1][1] != m[2][1]]
    return rng.choice(captures or moves)[0] if moves else NO_MOVE


def battleship(env: Any, me: int, rng: random.Random) -> str:
    seen = env.state.game_state["tracking_board"][me]
    size = len(seen)
    open_cells = [(r, c) for r in range(size) for c in range(size) if seen[r][c] == "~"]
    hits = {(r, c) for r in range(size) for c in range(size) if seen[r][c] == "X"}
    near = [(r, c) for r, c in open_cells
            if any((r + dr, c + dc) in hits for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)))]
    lined = [(r, c) for r, c in near if any(
        {(r + dr, c + dc), (r + 2 * dr, c + 2 * dc)} <= hits
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)))]
    parity = [(r, c) for r, c in open_cells if (r + c) % 2 == 0]
    r, c = rng.choice(lined or near or parity or open_cells)
    return f"[{chr(65 + r)}{c}]"


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
    "Chopsticks": tactical(hands, careful=True),
    "Othello": othello,
    "Nim": nim,
    "PigDice": pig,
    "Breakthrough": breakthrough,
    "Battleship": battleship,
}
