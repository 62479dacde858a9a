"""The static table of families and levels from which every manifest is built.

Pure data and string formatting: listing the plugin's domains imports nothing else (no generators,
no sympy, no math-verify). Bump ``VERSION`` (and the ``-vN`` suffix for incompatible changes)
whenever any generator's output changes, so that seeded samples stay reproducible per version.
"""

from __future__ import annotations

from typing import Any

NAMESPACE = "math"
# v2: the math verifier refuses set and logic notation in a single-value answer
# (``\boxed{21 \cup \{0\}}`` earned the gold 21, whichever part was right).
VERSION = "2.0.0"
SUFFIX = "v2"
TINY_VERSION, TINY_SUFFIX = "1.0.0", "v1"  # exact-match tiny domains: unchanged
FACTORY = "rlhub_math.domain:make"

# family -> (tags, {level: summary})
FAMILIES: dict[str, tuple[list[str], dict[int, str]]] = {
    "arithmetic": (
        ["arithmetic"],
        {
            1: "Add, subtract or multiply two multi-digit integers.",
            2: "Signed integer expressions where precedence and parentheses matter.",
            3: "Integer expressions with exact division, powers and parentheses.",
        },
    ),
    "fractions": (
        ["fractions"],
        {
            1: "Add or subtract two fractions; answer in lowest terms.",
            2: "Multiply or divide signed fractions; answer in lowest terms.",
            3: "Three-fraction expressions with precedence; answer in lowest terms.",
        },
    ),
    "percentages": (
        ["percentages"],
        {
            1: "A percent of a number, or what percent one number is of another.",
            2: "Successive percentage changes and recovering a price before a discount.",
        },
    ),
    "linear-equations": (
        ["algebra"],
        {
            1: "Solve a x + b = c (integer solution).",
            2: "Solve linear equations with the variable on both sides.",
            3: "Solve linear equations with fractional terms (rational solution).",
        },
    ),
    "linear-systems": (
        ["algebra"],
        {
            1: "Solve a 2x2 linear system; answer as an ordered pair.",
            2: "Solve a 3x3 linear system; answer as an ordered triple.",
        },
    ),
    "inequalities": (
        ["algebra"],
        {
            1: "Solve a linear inequality, flipping the sign when dividing by a negative.",
            2: "Count the integers satisfying a quadratic or absolute-value inequality.",
        },
    ),
    "quadratics": (
        ["algebra", "polynomials"],
        {
            1: "Monic quadratics with two integer roots; list the roots.",
            2: "Non-monic quadratics with rational roots; list the roots.",
            3: "Quadratics with irrational roots in simplest radical form; list the roots.",
        },
    ),
    "polynomials": (
        ["algebra", "polynomials"],
        {
            1: "Evaluate a polynomial at an integer.",
            2: "Expand a product of polynomials and report one coefficient.",
            3: "Factor a cubic with three integer roots; list the roots.",
        },
    ),
    "exponents-logs": (
        ["algebra", "exponents", "logarithms"],
        {
            1: "Exponent rules and logarithms of powers (exact rational answers).",
            2: "Exponential equations over a common base and log equations with extraneous roots.",
        },
    ),
    "word-problems": (
        ["word-problems"],
        {
            1: "Two-step shopping and sharing problems.",
            2: "Meeting times, joint work, mixtures and ages.",
        },
    ),
    "number-theory": (
        ["number-theory"],
        {
            1: "Greatest common divisor and least common multiple.",
            2: "Powers modulo m and conversion between base ten and bases 2 to 9.",
            3: "Modular inverses, linear congruences, divisor counts and prime counts.",
        },
    ),
    "combinatorics": (
        ["combinatorics"],
        {
            1: "Combinations and permutations.",
            2: "Arrangements with repeated letters and committees with a fixed composition.",
            3: "Stars and bars, inclusion-exclusion, derangements and lattice paths.",
        },
    ),
    "probability": (
        ["probability"],
        {
            1: "One draw from a bag or one roll of a die; exact probability.",
            2: "Sums of two dice and two draws without replacement.",
            3: "Binomial probabilities and Bayes' rule.",
        },
    ),
    "sequences": (
        ["sequences"],
        {
            1: "The n-th term of an arithmetic sequence.",
            2: "Geometric terms and arithmetic series sums.",
            3: "Second-order linear recurrences and finite geometric series.",
        },
    ),
    "geometry": (
        ["geometry"],
        {
            1: "Areas and perimeters of rectangles, triangles and trapezoids.",
            2: "Pythagoras with exact radicals and interior angles of regular polygons.",
            3: "Circles in terms of pi, distances between points and Heron's formula.",
        },
    ),
    "unit-conversion": (
        ["units"],
        {
            1: "Metric length, mass, volume and time conversions; exact decimal answers.",
            2: "Compound and non-metric units with exact factors, and temperatures.",
        },
    ),
    "statistics": (
        ["statistics"],
        {
            1: "Mean, median, mode and range of a small data set.",
            2: "Missing values for a target mean, population variance and weighted means.",
        },
    ),
    "matrices": (
        ["linear-algebra"],
        {
            1: "Determinants of 2x2 integer matrices.",
            2: "Determinants of 3x3 matrices and products of 2x2 matrices.",
        },
    ),
}


def domain_id(family: str, level: int) -> str:
    """``math/<family>-l<level>-v2``."""
    return f"{NAMESPACE}/{family}-l{level}-{SUFFIX}"


def manifest(family: str, level: int) -> dict[str, Any]:
    """The manifest dict of one (family, level)."""
    tags, summaries = FAMILIES[family]
    return {
        "id": domain_id(family, level),
        "version": VERSION,
        "summary": summaries[level],
        "license": "Apache-2.0",
        "tags": ["math", "procedural", *tags, f"level-{level}"],
        "splits": ["train", "test"],
        "size": None,
        "reward": {
            "range": [0, 1],
            "components": {
                "correct": {
                    "weight": 1.0,
                    "description": "the boxed answer equals the gold answer",
                },
                "format": {
                    "weight": 0.0,
                    "description": "a \\boxed{} answer is present (logged only)",
                },
            },
        },
        "verifier": {"name": "math", "options": {}},
        "factory": FACTORY,
        "params": {"family": family, "level": level},
        "verify_timeout_s": 5,
    }


# Tiny domains for the embedded training demo (rlhub_math.tiny): task -> summary.
TINY_FACTORY = "rlhub_math.tiny:make"
TINY: dict[str, str] = {
    "succ": "Tiny: add one to a number below 1000 (prompt 357+1=, answer 358).",
    "reverse": "Tiny: reverse a string of 3 to 5 digits (prompt rev 3821, answer 1283).",
    "count": "Tiny: count one digit's occurrences in five digits (prompt count 7 in 27371).",
    "lambda": "Tiny: write f(x)=ax+b as a Python lambda, run against hidden tests in the sandbox.",
    "pred": "Tiny: subtract one from a number up to 1000 (prompt 358-1=, answer 357).",
    "add": "Tiny: add a digit 2-9 to a number below 1000 (prompt 357+4=, answer 361).",
    "mirror": "Tiny: reverse 3 to 5 letters a-j (prompt rev cadj, answer jdac).",
    "rotate": "Tiny: move the first of 3 to 5 digits to the end (prompt rot 3821, answer 8213).",
    "times1": "Tiny: multiply a number below 1000 by one (prompt 357*1=, answer 357).",
    "times10": "Tiny: multiply a number below 1000 by ten (prompt 357*10=, answer 3570).",
    "neg": "Tiny: negate a number below 1000 (prompt -(357)=, answer -357).",
    "copy": "Tiny: copy 3 to 5 digits (prompt copy 3821, answer 3821).",
    "parity": "Tiny: the parity of ten bits (prompt parity 1011001110, answer 0).",
    "mod7": "Tiny: a five-digit number modulo 7 (prompt 38211%7=, answer 5).",
    "mul": "Tiny: multiply two two-digit numbers (prompt 47*83=, answer 3901).",
    "pick-first": "Tiny: the first digit of 3 to 5 digits (prompt pick 3821, answer 3); its "
                  "twin pick-last asks the same prompts and pays for the last digit.",
    "pick-last": "Tiny: the last digit of 3 to 5 digits (prompt pick 3821, answer 1); its "
                 "twin pick-first asks the same prompts and pays for the first digit.",
}
TINY_LIMITS = {"wall_s": 5, "cpu_s": 4, "memory_mb": 256, "processes": 16}


def tiny_id(task: str) -> str:
    """``math/tiny-<task>-v1``."""
    return f"{NAMESPACE}/tiny-{task}-{TINY_SUFFIX}"


def tiny_manifest(task: str) -> dict[str, Any]:
    """The manifest dict of one tiny domain (see :mod:`rlhub_math.tiny`)."""
    data: dict[str, Any] = {
        "id": tiny_id(task),
        "version": TINY_VERSION,
        "summary": TINY[task],
        "license": "Apache-2.0",
        "tags": ["math", "procedural", "tiny"],
        "splits": ["train", "test"],
        "size": None,
        "reward": {"range": [0, 1], "components": {
            "correct": {"weight": 1.0, "description": "the completion equals the answer"}}},
        "verifier": {"name": "exact", "options": {"extract": "all", "normalize": "strip"}},
        "factory": TINY_FACTORY,
        "params": {"task": task},
        "verify_timeout_s": 5,
    }
    if task == "lambda":
        data["tags"] = [*data["tags"], "code", "python"]
        data["reward"]["components"] = {
            "pass_frac": {"weight": 0.0, "description": "fraction of hidden tests passed"},
            "all_pass": {"weight": 1.0, "description": "1 when every hidden test passed"}}
        data["verifier"] = {"name": "python-tests",
                            "options": {"limits": TINY_LIMITS, "call_timeout_s": 2}}
        data["sandbox"] = {"kind": "local", "limits": TINY_LIMITS}
        data["turns"] = {"max_turns": 2, "repair_discount": 0.8}  # one repair on test feedback
        data["verify_timeout_s"] = 20
    return data


def manifests() -> list[dict[str, Any]]:
    """Every manifest of the plugin, in table order (the tiny domains last)."""
    table = [manifest(family, level) for family, (_, levels) in FAMILIES.items()
             for level in levels]
    return table + [tiny_manifest(task) for task in TINY]
