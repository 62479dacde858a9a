"""A small Othello search for the built-in opponent: negamax with alpha-beta over TextArena's board.

The board is TextArena's (rows of ``""``, ``"B"``, ``"W"``); the rules here (a move flips every
line of opposing discs it closes; a player without a move passes; the game ends when neither has
one) are only used to look ahead: the move itself is played by TextArena. A position is worth the
classic square weights of the side's discs minus the opponent's, plus its mobility advantage; a
finished game is worth its disc difference, scaled past any heuristic value.
"""

from __future__ import annotations

from collections.abc import Sequence

Board = list[list[str]]
DIRS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc]
OTHER = {"B": "W", "W": "B"}
WIN = 10_000


def square_worth(n: int, r: int, c: int) -> int:
    """Classic square weights on an n×n board: corners high, the squares that give a corner
    away low, edges above the middle."""
    edge_r, edge_c = min(r, n - 1 - r), min(c, n - 1 - c)
    if edge_r == 0 and edge_c == 0:
        return 100
    if edge_r <= 1 and edge_c <= 1:
        return -50 if edge_r == edge_c else -20
    return 10 if 0 in (edge_r, edge_c) else 1


def flips(board: Board, r: int, c: int, piece: str) -> list[tuple[int, int]]:
    """The discs a move of ``piece`` at (r, c) would flip (none: not a legal move)."""
    if board[r][c]:
        return []
    n, out = len(board), []
    for dr, dc in DIRS:
        line, rr, cc = [], r + dr, c + dc
        while 0 <= rr < n and 0 <= cc < n and board[rr][cc] == OTHER[piece]:
            line.append((rr, cc))
            rr, cc = rr + dr, cc + dc
        if line and 0 <= rr < n and 0 <= cc < n and board[rr][cc] == piece:
            out += line
    return out


def moves(board: Board, piece: str) -> list[tuple[int, int]]:
    n = len(board)
    return [(r, c) for r in range(n) for c in range(n) if flips(board, r, c, piece)]


def played(board: Board, r: int, c: int, piece: str) -> Board:
    after = [row[:] for row in board]
    for rr, cc in [(r, c), *flips(board, r, c, piece)]:
        after[rr][cc] = piece
    return after


def value(board: Board, piece: str) -> int:
    """The heuristic worth of ``board`` for ``piece`` (see the module docstring)."""
    n, mine, theirs = len(board), moves(board, piece), moves(board, OTHER[piece])
    if not mine and not theirs:
        discs = sum(row.count(piece) - row.count(OTHER[piece]) for row in board)
        return WIN * discs
    worth = sum(square_worth(n, r, c) * (1 if cell == piece else -1)
                for r, row in enumerate(board) for c, cell in enumerate(row) if cell)
    return worth + 5 * (len(mine) - len(theirs))


def negamax(board: Board, piece: str, depth: int, alpha: float, beta: float) -> float:
    options = moves(board, piece)
    if depth == 0 or (not options and not moves(board, OTHER[piece])):
        return value(board, piece)
    if not options:
        return -negamax(board, OTHER[piece], depth - 1, -beta, -alpha)
    for r, c in options:
        alpha = max(alpha, -negamax(played(board, r, c, piece), OTHER[piece], depth - 1,
                                    -beta, -alpha))
        if alpha >= beta:
            break
    return alpha


def best_moves(board: Board, piece: str, depth: int,
               options: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """The moves of ``options`` with the best ``depth``-ply value for ``piece``."""
    scored = [(-negamax(played(board, r, c, piece), OTHER[piece], depth - 1, -WIN * 1000,
                        WIN * 1000), (r, c)) for r, c in options]
    top = max(score for score, _ in scored)
    return [move for score, move in scored if score == top]
