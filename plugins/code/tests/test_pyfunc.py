"""Python synthesis families: generated tests, prompts, and the verifier's judgement."""

import ast
import random

import pytest

from rlhub_code.families import FAMILIES, family
from rlhub_code.spec import MIN_DISTINCT, expected_values, informative_spec, spec_task

NAMES = sorted(FAMILIES)


def py(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.mark.parametrize("name", NAMES)
def test_every_generated_case_is_one_top_level_assert_with_a_literal_expectation(name):
    for seed in range(20):
        spec = informative_spec(FAMILIES[name], random.Random(seed))
        task = spec_task(spec, name)
        check = next(n for n in ast.parse(task["meta"]["tests"]).body
                     if isinstance(n, ast.FunctionDef) and n.name == "check")
        asserts = [s for s in check.body if isinstance(s, ast.Assert)]
        assert len(asserts) == len(spec.cases) == task["meta"]["n_tests"]
        for node, want in zip(asserts, expected_values(spec)):
            assert ast.literal_eval(node.test.args[1]) == want


@pytest.mark.parametrize("name", NAMES)
def test_no_constant_function_can_pass_a_family_s_tests(name):
    for seed in range(20):
        values = expected_values(informative_spec(FAMILIES[name], random.Random(seed)))
        assert len({repr(v) for v in values}) >= MIN_DISTINCT


def test_the_prompt_names_the_signature_and_shows_two_examples(domain):
    task = domain("code/py-roman-v2").task("train", 0, 3)
    assert task.meta["entry_point"] in task.prompt
    assert task.prompt.count(">>> ") == 2
    assert "```python" in task.prompt


def test_an_unknown_family_lists_the_known_ones():
    with pytest.raises(KeyError, match="expected one of"):
        family("nope")


def test_a_wrong_type_fails_even_when_the_value_is_equal(domain):
    d = domain("code/py-count-v2")
    task = d.task("train", 0, 0)
    score = d.verify(task, py("def count_words(words):\n    return float(len(words) > 99)"))
    assert not score.passed
    assert "returned 0.0, expected" in score.feedback


def test_a_partly_right_solution_earns_partial_credit_with_the_first_failure_as_feedback(domain):
    d = domain("code/py-dates-v2")
    task = next(t for t in d.sample(20) if t.meta["entry_point"] == "weekday_name")
    wrong = py("import datetime\ndef weekday_name(date):\n"
               "    d = datetime.date.fromisoformat(date)\n"
               "    return d.strftime('%A') if d.year < 2000 else 'Monday'")
    score = d.verify(task, wrong)
    assert 0 < score.components["pass_frac"] < 1 and score.components["all_pass"] == 0
    assert "tests failed. First failure: assert same(candidate(" in score.feedback
    assert "expected" in score.feedback and len(score.feedback) < 700


def test_a_slow_first_call_fails_every_later_call_instead_of_reading_stale_replies(domain):
    d = domain("code/py-caesar-v2")
    task = d.task("train", 0, 0)
    gold = task.gold.split("\n", 1)[1].rsplit("```", 1)[0]
    slow_once = py(gold + "\nimport time\n_first = [True]\n_real = shift_letters\n"
                   "def shift_letters(text):\n    if _first:\n        _first.clear()\n"
                   "        time.sleep(3.5)\n    return _real(text)\n")
    score = d.verify(task, slow_once)
    assert score.components["pass_frac"] == 0
    assert "TimeoutError" in score.feedback
