"""Exact rendering helpers and the split assignment."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction as F

import pytest

import rlhub
from rlhub_math.domain import split_of
from rlhub_math.latex import Surd, dec, num, poly, roots, sqrt_parts, tup


@pytest.mark.parametrize(
    ("x", "text"), [(F(3), "3"), (F(-3, 4), "-\\frac{3}{4}"), (F(6, 8), "\\frac{3}{4}")]
)
def test_rationals_render_as_reduced_fractions(x, text):
    assert num(x) == text


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (F(99, 8), "12.375"),
        (F(-7, 20), "-0.35"),
        (F(100), "100"),
        (F(1, 1000), "0.001"),
        (F(3, 40), "0.075"),
    ],
)
def test_terminating_decimals_render_exactly(x, text):
    assert dec(x) == text


def test_a_repeating_decimal_is_refused_with_the_denominator():
    with pytest.raises(
        ValueError, match="expected a terminating decimal, found 1/3 \\(denominator 3\\)"
    ):
        dec(F(1, 3))


@pytest.mark.parametrize(("n", "parts"), [(72, (6, 2)), (1, (1, 1)), (17, (1, 17)), (0, (1, 0))])
def test_square_roots_split_into_a_square_part_and_a_square_free_part(n, parts):
    assert sqrt_parts(n) == parts


@pytest.mark.parametrize(
    ("surd", "text"),
    [
        (Surd.sqrt(72), "6\\sqrt{2}"),
        (Surd.sqrt(F(63, 4)), "\\frac{3\\sqrt{7}}{2}"),
        (Surd.sqrt(16), "4"),
        (Surd(F(-3, 4), F(1, 4), 17), "\\frac{-3 + \\sqrt{17}}{4}"),
        (Surd(F(3), F(-2), 5), "3 - 2\\sqrt{5}"),
        (Surd(F(0), F(-1, 2), 3), "-\\frac{\\sqrt{3}}{2}"),
    ],
)
def test_surds_render_in_simplest_radical_form(surd, text):
    assert surd.latex() == text


def test_polynomials_skip_zero_terms_and_unit_coefficients():
    assert poly([1, -3, 0, -1]) == "x^{3} - 3x^{2} - 1"
    assert poly([-1, 1]) == "-x + 1"
    assert poly([0, 0]) == "0"


def test_roots_are_listed_once_in_increasing_order():
    assert roots([F(3), F(-2), F(1, 2), F(3)]) == "-2, \\frac{1}{2}, 3"
    assert roots([Surd(F(1), F(1), 2), Surd(F(1), F(-1), 2)]) == "1 - \\sqrt{2}, 1 + \\sqrt{2}"
    assert tup([1, -2]) == "(1, -2)"


def test_about_one_problem_in_eight_belongs_to_the_test_split():
    share = sum(split_of(f"problem {i}") == "test" for i in range(4000)) / 4000
    assert 0.10 < share < 0.15


@pytest.mark.parametrize(
    "domain_id", ["math/arithmetic-l1-v2", "math/probability-l2-v2", "math/matrices-l1-v2"]
)
def test_train_and_test_problems_never_overlap(domain_id):
    domain = rlhub.registry().get(domain_id)
    train = {t.meta["question"] for t in domain.sample(400, split="train", seed=0)}
    test = {t.meta["question"] for t in domain.sample(100, split="test", seed=0)}
    assert not train & test
    assert all(split_of(q) == "train" for q in train)


def test_listing_the_plugin_imports_no_generator_and_no_heavy_library():
    code = (
        "import sys, rlhub_math.plugin as p; ms = p.rlhub_domains(); "
        "bad = [m for m in ('sympy', 'math_verify', 'numpy', 'torch', 'rlhub_math.families', "
        "'rlhub_math.domain') if m in sys.modules]; print(len(ms), bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split(" ", 1)[1].strip() == "[]", out.stdout
