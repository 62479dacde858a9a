"""The value every generator returns: one math problem with its exact answer and worked solution."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The answer forms a problem may ask for; each maps to the instruction added to the prompt.
FORM_HINTS: dict[str, str] = {
    "integer": "Give the final answer as an integer.",
    "rational": "Give the final answer as an integer or a fraction in lowest terms "
    "(for example \\frac{3}{4}).",
    "decimal": "Give the final answer as an exact decimal number (for example 0.25).",
    "surd": "Give the exact value in simplest radical form (for example 3\\sqrt{2} or "
    "\\frac{\\sqrt{3}}{2}); an integer or fraction if it is rational.",
    "pi": "Give the exact value in terms of \\pi (for example 12\\pi or \\frac{9}{2}\\pi).",
    "roots": "List every real solution exactly (integers, fractions in lowest terms or simplified "
    "radicals), separated by commas in increasing order, for example \\boxed{-2, 3}.",
    "tuple": "Give the solution as an ordered tuple, for example \\boxed{(1, -2)}.",
    "inequality": "Give the solution set as an inequality in x, for example \\boxed{x > 3} or "
    "\\boxed{x \\le -\\frac{1}{2}}.",
    "matrix": "Give the matrix as \\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}.",
}


@dataclass(frozen=True)
class Problem:
    """One generated problem.

    ``question`` is the problem text (LaTeX in ``$...$``); ``answer`` the gold answer in LaTeX;
    ``steps`` the lines of a short worked solution; ``form`` a key of :data:`FORM_HINTS`;
    ``value`` the exact answer as a Python value (int, Fraction, Surd, tuple, list) for tests and
    analysis; ``key`` the canonical identity of the problem when it differs from the question text
    (two wordings of one problem should share a key); the identity decides the problem's split.
    """

    question: str
    answer: str
    steps: list[str]
    form: str
    value: Any = None
    key: str = ""

    def __post_init__(self) -> None:
        if self.form not in FORM_HINTS:
            raise ValueError(
                f"expected an answer form in {sorted(FORM_HINTS)}, found {self.form!r}"
            )

    @property
    def identity(self) -> str:
        return self.key or self.question

    def prompt(self) -> str:
        """The prompt shown to the policy: question, answer-form hint, boxing instruction."""
        return (
            f"{self.question}\n\n{FORM_HINTS[self.form]} Reason step by step, then put only the "
            "final answer in \\boxed{}."
        )

    def gold(self) -> str:
        r"""A short worked completion ending in ``The answer is \boxed{...}.``"""
        return "\n".join([*self.steps, f"The answer is \\boxed{{{self.answer}}}."])
