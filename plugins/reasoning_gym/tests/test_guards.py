"""Answer guards: scorers that evaluate answers never run a completion's code or hang on it."""

import inspect
import os
import re
import time

import pytest

import rlhub
from rlhub_reasoning_gym import catalog, guards

MARK = "RLHUB_RG_GUARD_TEST"


def payload_via_import() -> str:
    return f"__import__('os').environ.__setitem__('{MARK}', 'ran')"


def payload_via_chr() -> str:
    """``exec`` of a string built with chr(), which passes sympy's token rewrite."""
    code = f"import os; os.environ['{MARK}'] = 'ran'"
    return "exec(" + "+".join(f"chr({ord(c)})" for c in code) + ")"


@pytest.fixture
def clean_environ(monkeypatch):
    monkeypatch.delenv(MARK, raising=False)
    yield
    assert MARK not in os.environ, "the answer's code ran inside the scorer"


@pytest.mark.parametrize("dataset", sorted(n for n, g in guards.GUARDS.items()
                                           if g is guards.python_literal))
def test_an_answer_that_eval_would_run_is_not_run(dataset, clean_environ):
    domain = rlhub.registry().get(f"rg/{dataset}-v3")
    task = domain.task("train", 0, 0)
    score = domain.verify(task, f"<answer>{payload_via_import()}</answer>")
    assert score.reward < 1.0 and "not accepted for scoring" in score.feedback


@pytest.mark.parametrize("dataset", sorted(n for n, g in guards.GUARDS.items()
                                           if g is guards.arithmetic_expression))
def test_an_answer_that_sympy_would_run_is_not_run(dataset, clean_environ):
    domain = rlhub.registry().get(f"rg/{dataset}-v3")
    task = domain.task("train", 0, 0)
    for payload in (payload_via_chr(), payload_via_import()):
        score = domain.verify(task, f"<answer>{payload}</answer>")
        assert score.reward < 1.0 and "not accepted for scoring" in score.feedback


@pytest.mark.parametrize("tower", ["9**9**9**9", "9^9^9^9", "((9**99)**99)**99", "2**(99*99*99)",
                                   "x**(10**100)"])
def test_power_towers_are_refused_quickly(tower):
    domain = rlhub.registry().get("rg/countdown-v3")
    task = domain.task("train", 0, 0)
    started = time.perf_counter()
    score = domain.verify(task, f"<answer>{tower}</answer>")
    assert time.perf_counter() - started < 10.0  # refused before evaluating it
    assert "not accepted for scoring" in score.feedback


@pytest.mark.parametrize("answer", ["-3*x**4/4 + 2*x**2 + C", "(x**2 + 1)**3", "exp(2*x)/2 - C",
                                    "sqrt(x) + log(x, 2)", "8*(60 - 31) - 99 + 84", "x^2 - 1",
                                    "-sin(y)**2/2 + pi*y"])
def test_ordinary_algebra_passes_the_arithmetic_guard(answer):
    assert guards.arithmetic_expression(answer) is None


def test_a_function_only_the_reference_answer_calls_is_allowed_for_that_task_alone():
    answer = "Integral(x**2, x) + C"
    assert guards.arithmetic_expression(answer) is not None
    assert guards.refusal("simple_integration", answer, "-2*Integral(x**2, x) + C") is None
    assert guards.refusal("simple_integration", answer, "x**3/3 + C") is not None


@pytest.mark.parametrize("answer", ["[['Q', '_'], ['_', 'Q']]", "[1, -2, 3.5]", "1 0 1\n0 1 1",
                                    "('a', 'b')", "not python at all ]]"])
def test_literals_and_plain_text_pass_the_literal_guard(answer):
    assert guards.python_literal(answer) is None


@pytest.mark.parametrize("answer", ["[x for x in 'ab']", "open('/etc/passwd').read()",
                                    "[1]*10**9", "().__class__"])
def test_expressions_that_compute_fail_the_literal_guard(answer):
    assert guards.python_literal(answer) is not None


@pytest.mark.parametrize("dataset", sorted(guards.GUARDS))
def test_every_gold_answer_of_a_guarded_dataset_passes_its_guard(dataset):
    domain = rlhub.registry().get(f"rg/{dataset}-v3")
    count = 6 if dataset == "intermediate_integration" else 25  # ~80 ms per item there
    for task in domain.sample(count, split="test", seed=3):
        assert guards.refusal(dataset, task.answer, task.answer) is None, task.answer


_EVALUATES = re.compile(r"\beval\(|\bexec\(|parse_expr\(|sympify\(|\bS\(")


def test_every_scorer_that_evaluates_its_input_has_a_guard_or_a_reason():
    """Re-read the installed scorers: a new eval()/parse_expr() without a guard fails here."""
    from reasoning_gym.factory import DATASETS

    names = [row["name"] for row in catalog.load()["datasets"]]
    evaluating = {n for n in names
                  if _EVALUATES.search(inspect.getsource(DATASETS[n][0].score_answer))}
    assert evaluating - guards.GUARDS.keys() - guards.EVALUATES_ONLY_THE_TASK.keys() == set()
    assert guards.GUARDS.keys() | guards.EVALUATES_ONLY_THE_TASK.keys() <= evaluating
