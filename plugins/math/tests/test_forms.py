r"""The final-form gate: finished results pass, boxed copies of the question's expression do not."""

from __future__ import annotations

import pytest

import rlhub
from rlhub_math.forms import unevaluated

FINISHED = [
    ("5", "integer"),
    ("-7", "integer"),
    ("x = 5", "integer"),
    ("12{,}000", "integer"),
    ("1,000", "integer"),
    ("100 \\text{ cm}", "integer"),
    ("100\\text{ cm}^2", "integer"),
    ("45^\\circ", "integer"),
    ("25\\%", "integer"),
    ("101101_2", "integer"),
    ("\\frac{3}{4}", "rational"),
    ("-\\frac{3}{4}", "rational"),
    ("\\dfrac{-7}{3}", "rational"),
    ("-7/3", "rational"),
    ("-2\\frac{1}{3}", "rational"),
    ("x=-2.5", "rational"),
    ("3.5 \\times 10^{-3}", "decimal"),
    ("12.5 \\, \\text{m}", "decimal"),
    ("6\\sqrt{2}", "surd"),
    ("\\frac{3\\sqrt{7}}{2}", "surd"),
    ("\\frac{3}{2}\\sqrt{7}", "surd"),
    ("25\\pi", "pi"),
    ("\\frac{25\\pi}{2}", "pi"),
    ("-2, 3", "roots"),
    ("x=-2, x=3", "roots"),
    ("x = -5 \\text{ or } x = 2", "roots"),
    ("\\frac{-3 + \\sqrt{17}}{4}, \\frac{-3 - \\sqrt{17}}{4}", "roots"),
    ("-\\frac{3}{4}+\\frac{\\sqrt{17}}{4}, -\\frac{3}{4}-\\frac{\\sqrt{17}}{4}", "roots"),
    ("\\{-2, 3\\}", "roots"),
    ("(3, -2)", "tuple"),
    ("x = 3, y = -2", "tuple"),
    ("\\left(3, -2\\right)", "tuple"),
    ("x > 3", "inequality"),
    ("x \\le -\\frac{5}{2}", "inequality"),
    ("(-\\infty, -\\frac{5}{2}]", "inequality"),
    ("x\\geq-3", "inequality"),
    ("\\begin{pmatrix} 7 & -10 \\\\ -15 & 22 \\end{pmatrix}", "matrix"),
]

UNEVALUATED = [
    ("37 \\times 48 - 125", "integer", "\\times"),
    ("\\binom{10}{5}", "integer", "\\binom"),
    ("10!", "integer", "'!'"),
    ("\\log_2 64", "integer", "\\log"),
    ("2^{10}", "integer", "'^'"),
    ("3+4", "integer", "+ or -"),
    ("\\frac{3}{4}+\\frac{5}{6}", "rational", "+ or -"),
    ("\\sqrt{25}", "integer", "\\sqrt"),
    ("|-5|", "integer", "'|'"),
    ("\\gcd(12, 18)", "integer", "\\gcd"),
    ("\\sqrt{9+16}", "surd", "\\sqrt{9+16}"),
    ("1+1+\\sqrt{17}", "roots", "+ or -"),
    ("\\frac{-3+\\sqrt{17}}{2+2}", "roots", "+ or -"),
    ("\\pi \\cdot 5^2", "pi", "'^'"),
    ("(2+1, -2)", "tuple", "+ or -"),
    (
        "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
        "matrix",
        "a product of matrices",
    ),
]


@pytest.mark.parametrize(("answer", "form"), FINISHED)
def test_finished_results_pass_the_gate(answer, form):
    assert unevaluated(answer, form) is None


@pytest.mark.parametrize(("answer", "form", "reason"), UNEVALUATED)
def test_unevaluated_expressions_are_rejected_with_the_offending_part(answer, form, reason):
    found = unevaluated(answer, form)
    assert found is not None and reason in found


@pytest.mark.parametrize(
    ("domain_id", "prefix"),
    [
        ("math/arithmetic-l2-v2", "Compute $"),
        ("math/fractions-l3-v2", "Compute $"),
        ("math/combinatorics-l1-v2", None),
    ],
)
def test_boxing_the_question_expression_earns_nothing_but_gets_repair_feedback(domain_id, prefix):
    domain = rlhub.registry().get(domain_id)
    for index in range(10):
        task = domain.task("train", 3, index)
        if prefix:
            expr = task.meta["question"].split("$")[1]
        else:  # rebuild the count as an unevaluated binomial or permutation
            numbers = [
                int(t) for t in task.meta["question"].replace("$", " ").split() if t.isdigit()
            ]
            expr = (
                f"\\binom{{{max(numbers)}}}{{{min(numbers)}}}"
                if "committee" in task.meta["question"]
                else f"\\frac{{{max(numbers)}!}}{{{max(numbers) - min(numbers)}!}}"
            )
        assert domain.verifier.check(task, f"\\boxed{{{expr}}}").passed, (
            expr
        )  # math-verify alone is fooled
        score = domain.verify(task, f"\\boxed{{{expr}}}")
        assert score.reward == 0.0 and not score.passed
        assert (
            "not a final result" in score.feedback
            and "box only the simplified value" in score.feedback
        )
