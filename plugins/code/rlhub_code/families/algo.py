"""Algorithm families: coin change, subsequences, edit distance, shortest paths on grids."""

from __future__ import annotations

import random

from rlhub_code.families.rand import fill, ints, text
from rlhub_code.spec import FuncSpec

MIN_COINS = '''
    def min_coins(coins: list[int], amount: int) -> int:
        best = [0] + [-1] * amount
        for total in range(1, amount + 1):
            options = [best[total - c] for c in coins if c <= total and best[total - c] >= 0]
            best[total] = min(options) + 1 if options else -1
        return best[amount]
'''
COIN_WAYS = '''
    def coin_ways(coins: list[int], amount: int) -> int:
        ways = [1] + [0] * amount
        for c in coins:
            for total in range(c, amount + 1):
                ways[total] += ways[total - c]
        return ways[amount]
'''


def coin_change(rng: random.Random) -> FuncSpec:
    """Fewest coins for an amount, or the number of ways to make it."""
    cases = []
    for _ in range(10):
        coins = sorted(set(ints(rng, 1, 4, 2, 15)) | ({1} if rng.random() < 0.3 else set()))
        cases.append((coins, rng.randint(0, 60)))
    if rng.random() < 0.5:
        return FuncSpec("min_coins", "def min_coins(coins: list[int], amount: int) -> int", """
            `coins` lists distinct positive coin values, each available without limit. Return
            the fewest coins whose values add up to exactly `amount`, or -1 when it cannot be
            done (0 coins make amount 0).""", fill(MIN_COINS), cases)
    return FuncSpec("coin_ways", "def coin_ways(coins: list[int], amount: int) -> int", """
        `coins` lists distinct positive coin values, each available without limit. Return the
        number of different multisets of coins that add up to exactly `amount` (order does not
        matter; amount 0 has one way, the empty one).""", fill(COIN_WAYS), cases)


SUBSEQ_VARIANTS = {
    "longest_increasing": ("def longest_increasing(xs: list[int]) -> int",
                           "Return the length of the longest strictly increasing subsequence of "
                           "`xs` (not necessarily contiguous).", '''
        import bisect


        def longest_increasing(xs: list[int]) -> int:
            tails: list[int] = []
            for x in xs:
                i = bisect.bisect_left(tails, x)
                tails[i:i + 1] = [x]
            return len(tails)
        '''),
    "longest_non_decreasing": ("def longest_non_decreasing(xs: list[int]) -> int",
                               "Return the length of the longest non-decreasing subsequence of "
                               "`xs` (not necessarily contiguous; equal neighbours are allowed).",
                               '''
        import bisect


        def longest_non_decreasing(xs: list[int]) -> int:
            tails: list[int] = []
            for x in xs:
                i = bisect.bisect_right(tails, x)
                tails[i:i + 1] = [x]
            return len(tails)
        '''),
    "common_subsequence": ("def common_subsequence(a: str, b: str) -> int",
                           "Return the length of the longest common subsequence of the strings "
                           "`a` and `b` (characters in order, not necessarily contiguous).", '''
        def common_subsequence(a: str, b: str) -> int:
            prev = [0] * (len(b) + 1)
            for ca in a:
                cur = [0]
                for j, cb in enumerate(b):
                    cur.append(prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j]))
                prev = cur
            return prev[-1]
        '''),
}


def subsequences(rng: random.Random) -> FuncSpec:
    """Longest increasing / non-decreasing / common subsequence lengths."""
    name = rng.choice(sorted(SUBSEQ_VARIANTS))
    signature, description, template = SUBSEQ_VARIANTS[name]
    if name == "common_subsequence":
        cases = [(text(rng, 0, 10, "abcd"), text(rng, 0, 10, "abcd")) for _ in range(10)]
    else:
        cases = [(ints(rng, 0, 14, 0, 9),) for _ in range(9)] + [([3, 3, 3],)]
    return FuncSpec(name, signature, description, fill(template), cases)


EDIT_DISTANCE = '''
    def edit_distance(a: str, b: str) -> int:
        prev = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            cur = [i]
            for j, cb in enumerate(b, 1):
                swap = prev[j - 1] + (0 if ca == cb else __SUB__)
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, swap))
            prev = cur
        return prev[-1]
'''


def edit_distance(rng: random.Random) -> FuncSpec:
    """Levenshtein distance with a substitution cost of 1 or 2."""
    sub = rng.choice([1, 2])
    cases = [(text(rng, 0, 9, "abcde"), text(rng, 0, 9, "abcde")) for _ in range(9)]
    cases.append(("kitten", "sitting"))
    cost = "1 (the Levenshtein distance)" if sub == 1 else "2 (so a substitution costs as much " \
        "as a deletion plus an insertion)"
    return FuncSpec("edit_distance", "def edit_distance(a: str, b: str) -> int", f"""
        Return the minimum cost of turning `a` into `b` where inserting or deleting one character
        costs 1 and substituting one character for another costs {cost}.""",
                    fill(EDIT_DISTANCE, sub=sub), cases)


GRID_BFS = '''
    from collections import deque


    def shortest_path(grid: list[str]) -> int:
        rows, cols = len(grid), len(grid[0])
        start = next((r, c) for r in range(rows) for c in range(cols) if grid[r][c] == "S")
        steps = {start: 0}
        queue = deque([start])
        while queue:
            r, c = queue.popleft()
            if grid[r][c] == "E":
                return steps[(r, c)]
            for dr, dc in __MOVES__:
                nr, nc = r + dr, c + dc
                if 0 <= nr < rows and 0 <= nc < cols and grid[nr][nc] != "#" \\
                        and (nr, nc) not in steps:
                    steps[(nr, nc)] = steps[(r, c)] + 1
                    queue.append((nr, nc))
        return -1
'''
FOUR = [(1, 0), (-1, 0), (0, 1), (0, -1)]
EIGHT = FOUR + [(1, 1), (1, -1), (-1, 1), (-1, -1)]


def _grid(rng: random.Random) -> list[str]:
    rows, cols = rng.randint(2, 6), rng.randint(2, 7)
    cells = [["#" if rng.random() < 0.3 else "." for _ in range(cols)] for _ in range(rows)]
    spots = rng.sample([(r, c) for r in range(rows) for c in range(cols)], 2)
    for (r, c), mark in zip(spots, "SE"):
        cells[r][c] = mark
    return ["".join(row) for row in cells]


def grid_paths(rng: random.Random) -> FuncSpec:
    """Breadth-first search for the shortest S-to-E path on a small grid."""
    diagonal = rng.random() < 0.5
    moves = ("up, down, left, right or diagonally (8 neighbours)" if diagonal
             else "up, down, left or right (no diagonal moves)")
    return FuncSpec("shortest_path", "def shortest_path(grid: list[str]) -> int", f"""
        `grid` is a list of equal-length strings: `.` is open, `#` is a wall, and exactly one
        `S` (start) and one `E` (end) are open cells. Each step moves to a neighbouring open
        cell {moves}. Return the fewest steps from S to E, or -1 when E cannot be reached.""",
                    fill(GRID_BFS, moves=EIGHT if diagonal else FOUR),
                    [(_grid(rng),) for _ in range(10)])
