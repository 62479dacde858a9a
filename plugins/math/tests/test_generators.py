"""Generators: gold answers pass math-verify, near misses fail, values are mathematically right.

``RLHUB_MATH_SEEDS`` sets the number of tasks checked per domain (default 50; `make test` runs 20, the long sweep 200).
"""

from __future__ import annotations

import os
import random
import re
from fractions import Fraction

import pytest

import rlhub
from rlhub_math import catalog
from rlhub_math.families import GENERATORS, generator
from rlhub_math.latex import Surd
from rlhub_math.negatives import near_misses
from rlhub_math.problem import FORM_HINTS

SEEDS = int(os.environ.get("RLHUB_MATH_SEEDS", "50"))
IDS = [d for d in rlhub.registry().ids()
       if d.startswith("math/") and not d.startswith("math/tiny-")]  # tiny: test_tiny.py
FAMILY_LEVELS = sorted(GENERATORS)


def _domain(family: str, level: int):
    return rlhub.registry().get(catalog.domain_id(family, level))


def _problems(family: str, level: int, n: int = SEEDS):
    make = generator(family, level)
    return [make(random.Random(seed)) for seed in range(n)]


def test_the_catalog_and_the_generators_cover_the_same_family_levels():
    listed = {(f, lv) for f, (_, levels) in catalog.FAMILIES.items() for lv in levels}
    assert listed == set(GENERATORS)


def test_the_plugin_lists_over_forty_domains_with_valid_ids():
    assert 40 <= len(IDS) <= 50
    pattern = re.compile(r"^math/[A-Za-z0-9][A-Za-z0-9_.+-]*-v[0-9]+$")
    assert all(pattern.match(i) for i in IDS)
    assert len({i.split("-l")[0] for i in IDS}) >= 15


def test_an_unknown_family_level_names_what_exists():
    with pytest.raises(KeyError, match=r"found geometry-l9; known: arithmetic-l1, arithmetic-l2"):
        generator("geometry", 9)


@pytest.mark.parametrize("domain_id", IDS)
def test_gold_earns_full_reward_and_near_misses_earn_none(domain_id):
    domain = rlhub.registry().get(domain_id)
    for index in range(SEEDS):
        split = "test" if index % 5 == 0 else "train"
        task = domain.task(split, 7, index)
        assert domain.verify(task, task.gold).reward == 1.0, (task.prompt, task.gold)
        problem = domain.draw(
            rlhub.task.task_rng(domain_id, domain.manifest.version, split, 7, index), split
        )
        assert problem.answer == task.answer
        for wrong in near_misses(problem):
            score = domain.verify(task, f"Therefore \\boxed{{{wrong}}}.")
            assert score.reward == 0.0, (task.prompt, task.answer, wrong)
            assert score.components["format"] == 1.0


@pytest.mark.parametrize(("family", "level"), FAMILY_LEVELS)
def test_gold_is_a_worked_completion_ending_in_the_boxed_answer(family, level):
    for problem in _problems(family, level, 20):
        lines = problem.gold().splitlines()
        assert len(lines) >= 2
        assert lines[-1] == f"The answer is \\boxed{{{problem.answer}}}."
        assert FORM_HINTS[problem.form] in problem.prompt()


@pytest.mark.parametrize(("family", "level"), FAMILY_LEVELS)
def test_each_domain_draws_varied_problems(family, level):
    questions = [p.question for p in _problems(family, level, 200)]
    assert len(set(questions)) >= 120, f"{family}-l{level}: {len(set(questions))} distinct of 200"


def _sympy(latex: str):
    from latex2sympy2_extended import latex2sympy

    return latex2sympy(latex)


def _math_spans(question: str) -> list[str]:
    return re.findall(r"\$([^$]+)\$", question)


@pytest.mark.parametrize(
    ("family", "level"),
    [
        ("arithmetic", 1),
        ("arithmetic", 2),
        ("arithmetic", 3),
        ("fractions", 1),
        ("fractions", 2),
        ("fractions", 3),
    ],
)
def test_computed_answers_equal_sympy_evaluating_the_question(family, level):
    import sympy

    for problem in _problems(family, level):
        expr = _math_spans(problem.question)[0]
        assert sympy.simplify(_sympy(expr).doit()) == sympy.Rational(str(problem.value)), (
            problem.question
        )


def _as_sympy(value):
    import sympy

    if isinstance(value, Surd):
        return sympy.Rational(str(value.rational)) + sympy.Rational(str(value.coef)) * sympy.sqrt(
            value.radicand
        )
    return sympy.Rational(str(value))


@pytest.mark.parametrize(
    ("family", "level"),
    [("quadratics", 1), ("quadratics", 2), ("quadratics", 3), ("polynomials", 3)],
)
def test_listed_roots_are_exactly_all_roots_of_the_polynomial(family, level):
    import sympy

    x = sympy.Symbol("x")
    for problem in _problems(family, level):
        poly_text = _math_spans(problem.question)[0].split("=")[
            -1 if family == "polynomials" else 0
        ]
        poly = sympy.Poly(_sympy(poly_text).subs(sympy.Symbol("x"), x), x)
        real_roots = set(sympy.real_roots(poly))
        listed = {sympy.nsimplify(_as_sympy(r)) for r in problem.value}
        assert {sympy.simplify(r) for r in real_roots} == {sympy.simplify(r) for r in listed}, (
            problem.question
        )


def test_systems_solutions_satisfy_every_equation():
    import sympy

    for level, names in ((1, "xy"), (2, "xyz")):
        for problem in _problems("linear-systems", level):
            subs = {sympy.Symbol(n): v for n, v in zip(names, problem.value)}
            for eq in _math_spans(problem.question)[: len(names)]:
                lhs, rhs = eq.split("=")
                assert _sympy(lhs).subs(subs) == int(rhs), (eq, problem.value)


def test_polynomial_evaluation_matches_sympy():
    for problem in _problems("polynomials", 1):
        poly_text, call = _math_spans(problem.question)[:2]
        point = int(re.search(r"p\((-?\d+)\)", call).group(1))
        assert _sympy(poly_text.split("=")[1]).subs("x", point) == problem.value


def test_exact_decimal_answers_have_no_float_rounding():
    for problem in _problems("unit-conversion", 1, 200):
        assert Fraction(problem.answer) == problem.value


_LOG = re.compile(
    r"\\log_\{(\d+)\}\(x(?: ([+-]) (\d+))?\) \+ \\log_\{\d+\}\(x(?: ([+-]) (\d+))?\) = (\d+)"
)


def _offset(sign: str | None, digits: str | None) -> int:
    return 0 if sign is None else int(digits) * (1 if sign == "+" else -1)


def test_log_equation_answers_solve_the_equation_with_positive_arguments():
    checked = 0
    for problem in _problems("exponents-logs", 2, 200):
        match = _LOG.search(problem.question)
        if not match:
            continue
        base, s1, d1, s2, d2, k = match.groups()
        x0 = int(problem.value)
        a, c = _offset(s1, d1), _offset(s2, d2)
        assert x0 + a > 0 and x0 + c > 0, problem.question
        assert (x0 + a) * (x0 + c) == int(base) ** int(k), problem.question
        checked += 1
    assert checked > 50
