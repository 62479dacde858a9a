"""Collection families: chunked aggregates, group-by, sorting with keys, intervals, matrices,
binary search."""

from __future__ import annotations

import random

from rlhub_code.families.rand import fill, ints, word, words
from rlhub_code.spec import FuncSpec

AGGREGATES = {"sum": "sum", "max": "max", "min": "min"}


def chunks(rng: random.Random) -> FuncSpec:
    """Aggregate consecutive chunks of size ``k`` (the last may be shorter)."""
    agg = rng.choice(sorted(AGGREGATES))
    solution = fill(f'''
        def chunk_{agg}(xs: list[int], k: int) -> list[int]:
            return [{agg}(xs[i:i + k]) for i in range(0, len(xs), k)]
    ''')
    cases = [(ints(rng, 0, 12, -50, 50), rng.randint(1, 5)) for _ in range(9)] + [([7], 3)]
    return FuncSpec(f"chunk_{agg}", f"def chunk_{agg}(xs: list[int], k: int) -> list[int]", f"""
        Split `xs` into consecutive chunks of `k` elements (the last chunk may be shorter; k >= 1)
        and return the {agg} of each chunk, in order. An empty list gives an empty list.""",
                    solution, cases)


GROUP_OPS = {
    "sum": ("the sum of its amounts", "totals[key] = totals.get(key, 0) + amount"),
    "count": ("how many records it has", "totals[key] = totals.get(key, 0) + 1"),
    "max": ("its largest amount", "totals[key] = max(totals.get(key, amount), amount)"),
}


def group_by(rng: random.Random) -> FuncSpec:
    """Aggregate ``(key, amount)`` records into a dict."""
    op = rng.choice(sorted(GROUP_OPS))
    phrase, update = GROUP_OPS[op]
    solution = fill(f'''
        def group_{op}(records: list[tuple[str, int]]) -> dict[str, int]:
            totals: dict[str, int] = {{}}
            for key, amount in records:
                {update}
            return dict(sorted(totals.items()))
    ''')
    keys = [word(rng, 1, 2) for _ in range(4)]
    cases = [([(rng.choice(keys), rng.randint(-10, 60)) for _ in range(rng.randint(0, 8))],)
             for _ in range(10)]
    return FuncSpec(f"group_{op}",
                    f"def group_{op}(records: list[tuple[str, int]]) -> dict[str, int]", f"""
        `records` is a list of `(key, amount)` tuples. Return a dict mapping each key that occurs
        to {phrase}, with the keys in sorted order.""", solution, cases)


SORT_VARIANTS = {
    "by_length_then_alpha": ("by length, shortest first, and words of equal length "
                             "alphabetically", "key=lambda w: (len(w), w)"),
    "by_length_desc_then_alpha": ("by length, longest first, and words of equal length "
                                  "alphabetically", "key=lambda w: (-len(w), w)"),
    "by_last_letter": ("by their last letter, keeping the original order of words that end "
                       "with the same letter", "key=lambda w: w[-1]"),
    "by_vowel_count": ("by how many vowels (a, e, i, o, u) they contain, fewest first, and "
                       "then alphabetically", "key=lambda w: (sum(c in 'aeiou' for c in w), w)"),
}


def sort_words(rng: random.Random) -> FuncSpec:
    """Sort words with a composite key."""
    variant = rng.choice(sorted(SORT_VARIANTS))
    phrase, key = SORT_VARIANTS[variant]
    solution = fill(f'''
        def sort_words(words: list[str]) -> list[str]:
            return sorted(words, {key})
    ''')
    cases = [(words(rng, 0, 9),) for _ in range(9)] + [(["bb", "a", "ab", "ba"],)]
    return FuncSpec("sort_words", "def sort_words(words: list[str]) -> list[str]", f"""
        Return a new list with the (non-empty, lowercase) strings of `words` sorted {phrase}.
        Duplicates are kept.""", solution, cases)


def intervals(rng: random.Random) -> FuncSpec:
    """Merge closed integer intervals that overlap or lie within ``gap`` of each other."""
    gap = rng.randint(0, 2)
    solution = fill('''
        def merge_intervals(intervals: list[list[int]]) -> list[list[int]]:
            merged: list[list[int]] = []
            for lo, hi in sorted(intervals):
                if merged and lo - merged[-1][1] <= __GAP__:
                    merged[-1][1] = max(merged[-1][1], hi)
                else:
                    merged.append([lo, hi])
            return merged
    ''', gap=gap)

    def case() -> tuple[list[list[int]]]:
        out = []
        for _ in range(rng.randint(0, 7)):
            lo = rng.randint(0, 40)
            out.append([lo, lo + rng.randint(0, 6)])
        return (out,)

    rule = ("overlap or touch" if gap == 0 else
            f"overlap or are separated by a gap of at most {gap} (e.g. [1, 3] and [{3 + gap}, 9] "
            "merge)")
    return FuncSpec("merge_intervals",
                    "def merge_intervals(intervals: list[list[int]]) -> list[list[int]]", f"""
        `intervals` holds closed intervals `[lo, hi]` of integers (lo <= hi), in any order.
        Merge every two intervals that {rule}, repeatedly, and return the merged intervals as
        `[lo, hi]` lists sorted by `lo`.""", solution, [case() for _ in range(10)])


MATRIX_VARIANTS = {
    "transpose": ("Return the transpose of the rectangular matrix `m` (rows become columns).",
                  "return [list(row) for row in zip(*m)]"),
    "rotate_clockwise": ("Return the rectangular matrix `m` rotated 90 degrees clockwise.",
                         "return [list(row) for row in zip(*m[::-1])]"),
    "spiral_order": ("Return the elements of the rectangular matrix `m` in clockwise spiral "
                     "order, starting at the top-left corner and going right first.",
                     "out = []\n    while m:\n        out += m[0]\n"
                     "        m = [list(r) for r in zip(*m[1:])][::-1]\n    return out"),
}


def matrix(rng: random.Random) -> FuncSpec:
    """Transpose, rotate or walk a rectangular matrix."""
    name = rng.choice(sorted(MATRIX_VARIANTS))
    description, body = MATRIX_VARIANTS[name]
    returns = "list[int]" if name == "spiral_order" else "list[list[int]]"
    solution = f"def {name}(m: list[list[int]]) -> {returns}:\n    {body}\n"
    cases = []
    for _ in range(9):
        rows, cols = rng.randint(1, 4), rng.randint(1, 4)
        cases.append(([[rng.randint(0, 9) for _ in range(cols)] for _ in range(rows)],))
    return FuncSpec(name, f"def {name}(m: list[list[int]]) -> {returns}",
                    description + " `m` has at least one row and one column.", solution, cases)


BSEARCH_VARIANTS = {
    "lower_bound": ("the index of the first element of `xs` that is >= `x`, or `len(xs)` "
                    "when there is none", "bisect.bisect_left(xs, x)"),
    "upper_bound": ("the index of the first element of `xs` that is > `x`, or `len(xs)` when "
                    "there is none", "bisect.bisect_right(xs, x)"),
    "count_equal": ("how many elements of `xs` equal `x`",
                    "bisect.bisect_right(xs, x) - bisect.bisect_left(xs, x)"),
    "last_at_most": ("the index of the last element of `xs` that is <= `x`, or -1 when there "
                     "is none", "bisect.bisect_right(xs, x) - 1"),
}


def binary_search(rng: random.Random) -> FuncSpec:
    """One of the bisection queries on a sorted list with duplicates."""
    name = rng.choice(sorted(BSEARCH_VARIANTS))
    phrase, expr = BSEARCH_VARIANTS[name]
    solution = f"import bisect\n\n\ndef {name}(xs: list[int], x: int) -> int:\n    return {expr}\n"
    cases = []
    for _ in range(10):
        xs = sorted(ints(rng, 0, 12, 0, 20))
        cases.append((xs, rng.choice(xs) if xs and rng.random() < 0.6 else rng.randint(-2, 22)))
    return FuncSpec(name, f"def {name}(xs: list[int], x: int) -> int", f"""
        `xs` is sorted in non-decreasing order and may contain duplicates. Return {phrase}. Aim
        for O(log n) time.""", solution, cases)
