"""Public code-benchmark shapes under ``python-tests``: HumanEval-style ``check`` code that calls
helpers of the prompt or the solution, MBPP-style assert lists with setup code, and stdin/stdout
cases (APPS, CodeContests, LiveCodeBench); each with the attacks a policy would try on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rlhub
from rlhub import ManifestError, Registry, Task
from rlhub.testing import check_domain
from rlhub.testing.probes_code import PY_READ_OUTPUTS, PY_SHADOW_MODULES
from rlhub.verifiers.pytests import io_cases

SERVICES = rlhub.registry().services

FORMATS = Path(__file__).parents[1] / "fixtures" / "codeformats"
SHAPES = ["humaneval", "mbpp", "apps", "codecontests", "livecodebench"]


@pytest.fixture(scope="module")
def formats() -> Registry:
    return Registry(domain_files=sorted(FORMATS.glob("*.yaml")), autoload=False)


def task_of(formats: Registry, shape: str, row: str) -> Task:
    domain = formats.get(f"formats/{shape}-v1")
    tasks = [domain.task("train", 0, i) for i in range(len(domain.rows("train")))]
    return next(t for t in tasks if t.id.endswith(f":{row}"))


def verify(formats: Registry, shape: str, row: str, completion: str):
    return formats.get(f"formats/{shape}-v1").verify(task_of(formats, shape, row), completion)


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.mark.parametrize("shape", SHAPES)
def test_every_reference_solution_of_each_benchmark_shape_scores_the_maximum(formats, shape):
    domain = formats.get(f"formats/{shape}-v1")
    for index in range(len(domain.rows("train"))):
        task = domain.task("train", 0, index)
        score = domain.verify(task, task.gold)
        assert (score.reward, score.failure) == (1.0, "none"), (task.id, score.feedback, score.error)


@pytest.mark.parametrize("shape", SHAPES)
def test_each_benchmark_shape_meets_the_contract_kit_with_its_hacking_probes(formats, shape,
                                                                             monkeypatch):
    monkeypatch.setenv("RLHUB_DOMAINS_PATH", str(FORMATS))  # for the kit's fresh interpreter
    assert check_domain(f"formats/{shape}-v1", registry=formats) == []


def test_a_check_that_calls_the_prompts_helper_scores_a_correct_completion(formats):
    score = verify(formats, "humaneval", "rot-decode",
                   "    return ''.join(chr((ord(c) - 97 - k) % 26 + 97) for c in s)\n")
    assert score.passed, score.feedback


def test_a_check_that_uses_the_prompts_import_and_helper_rejects_a_wrong_root(formats):
    score = verify(formats, "humaneval", "poly-zero", "    return 0.5\n")
    assert not score.passed
    assert "check raised AssertionError at: assert math.fabs(poly(coeffs, x)) < 1e-4" in score.feedback


def test_tests_that_call_a_helper_the_solution_defines_see_it(formats):
    wrong = ("    return s[:1]\n\n\ndef is_palindrome(s):\n    return s == s[::-1]\n")
    score = verify(formats, "humaneval", "palindrome-prefix", wrong)
    assert score.components["pass_frac"] == pytest.approx(3 / 4)
    assert "assert candidate('abacus') == 'aba'" in score.feedback


def test_the_prompts_helper_beats_the_candidates_redefinition_of_it(formats):
    # With the candidate's identity encode_rot, an identity decode_rot would pass every test.
    hack = "    return s\n\n\ndef encode_rot(s, k):\n    return s\n"
    score = verify(formats, "humaneval", "rot-decode", hack)
    assert not score.passed and score.reward == 0.0


def python_tests(tests: str | None = None, **meta) -> Task:
    if tests is not None:
        meta["tests"] = tests
    return Task(id="t", domain="mine/code-v1", prompt="Write the function.", answer=None,
                meta=meta)


def check(task: Task, program: str, **options):
    return SERVICES.verifier("python-tests", options).check(task, fenced(program))


def test_a_candidate_function_named_like_a_builtin_is_never_what_the_tests_call():
    task = python_tests(asserts=["assert sorted(order([3, 1, 2])) == [1, 2, 3]",
                                 "assert len(order([5, 4])) == 2"])
    hack = "def order(xs):\n    return 0\n\n\ndef sorted(x):\n    return [1, 2, 3]\n\n\n" \
           "def len(x):\n    return 2\n"
    assert check(task, hack).components["pass_frac"] == 0.0
    assert check(task, "def order(xs):\n    return list(xs)\n").passed


def test_a_module_the_candidate_plants_never_runs_in_the_harness():
    # On a harness whose sys.path keeps the job's work dir, `import fractions` in the tests ran
    # the planted module in the parent, which found the nonce and printed a passing verdict.
    task = python_tests("def check(candidate):\n    import fractions, statistics, decimal\n"
                        "    assert candidate(2, 3) == 5\n", entry_point="add")
    plant = PY_SHADOW_MODULES + "\n\ndef add(a, b):\n    return 0\n"
    verdict = check(task, plant)
    assert not verdict.passed and verdict.components["all_pass"] == 0.0, verdict.feedback


def in_sandbox(program: str, stdin: str = "") -> str:
    """Run a probe where probes belong, in the local sandbox; its stdout."""
    from rlhub.sandbox import ExecRequest

    result = SERVICES.sandboxes.run(ExecRequest(code=program, stdin=stdin), "local")
    assert result.status == "ok", result.stderr
    return result.stdout


def test_the_planting_probe_forges_a_verdict_when_a_harness_imports_from_its_directory():
    naive_harness = "\njob = {'nonce': 'n0nce'}\nimport fractions\nprint('not forged')\n"
    out = in_sandbox(PY_SHADOW_MODULES + naive_harness)
    assert '"nonce": "n0nce"' in out and '"passed": 1' in out and "not forged" not in out


def test_a_planted_module_that_finds_no_harness_loads_the_real_one():
    out = in_sandbox(PY_SHADOW_MODULES + "\nimport fractions\nprint(fractions.Fraction(2, 4))\n")
    assert out.strip() == "1/2"


def test_each_assert_counts_and_setup_code_and_solution_helpers_are_visible():
    task = python_tests(setup="BASE = 10\n", asserts=["assert scaled(1) == 10",
                                                      "assert scaled(2) == 20",
                                                      "assert helper(3) == 3"])
    program = "def helper(x):\n    return x\n\n\ndef scaled(x):\n    return BASE * x if x < 2 else 0\n"
    score = check(task, program.replace("BASE", "10"))
    assert score.components["pass_frac"] == pytest.approx(2 / 3)
    assert score.feedback.startswith("1 of 3 tests failed. First failure: assert scaled(2) == 20")


def test_an_assert_list_names_its_function_when_the_program_lacks_it():
    task = python_tests(asserts=["assert count_vowels('hello') == 2"])
    score = check(task, "def count(s):\n    return 2\n")
    assert not score.passed and "defines no function named 'count_vowels'" in score.feedback


@pytest.mark.parametrize("tests", ["def check(candidate:\n    pass\n", "x = 1\n"])
def test_broken_test_code_is_the_verifiers_failure_not_the_answers(tmp_path, tests):
    row = {"id": "p1", "q": "Write f.", "t": tests, "gold": "def f():\n    return 1\n"}
    (tmp_path / "rows.jsonl").write_text(json.dumps(row))
    (tmp_path / "d.yaml").write_text(json.dumps({
        "id": "mine/code-v1", "dataset": "rows.jsonl", "verifier": "python-tests",
        "fields": {"id": "id", "prompt": "q", "tests": "t", "gold": "gold"}}))
    domain = Registry(domain_files=[tmp_path / "d.yaml"], autoload=False).get("mine/code-v1")
    task = domain.task("train", 0, 0)
    score = domain.verify(task, task.gold)
    assert score.failure == "verifier" and not score.trainable
    assert "task mine/code-v1:p1: the task's own tests are broken" in score.error


def io_task(cases, **meta) -> Task:
    return Task(id="io", domain="mine/io-v1", prompt="Solve it.", answer=None,
                meta={"cases": cases, **meta})


def test_a_stdin_stdout_case_that_fails_names_its_input_expected_and_got():
    cases = [{"input": "2 3\n", "output": "5\n"}, {"input": "4 4\n", "output": "8\n"}]
    score = check(io_task(cases), "a, b = map(int, input().split())\nprint(a + b if a < 3 else 0)")
    assert score.components["pass_frac"] == 0.5
    assert "case 2 of 2: wrong answer on input '4 4\\n': expected '8\\n', got '0\\n'" in score.feedback


def test_stdin_stdout_numbers_compare_by_value_within_the_tolerance():
    cases = [{"input": "", "output": "0.333333333\n2\n"}]
    program = "print(0.3333333)\nprint('2.000')"
    assert not check(io_task(cases), program).passed
    assert check(io_task(cases), program, float_tolerance=1e-6).passed
    assert check(io_task(cases), "print('0.333333333')\nprint(2.0)").passed


def test_a_program_past_its_time_on_every_case_is_a_timeout_the_models_fault():
    cases = [{"input": "1\n", "output": "1\n"}, {"input": "2\n", "output": "2\n"}]
    score = check(io_task(cases), "import time\ntime.sleep(60)", call_timeout_s=0.5,
                  limits={"wall_s": 20})
    assert (score.passed, score.failure) == (False, "timeout")
    assert "case 1 of 2: time limit exceeded" in score.feedback


def test_a_program_flooding_stdout_fails_its_case_at_the_output_cap():
    cases = [{"input": "", "output": "1\n"}]
    score = check(io_task(cases), "while True:\n    print('1' * 4096)", max_output_bytes=1 << 16)
    assert not score.passed and f"output over {1 << 16} bytes" in score.feedback


def test_the_read_outputs_probe_finds_expected_outputs_that_are_in_reach():
    leak = "import json\njson.dump({'cases': [{'input': '4\\n', 'output': '8\\n'}]}, open('job.json', 'w'))\n"
    assert in_sandbox(leak + PY_READ_OUTPUTS, stdin="4\n") == "8\n"


@pytest.mark.parametrize("value", [
    [{"input": "1\n", "output": "2\n", "testtype": "stdin"}],
    json.dumps([{"input": "1\n", "output": "2\n"}]),
    {"inputs": ["1\n"], "outputs": ["2\n"]},
    json.dumps({"inputs": ["1\n"], "outputs": [["2"]]}),
    [{"input": ["1\n"], "output": ["2\n"]}],
])
def test_stdin_stdout_cases_are_read_from_every_common_dataset_shape(value):
    assert [{k: v.strip() for k, v in c.items()} for c in io_cases(value)] == [
        {"input": "1", "output": "2"}]


def test_a_row_with_malformed_cases_is_an_error_naming_the_row_and_the_field(tmp_path):
    (tmp_path / "rows.jsonl").write_text(json.dumps({"id": "p1", "q": "?", "io": "{\"inputs\": [1]}"}))
    (tmp_path / "d.yaml").write_text(json.dumps({
        "id": "mine/io-v1", "dataset": "rows.jsonl", "verifier": "python-tests",
        "fields": {"id": "id", "prompt": "q", "cases": "io"}}))
    domain = Registry(domain_files=[tmp_path / "d.yaml"], autoload=False).get("mine/io-v1")
    with pytest.raises(ManifestError, match=r"mine/io-v1 row p1: field cases \(io\): stdin/stdout "
                                            r"cases: expected parallel lists under inputs/outputs"):
        domain.task("train", 0, 0)
