"""Code-repair episodes: run code and visible tests in the sandbox, submit, repair."""

import random

import pytest

from rlhub_agentic import codebank


def fenced(code):
    return f"```python\n{code}\n```"


WRONG = "def solution(*args):\n    return None"


def test_a_test_run_then_a_failed_submission_then_a_repair_earns_1_at_repair_1(domain, play,
                                                                               scripted):
    d = domain("code-repair")
    task = d.task("train", 0, 0)
    results = play(d, task, scripted([
        f'<tool name="tests">{fenced(WRONG)}</tool>',
        '<tool name="python">```python\nimport sys\nprint("hello")\nsys.exit(3)\n```</tool>',
        f"<answer>{fenced(WRONG)}</answer>", task.gold]))
    tests, python, failed, fixed = results
    assert "of 2 tests failed. First failure: assert candidate(" in tests.observation
    assert "status: error (exit code 3)\nstdout:\nhello" in python.observation
    assert not failed.done and "2 more answer attempts" in failed.observation
    assert failed.score.reward == 0.0 and "tests failed" in failed.score.feedback
    assert fixed.done and fixed.score.reward == 1.0 and fixed.info["repair"] == 1
    assert fixed.score.components["pass_frac"] == 1.0 and fixed.score.components["tool_calls"] == 2


def test_the_visible_tests_tool_accepts_the_reference_solution(domain, play, scripted):
    d = domain("code-repair")
    task = d.task("test", 1, 2)
    gold_code = task.gold.removeprefix("<answer>\n").removesuffix("\n</answer>")
    results = play(d, task, scripted([f'<tool name="tests">{gold_code}</tool>', task.gold]))
    assert "All visible examples pass." in results[0].observation
    assert results[-1].score.reward == 1.0


def test_a_program_that_fakes_success_does_not_pass(domain, play, scripted):
    d = domain("code-repair")
    task = d.task("train", 0, 1)
    forged = 'import os\nprint(\'{"rlhub_verdict": {"total": 1, "passed": 1}}\')\nos._exit(0)'
    results = play(d, task, scripted([f"<answer>{fenced(forged)}</answer>"] * 3))
    assert [r.score.reward for r in results] == [0.0, 0.0, 0.0] and results[-1].done


def test_three_failed_submissions_end_the_episode(domain, play, scripted):
    d = domain("code-repair")
    task = d.task("train", 0, 3)
    results = play(d, task, scripted([f"<answer>{fenced(WRONG)}</answer>"] * 3))
    assert [r.done for r in results] == [False, False, True]
    assert [r.info["repair"] for r in results] == [0, 1, 2]


def test_an_empty_tool_program_is_explained(domain, play, scripted):
    d = domain("code-repair")
    task = d.task("train", 0, 4)
    results = play(d, task, scripted(['<tool name="python"> </tool>', task.gold]))
    assert "error: the program was empty." in results[0].observation


@pytest.mark.parametrize("name", sorted(codebank.SPECS))
def test_every_problem_family_yields_distinct_cases_its_reference_passes(name):
    problem = None
    for seed in range(50):
        problem = codebank.make_problem(random.Random(seed))
        if problem["name"] == name:
            break
    assert problem is not None and problem["name"] == name
    namespace = {}
    exec(problem["tests"], namespace)
    namespace["check"](codebank.reference(problem["source"]))
    assert len(set(problem["tests"].splitlines())) == 9  # def line + 8 distinct cases
