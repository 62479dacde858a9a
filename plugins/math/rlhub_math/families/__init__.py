"""The generator of every (family, level): a function ``random.Random -> Problem``.

Imported only when a domain is built (never at listing). ``rlhub_math.catalog`` holds the matching
static table of summaries and tags; a test checks that the two agree.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from rlhub_math.families import (
    algebra,
    arithmetic,
    counting,
    explog,
    geometry,
    matrices,
    numbertheory,
    polys,
    rationals,
    sequences,
    statistics,
    units,
    wordproblems,
)
from rlhub_math.problem import Problem

Generator = Callable[[random.Random], Problem]

GENERATORS: dict[tuple[str, int], Generator] = {
    ("arithmetic", 1): arithmetic.level1,
    ("arithmetic", 2): arithmetic.level2,
    ("arithmetic", 3): arithmetic.level3,
    ("fractions", 1): rationals.fractions_level1,
    ("fractions", 2): rationals.fractions_level2,
    ("fractions", 3): rationals.fractions_level3,
    ("percentages", 1): rationals.percentages_level1,
    ("percentages", 2): rationals.percentages_level2,
    ("linear-equations", 1): algebra.linear_level1,
    ("linear-equations", 2): algebra.linear_level2,
    ("linear-equations", 3): algebra.linear_level3,
    ("linear-systems", 1): algebra.systems_level1,
    ("linear-systems", 2): algebra.systems_level2,
    ("inequalities", 1): algebra.inequalities_level1,
    ("inequalities", 2): algebra.inequalities_level2,
    ("quadratics", 1): polys.quadratics_level1,
    ("quadratics", 2): polys.quadratics_level2,
    ("quadratics", 3): polys.quadratics_level3,
    ("polynomials", 1): polys.polynomials_level1,
    ("polynomials", 2): polys.polynomials_level2,
    ("polynomials", 3): polys.polynomials_level3,
    ("exponents-logs", 1): explog.level1,
    ("exponents-logs", 2): explog.level2,
    ("word-problems", 1): wordproblems.level1,
    ("word-problems", 2): wordproblems.level2,
    ("number-theory", 1): numbertheory.level1,
    ("number-theory", 2): numbertheory.level2,
    ("number-theory", 3): numbertheory.level3,
    ("combinatorics", 1): counting.combinatorics_level1,
    ("combinatorics", 2): counting.combinatorics_level2,
    ("combinatorics", 3): counting.combinatorics_level3,
    ("probability", 1): counting.probability_level1,
    ("probability", 2): counting.probability_level2,
    ("probability", 3): counting.probability_level3,
    ("sequences", 1): sequences.level1,
    ("sequences", 2): sequences.level2,
    ("sequences", 3): sequences.level3,
    ("geometry", 1): geometry.level1,
    ("geometry", 2): geometry.level2,
    ("geometry", 3): geometry.level3,
    ("unit-conversion", 1): units.level1,
    ("unit-conversion", 2): units.level2,
    ("statistics", 1): statistics.level1,
    ("statistics", 2): statistics.level2,
    ("matrices", 1): matrices.level1,
    ("matrices", 2): matrices.level2,
}


def generator(family: str, level: int) -> Generator:
    """The generator for ``family`` at ``level``; a clear error names what exists."""
    try:
        return GENERATORS[(family, level)]
    except KeyError:
        known = sorted({f"{f}-l{lv}" for f, lv in GENERATORS})
        raise KeyError(
            f"rlhub-math: expected a known family and level, found {family}-l{level}; "
            f"known: {', '.join(known)}"
        ) from None
