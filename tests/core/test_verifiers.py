"""The built-in named verifiers: exact, regex, json-schema, math and python-tests."""

from __future__ import annotations

import threading

import pytest

import rlhub
from rlhub import Task, VerifierError

SERVICES = rlhub.registry().services


def task(answer=None, **meta):
    return Task("t1", "toy/x-v1", "Q?", answer=answer, meta=meta)


@pytest.mark.parametrize(("completion", "ok"), [
    ("Answer: Paris", True), ("<answer> paris </answer>", False), ("paris", False),
    ("I think\nParis", True), ("", False),
])
def test_exact_compares_the_final_answer(completion, ok):
    assert SERVICES.verifier("exact").check(task("Paris"), completion).passed is ok


def test_exact_casefold_and_answer_lists():
    v = SERVICES.verifier("exact", {"normalize": "casefold"})
    assert v.check(task(["Paris", "Lutetia"]), "<answer>lutetia.</answer>").passed


def test_exact_rejects_an_unknown_normalisation_clearly():
    with pytest.raises(VerifierError, match="expected normalize in none|strip|whitespace|casefold"):
        SERVICES.verifier("exact", {"normalize": "loose"})


def test_unknown_verifiers_get_a_did_you_mean():
    with pytest.raises(VerifierError) as err:
        SERVICES.verifier("mathh")
    assert str(err.value).startswith("unknown verifier 'mathh'; did you mean 'math'?")


def test_regex_uses_the_task_pattern_or_the_option():
    assert SERVICES.verifier("regex").check(task(r"\d{4}-\d{2}-\d{2}"), " 2024-01-31 ").passed
    assert not SERVICES.verifier("regex", {"pattern": "[a-z]+"}).check(task(), "abc1").passed
    anywhere = SERVICES.verifier("regex", {"pattern": "b", "fullmatch": False})
    assert anywhere.check(task(), "abc").passed


SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


def test_json_schema_separates_parsing_from_validation():
    v = SERVICES.verifier("json-schema", {"schema": SCHEMA})
    assert v.check(task(), '```json\n{"n": 3}\n```').passed
    bad = v.check(task(), '{"n": "3"}')
    assert bad.components == {"valid_json": 1.0, "schema_ok": 0.0}
    assert bad.feedback == "Schema violation at n: '3' is not of type 'integer'"
    assert v.check(task(), "{nope").components == {"valid_json": 0.0, "schema_ok": 0.0}


@pytest.mark.parametrize(("answer", "completion", "ok"), [
    ("\\frac{1}{2}", "so \\boxed{0.5}", True),
    ("3", "\\boxed{3} then \\boxed{4}", False),
    ("x^2+5x", "\\boxed{x(x+5)}", True),
    ("7", "the answer is 7", False),
    ("7", "\\boxed{9^{9^{9^{9}}}}", False),
])
def test_math_checks_the_last_boxed_answer(answer, completion, ok):
    assert SERVICES.verifier("math").check(task(answer), completion).passed is ok


def test_math_is_safe_to_call_from_threads():
    v = SERVICES.verifier("math")
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        v.check(task("\\frac{3}{4}"), "\\boxed{0.75}").passed)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 4


TESTS = """
def check(candidate):
    assert candidate(2, 3) == 5
    assert candidate(-1, 1) == 0
    assert candidate(10, 5) == 15
"""


def run_py(program, tests=TESTS):
    return SERVICES.verifier("python-tests").check(
        task(tests=tests, entry_point="add"), f"```python\n{program}\n```")


def test_python_tests_passes_a_correct_program():
    v = run_py("def add(a, b):\n    return a + b")
    assert v.passed and v.components == {"pass_frac": 1.0, "all_pass": 1.0}


def test_python_tests_counts_each_assert_and_reports_the_first_failure():
    v = run_py("def add(a, b):\n    return a + b if a > 0 else 99")
    assert v.components["pass_frac"] == pytest.approx(2 / 3)
    assert v.feedback.startswith("1 of 3 tests failed. First failure: assert candidate(-1, 1) == 0")


def test_python_tests_reports_a_missing_entry_point():
    v = run_py("def plus(a, b):\n    return a + b")
    assert not v.passed and "defines no function named 'add'" in v.feedback


HACKS = {
    "sys.exit(0)": "import sys\nsys.exit(0)",
    "os._exit(0)": "import os\nos._exit(0)",
    "exit inside the call": "import os\ndef add(a, b):\n    os._exit(0)",
    "kill the parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
                       "def add(a, b):\n    return 0",
    "fake success text": 'print(\'{"rlhub_verdict": {"total": 3, "passed": 3, "failures": [],'
                         ' "load_error": null}}\')\ndef add(a, b):\n    return 0',
    "always-equal object": "class A(int):\n    def __eq__(self, o):\n        return True\n"
                           "def add(a, b):\n    return A(0)",
    "patched builtins": "import builtins\nbuiltins.AssertionError = type('X', (Exception,), {})\n"
                        "def add(a, b):\n    return 0",
    "reads the tests": "import gc\ndef add(a, b):\n"
                       "    hits = [o for o in gc.get_objects() if isinstance(o, dict) and 'tests' in o]\n"
                       "    return 5 if hits else 0",
    "writes a result file": "open('result.json', 'w').write('{\"passed\": true}')\n"
                            "def add(a, b):\n    return 0",
}


@pytest.mark.parametrize("name", sorted(HACKS))
def test_python_tests_cannot_be_forged(name):
    v = run_py(HACKS[name])
    assert not v.passed and v.components["all_pass"] == 0.0, v.feedback
