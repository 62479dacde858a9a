"""The Python function-synthesis families, by name.

Each family is a function ``family(rng: random.Random) -> FuncSpec``; variants inside a family
(which aggregate, which direction, which constant) are drawn from ``rng`` too, so one family
yields many different functions, each with its own generated test inputs.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from rlhub_code.families import algo, data, numeric, text
from rlhub_code.spec import FuncSpec

Family = Callable[[random.Random], FuncSpec]

FAMILIES: dict[str, Family] = {
    "caesar": text.caesar,
    "words": text.word_transform,
    "count": text.count_words,
    "parse": text.parse_pairs,
    "rle": text.run_length,
    "roman": text.roman,
    "chunks": data.chunks,
    "groupby": data.group_by,
    "sortkey": data.sort_words,
    "intervals": data.intervals,
    "matrix": data.matrix,
    "bsearch": data.binary_search,
    "numtheory": numeric.number_theory,
    "base": numeric.base_conversion,
    "dates": numeric.dates,
    "coins": algo.coin_change,
    "subseq": algo.subsequences,
    "editdist": algo.edit_distance,
    "grid": algo.grid_paths,
}


def family(name: str) -> Family:
    """The family ``name``; an unknown name lists the known ones."""
    if name not in FAMILIES:
        raise KeyError(f"unknown python family {name!r}; expected one of {sorted(FAMILIES)}")
    return FAMILIES[name]
