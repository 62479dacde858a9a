"""Scripted players for the TextArena domains: each shows its game can be won through the bridge.

A player is built from a live episode and called with each observation; it answers with a move.
Players read what the game shows the policy (the board, the feedback); where parsing the rendered
text would only repeat the game's own renderer, they read the same public facts from the
environment's state. Two games need world knowledge a script lacks (Crosswords' clues, LogicPuzzle's
English clues): their players are *oracles* that read the hidden solution, which proves the bridge
pays a won game but says nothing about the game's difficulty; :data:`ORACLES` lists them.
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from duel_players import DUEL_PLAYERS  # noqa: E402,I001 - tests/ is on sys.path

Player = Callable[[str], str]
ORACLES = {"Crosswords", "LogicPuzzle"}


def env_of(episode: Any) -> Any:
    env = episode.game.env
    while hasattr(env, "env"):
        env = env.env
    return env


def make_player(game: str, episode: Any) -> Player:
    return PLAYERS[game](env_of(episode), episode.opening)


def script(moves: Iterator[str]) -> Player:
    """A player that plays a precomputed line, whatever the observations say."""
    return lambda observation: next(moves, "[end]")


# -- search games ---------------------------------------------------------------------------


def guess_the_number(env: Any, opening: str) -> Player:
    bounds = [env.min_number, env.max_number]
    last = [0]

    def play(observation: str) -> str:
        hint = re.findall(r"target number is (higher|lower)", observation)
        if hint and hint[-1] == "higher":
            bounds[0] = last[0] + 1
        elif hint:
            bounds[1] = last[0] - 1
        last[0] = (bounds[0] + bounds[1]) // 2
        return f"[{last[0]}]"
    return play


def pegs(secret: tuple[int, ...], guess: tuple[int, ...]) -> tuple[int, int]:
    black = sum(a == b for a, b in zip(secret, guess))
    common = sum(min(secret.count(d), guess.count(d)) for d in set(guess))
    return black, common - black


def mastermind(env: Any, opening: str) -> Player:
    gs = env.state.game_state
    length, colours, dups = gs["code_length"], gs["num_numbers"], gs["duplicate_numbers"]
    if dups:
        return mastermind_counting(length, colours)
    pool = list(itertools.permutations(range(1, colours + 1), length))
    tried: list[tuple[int, ...]] = []

    def play(observation: str) -> str:
        found = re.search(r"(\d+) black peg\(s\), (\d+) white", observation)
        if found and tried:
            feedback = (int(found[1]), int(found[2]))
            pool[:] = [c for c in pool if pegs(c, tried[-1]) == feedback]
        tried.append(pool[0])
        return "[" + " ".join(map(str, pool[0])) + "]"
    return play


def mastermind_counting(length: int, colours: int) -> Player:
    """With repeats allowed: count each colour with a one-colour guess, then permute."""
    counts: dict[int, int] = {}
    pool: list[tuple[int, ...]] = []
    tried: list[tuple[int, ...]] = []

    def play(observation: str) -> str:
        found = re.search(r"(\d+) black peg\(s\), (\d+) white", observation)
        feedback = (int(found[1]), int(found[2])) if found else None
        if tried and len(counts) < colours and feedback is not None:
            counts[tried[-1][0]] = feedback[0]
        if len(counts) < colours and sum(counts.values()) < length:
            guess = (len(counts) + 1,) * length
        else:
            if not pool:
                bag = [c for c, n in counts.items() for _ in range(n)]
                bag += [len(counts) + 1] * (length - len(bag))
                pool.extend(sorted(set(itertools.permutations(bag))))
            elif feedback is not None:
                pool[:] = [c for c in pool if pegs(c, tried[-1]) == feedback]
            guess = pool[0]
        tried.append(guess)
        return "[" + " ".join(map(str, guess)) + "]"
    return play


def minesweeper(env: Any, opening: str) -> Player:
    """Single-cell and subset deductions; when stuck, the cell least likely to hide a mine."""
    def play(observation: str) -> str:
        gs = env.state.game_state
        _, (r, c) = sweep(env.rows, env.cols, env.num_mines, gs["revealed"], gs["grid"])
        return f"[{r} {c}]"
    return play


def sweep(rows: int, cols: int, num_mines: int, revealed: list[list[bool]],
          grid: list[list[int]]) -> tuple[set[tuple[int, int]], tuple[int, int]]:
    """(the cells known to be mines, the cell to reveal next)."""
    def neighbours(r: int, c: int) -> list[tuple[int, int]]:
        return [(r + dr, c + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)
                if (dr or dc) and 0 <= r + dr < rows and 0 <= c + dc < cols]

    hidden = [(r, c) for r, c in itertools.product(range(rows), range(cols)) if not revealed[r][c]]
    if len(hidden) == rows * cols:
        return set(), (rows // 2, cols // 2)
    mines: set[tuple[int, int]] = set()
    safe: set[tuple[int, int]] = set()
    constraints: list[tuple[frozenset, int]] = []
    for _ in range(4):  # propagate until nothing new is found
        constraints = []
        for r, c in itertools.product(range(rows), range(cols)):
            if revealed[r][c]:
                cells = frozenset(p for p in neighbours(r, c) if not revealed[p[0]][p[1]]
                                  and p not in mines and p not in safe)
                count = grid[r][c] - sum(p in mines for p in neighbours(r, c))
                if cells:
                    constraints.append((cells, count))
        for cells, count in constraints:
            (mines if count == len(cells) else safe if count == 0 else set()).update(cells)
        for (a, m), (b, n) in itertools.permutations(constraints, 2):
            if a < b and n - m == len(b - a):
                mines.update(b - a)
            elif a < b and n == m:
                safe.update(b - a)
    if safe:
        return mines, min(safe)
    unknown = [p for p in hidden if p not in mines]
    density = (num_mines - len(mines)) / max(1, len(unknown))
    risk = {p: density for p in unknown}
    for cells, count in constraints:
        for p in cells:
            risk[p] = max(risk[p] if risk[p] != density else 0.0, count / len(cells))
    return mines, min(risk or {p: 0 for p in hidden}, key=lambda p: (risk.get(p, 0.0), p))


# -- puzzles with a visible board -----------------------------------------------------------


def sudoku(env: Any, opening: str) -> Player:
    board = [row[:] for row in env.state.game_state["board"]]
    solve_sudoku(board)
    empties = [(r, c) for r in range(9) for c in range(9)
               if env.state.game_state["board"][r][c] == 0]
    return script(f"[{r + 1} {c + 1} {board[r][c]}]" for r, c in empties)


def solve_sudoku(board: list[list[int]]) -> bool:
    for r, c in itertools.product(range(9), range(9)):
        if board[r][c] == 0:
            used = set(board[r]) | {board[i][c] for i in range(9)} | {
                board[i][j] for i in range(r // 3 * 3, r // 3 * 3 + 3)
                for j in range(c // 3 * 3, c // 3 * 3 + 3)}
            for value in range(1, 10):
                if value not in used:
                    board[r][c] = value
                    if solve_sudoku(board):
                        return True
            board[r][c] = 0
            return False
    return True


def tower_of_hanoi(env: Any, opening: str) -> Player:
    def moves(n: int, a: str, b: str, c: str) -> Iterator[str]:
        if n:
            yield from moves(n - 1, a, c, b)
            yield f"[{a} {c}]"
            yield from moves(n - 1, b, a, c)
    return script(moves(env.num_disks, "A", "B", "C"))


def lights_out(env: Any, opening: str) -> Player:
    size = env.size
    grid = env.state.game_state["grid"]
    cells = [(r, c) for r in range(size) for c in range(size)]
    best = None
    for presses in _lights_out_solutions(grid, size):
        if best is None or len(presses) < len(best):
            best = presses
    return script(f"[{r} {c}]" for r, c in cells if (r, c) in (best or set()))


def _lights_out_solutions(grid: list[list[bool]], size: int) -> Iterator[set[tuple[int, int]]]:
    """Every press set that clears ``grid``: choose the first row, chase the lights down."""
    for first in itertools.product((0, 1), repeat=size):
        lights = [[bool(v) for v in row] for row in grid]
        presses = set()
        for r in range(size):
            for c in range(size):
                if (r == 0 and first[c]) or (r > 0 and lights[r - 1][c]):
                    presses.add((r, c))
                    for dr, dc in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
                        if 0 <= r + dr < size and 0 <= c + dc < size:
                            lights[r + dr][c + dc] = not lights[r + dr][c + dc]
        if not any(any(row) for row in lights):
            yield presses


def frozen_lake(env: Any, opening: str) -> Player:
    grid = env.state.game_state["grid"]
    start, goal = env.state.game_state["player_pos"], env.state.game_state["goal_pos"]
    steps = {"[down]": (1, 0), "[up]": (-1, 0), "[right]": (0, 1), "[left]": (0, -1)}
    path = bfs(start, lambda p: p == goal, lambda p: [
        (move, (p[0] + d[0], p[1] + d[1])) for move, d in steps.items()
        if 0 <= p[0] + d[0] < len(grid) and 0 <= p[1] + d[1] < len(grid)
        and grid[p[0] + d[0]][p[1] + d[1]] != "H"])
    return script(iter(path or []))


def bfs(start: Any, done: Callable[[Any], bool], moves: Callable[[Any], list[tuple[str, Any]]],
        limit: int = 400_000) -> list[str] | None:
    seen = {start: None}
    queue = deque([start])
    while queue and len(seen) < limit:
        state = queue.popleft()
        if done(state):
            path = []
            while seen[state] is not None:
                state, move = seen[state]
                path.append(move)
            return path[::-1]
        for move, nxt in moves(state):
            if nxt not in seen:
                seen[nxt] = (state, move)
                queue.append(nxt)
    return None


def peg_jump(env: Any, opening: str) -> Player:
    board = tuple(env.state.game_state["board"])
    jumps = [(a, b, c) for a, b, c in env.ALLOWED_MOVES] if hasattr(env, "ALLOWED_MOVES") else []

    def moves(state: tuple[bool, ...]) -> list[tuple[str, tuple[bool, ...]]]:
        out = []
        for a, over, to in jumps:
            if state[a] and state[over] and not state[to]:
                nxt = list(state)
                nxt[a], nxt[over], nxt[to] = False, False, True
                out.append((f"[{a} {to}]", tuple(nxt)))
        return out
    return script(iter(dfs(board, lambda s: sum(s) == 1, moves) or []))


def dfs(start: Any, done: Callable[[Any], bool],
        moves: Callable[[Any], list[tuple[str, Any]]]) -> list[str] | None:
    stack, seen = [(start, [])], {start}
    while stack:
        state, path = stack.pop()
        if done(state):
            return path
        for move, nxt in moves(state):
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, move]))
    return None


def fifteen_puzzle(env: Any, opening: str) -> Player:
    board = tuple(v or 0 for row in env.board for v in row)
    goal = (*range(1, 16), 0)
    slide = {"[up]": 4, "[down]": -4, "[left]": 1, "[right]": -1}

    def moves(state: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
        blank = state.index(0)
        out = []
        for move, delta in slide.items():
            tile = blank + delta
            if 0 <= tile < 16 and (delta in (4, -4) or tile // 4 == blank // 4):
                nxt = list(state)
                nxt[blank], nxt[tile] = nxt[tile], 0
                out.append((move, tuple(nxt)))
        return out

    def cost(state: tuple[int, ...]) -> int:
        return sum(abs(i // 4 - (v - 1) // 4) + abs(i % 4 - (v - 1) % 4)
                   for i, v in enumerate(state) if v)
    return script(iter(weighted_astar(board, goal, moves, cost) or []))


def weighted_astar(start: Any, goal: Any, moves: Callable[[Any], list[tuple[str, Any]]],
                   cost: Callable[[Any], int], weight: int = 3, limit: int = 300_000,
                   done: Callable[[Any], bool] | None = None) -> list[str] | None:
    frontier = [(weight * cost(start), 0, start)]
    came: dict[Any, Any] = {start: None}
    depth = {start: 0}
    while frontier and len(came) < limit:
        _, _, state = heapq.heappop(frontier)
        if (done(state) if done else state == goal):
            path = []
            while came[state] is not None:
                state, move = came[state]
                path.append(move)
            return path[::-1]
        for move, nxt in moves(state):
            if nxt not in depth or depth[state] + 1 < depth[nxt]:
                depth[nxt] = depth[state] + 1
                came[nxt] = (state, move)
                heapq.heappush(frontier, (depth[nxt] + weight * cost(nxt), len(came), nxt))
    return None


def rush_hour(env: Any, opening: str) -> Player:
    size = env.BOARD_SIZE
    cars = {v.vid: (v.row, v.col, v.length, v.horizontal)
            for v in env.state.game_state["vehicles"].values()}
    names = sorted(cars)
    start = tuple(cars[n][:2] for n in names)

    def moves(state: tuple[tuple[int, int], ...]) -> list[tuple[str, Any]]:
        taken = {cell for i, n in enumerate(names) for cell in _cells(state[i], cars[n])}
        out = []
        for i, name in enumerate(names):
            (r, c), (_, _, length, horizontal) = state[i], cars[name]
            for sign, step in (("+", 1), ("-", -1)):
                dr, dc = (0, step) if horizontal else (step, 0)
                front = (r + dr * length, c + dc * length) if step > 0 else (r + dr, c + dc)
                if 0 <= front[0] < size and 0 <= front[1] < size and front not in taken:
                    nxt = list(state)
                    nxt[i] = (r + dr, c + dc)
                    out.append((f"[{name}{sign}]", tuple(nxt)))
        return out
    x = names.index("X")
    return script(iter(bfs(start, lambda s: s[x][1] >= size - cars["X"][2], moves) or []))


def _cells(pos: tuple[int, int], car: tuple[int, int, int, bool]) -> list[tuple[int, int]]:
    _, _, length, horizontal = car
    return [(pos[0], pos[1] + i) if horizontal else (pos[0] + i, pos[1]) for i in range(length)]


def sokoban(env: Any, opening: str) -> Player:
    fixed, room = env.room_fixed, env.room_state
    cells = list(itertools.product(range(fixed.shape[0]), range(fixed.shape[1])))
    walls = {p for p in cells if fixed[p] == 0}
    goals = {p for p in cells if fixed[p] == 2}
    boxes = frozenset((r, c) for r in range(room.shape[0]) for c in range(room.shape[1])
                      if room[r, c] in (3, 4))
    player = tuple(int(v) for v in env.player_position)
    steps = {"[up]": (-1, 0), "[down]": (1, 0), "[left]": (0, -1), "[right]": (0, 1)}

    def moves(state: tuple[tuple[int, int], frozenset]) -> list[tuple[str, Any]]:
        (r, c), bx = state
        out = []
        for move, (dr, dc) in steps.items():
            nxt = (r + dr, c + dc)
            if nxt in walls:
                continue
            if nxt in bx:
                beyond = (nxt[0] + dr, nxt[1] + dc)
                if beyond in walls or beyond in bx:
                    continue
                out.append((move, (nxt, (bx - {nxt}) | {beyond})))
            else:
                out.append((move, (nxt, bx)))
        return out
    def cost(state: tuple[tuple[int, int], frozenset]) -> int:
        return sum(min(abs(b[0] - g[0]) + abs(b[1] - g[1]) for g in goals) for b in state[1])

    found = weighted_astar((player, boxes), None, moves, cost, weight=2, limit=40_000,
                           done=lambda s: s[1] <= goals)
    return script(iter(found or []))



def slitherlink(env: Any, opening: str) -> Player:
    rows, cols, clues = env.R, env.C, env.clues
    for r0, c0 in itertools.product(range(rows), range(cols)):
        for r1, c1 in itertools.product(range(r0 + 1, rows + 1), range(c0 + 1, cols + 1)):
            h = {(r, c) for r in (r0, r1) for c in range(c0, c1)}
            v = {(r, c) for r in range(r0, r1) for c in (c0, c1)}
            if all(clue is None or clue == sum(e in h for e in ((r, c), (r + 1, c)))
                   + sum(e in v for e in ((r, c), (r, c + 1)))
                   for r, row in enumerate(clues) for c, clue in enumerate(row)):
                moves = [f"[h {r} {c}]" for r, c in sorted(h)] + [f"[v {r} {c}]" for r, c in sorted(v)]
                return script(iter(moves))
    return script(iter([]))


def countdown(env: Any, opening: str) -> Player:
    def search(numbers: list[int], path: list[str]) -> list[str] | None:
        if env.target in numbers:
            return path
        for i, j in itertools.permutations(range(len(numbers)), 2):
            a, b = numbers[i], numbers[j]
            for op, value in (("+", a + b), ("-", a - b), ("*", a * b),
                              ("/", a // b if b and a % b == 0 else None)):
                if value is None or value <= 0 or (op in "+*" and i > j):
                    continue
                rest = [n for k, n in enumerate(numbers) if k not in (i, j)]
                found = search([*rest, value], [*path, f"[{i} {j} {op}]"])
                if found is not None:
                    return found
        return None
    return script(iter(search(list(env.numbers), []) or []))


def cryptarithm(env: Any, opening: str) -> Player:
    """Column-by-column backtracking from the units digit, with carries."""
    words = [*env.addends, env.result]
    width = max(map(len, words))
    columns = [[w[-1 - i] for w in env.addends if i < len(w)] for i in range(width)]
    result = env.result.rjust(width + 1, "0")[::-1]

    def solve(col: int, carry: int, mapping: dict[str, int]) -> dict[str, int] | None:
        if col == len(result):
            return mapping if carry == 0 else None
        free = [ch for ch in dict.fromkeys(columns[col] if col < width else []) if ch not in mapping]
        for digits in itertools.permutations(set(range(10)) - set(mapping.values()), len(free)):
            trial = {**mapping, **dict(zip(free, digits))}
            if any(trial.get(w[0]) == 0 for w in words):
                continue
            total = carry + sum(trial[ch] for ch in (columns[col] if col < width else []))
            target = result[col]
            digit = 0 if target == "0" else trial.get(target)
            if digit is None and total % 10 not in trial.values():
                found = solve(col + 1, total // 10, {**trial, target: total % 10})
            elif digit == total % 10:
                found = solve(col + 1, total // 10, trial)
            else:
                found = None
            if found is not None and not any(found.get(w[0]) == 0 for w in words):
                return found
        return None
    mapping = solve(0, 0, {}) or {}
    return script(iter(f"[{ch} {d}]" for ch, d in sorted(mapping.items())))


def game_2048(env: Any, opening: str) -> Player:
    """Greedy corner strategy: the move that keeps the most empty cells, preferring down/left."""
    order = ["[down]", "[left]", "[right]", "[up]"]

    def play(observation: str) -> str:
        board = env.state.game_state["board"]
        scored = []
        for rank, move in enumerate(order):
            after, moved = _slide(board, move)
            if moved:
                empty = sum(v == 0 for row in after for v in row)
                corner = after[-1][0]
                scored.append((-(empty + (corner == max(max(r) for r in after)) * 2), rank, move))
        return min(scored)[2] if scored else "[up]"
    return play


def _slide(board: list[list[int]], move: str) -> tuple[list[list[int]], bool]:
    n = len(board)
    lines = {"[left]": [[(r, c) for c in range(n)] for r in range(n)],
             "[right]": [[(r, c) for c in reversed(range(n))] for r in range(n)],
             "[up]": [[(r, c) for r in range(n)] for c in range(n)],
             "[down]": [[(r, c) for r in reversed(range(n))] for c in range(n)]}[move]
    out = [row[:] for row in board]
    for cells in lines:
        tiles = [board[r][c] for r, c in cells if board[r][c]]
        merged: list[int] = []
        while tiles:
            if len(tiles) > 1 and tiles[0] == tiles[1]:
                merged.append(tiles[0] * 2)
                tiles = tiles[2:]
            else:
                merged.append(tiles.pop(0))
        for (r, c), value in zip(cells, merged + [0] * (n - len(merged))):
            out[r][c] = value
    return out, out != board


# -- chance and score games ------------------------------------------------------------------


def blackjack(env: Any, opening: str) -> Player:
    return lambda observation: ("[Hit]" if env._hand_score(env.state.game_state["player_hand"]) < 17
                                else "[Stand]")


def secretary(env: Any, opening: str) -> Player:
    seen: list[float] = []

    def play(observation: str) -> str:
        seen.append(float(re.findall(r"current value is (\d+\.\d+)", observation)[-1]))
        explore = int(env.N / 2.718)
        return "[accept]" if len(seen) > explore and seen[-1] > max(seen[:explore] or [0]) \
            else "[continue]"
    return play


def set_game(env: Any, opening: str) -> Player:
    from textarena.envs.Set.env import _is_set

    def play(observation: str) -> str:
        board = env.state.game_state["board"]
        for trio in itertools.combinations(range(len(board)), 3):
            if _is_set([board[i] for i in trio]):
                return "[" + ", ".join(str(i + 1) for i in trio) + "]"
        return "[1, 2, 3]"
    return play


def three_card_monte(env: Any, opening: str) -> Player:
    ball = re.search(r"Ball starts: (.*)", opening)[1].split().index("[X]")
    for a, b in re.findall(r"swapped cups (\d+) and (\d+)", opening):
        a, b = int(a), int(b)
        ball = b if ball == a else a if ball == b else ball
    return script(iter([f"[{ball}]"]))


# -- oracles ------------------------------------------------------------------------------------


def crosswords(env: Any, opening: str) -> Player:
    solution = env.state.game_state["solution"]
    return script(f"[{r} {c} {ch}]" for r, row in enumerate(solution)
                  for c, ch in enumerate(row) if ch != ".")


def logic_puzzle(env: Any, opening: str) -> Player:
    marks = [f"[{row} {col} {mark}]" for grid in env.game_board_solution.values()
             for row, cols in grid.items() for col, mark in cols.items() if mark]
    return script(iter(marks))


PLAYERS: dict[str, Callable[[Any, str], Player]] = {
    "2048": game_2048, "Blackjack": blackjack, "Countdown": countdown,
    "Crosswords": crosswords, "Cryptarithm": cryptarithm, "FifteenPuzzle": fifteen_puzzle,
    "FrozenLake": frozen_lake, "GuessTheNumber": guess_the_number, "LightsOut": lights_out,
    "LogicPuzzle": logic_puzzle, "Mastermind": mastermind, "Minesweeper": minesweeper,
    "PegJump": peg_jump, "RushHour": rush_hour, "Secretary": secretary, "Set": set_game,
    "Slitherlink": slitherlink, "Sokoban": sokoban, "Sudoku": sudoku,
    "ThreeCardMonte": three_card_monte, "TowerOfHanoi": tower_of_hanoi,
    **DUEL_PLAYERS,
}


# -- playing -----------------------------------------------------------------------------------


def play(domain: Any, task: Any, make: Callable[[Any], Player]) -> Any:
    """Play one episode of ``task`` with the player ``make(episode)``; the final StepResult."""
    episode = domain.start(task)
    player = make(episode)
    observation = episode.opening
    for _ in range(domain.manifest.max_turns):
        result = episode.step(player(observation))
        if result.done:
            return result
        observation = result.observation
    raise AssertionError(f"{domain.id}: the episode did not end within max_turns")
