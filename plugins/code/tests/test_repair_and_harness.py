"""Code repair tasks, and the hardening of the python-tests harness they rely on."""

import json
import random

import pytest

from rlhub.verifiers.pytests import parse_verdict
from rlhub_code.families import FAMILIES
from rlhub_code.repair import BudgetExceeded, candidate_bugs, run_bounded
from rlhub_code.spec import FuncSpec, informative_spec


def py(code: str) -> str:
    return f"```python\n{code}\n```"


def test_the_planted_bug_fails_the_hidden_tests_and_the_gold_fix_passes(domain):
    d = domain("code/py-repair-v2")
    for task in d.sample(6):
        assert not d.verify(task, py(task.meta["buggy"])).passed
        assert d.verify(task, task.gold).passed
        assert task.meta["buggy"] in task.prompt and task.meta["failure"] in task.prompt


def test_the_failure_shown_in_the_prompt_is_the_one_the_verifier_reports(domain):
    d = domain("code/py-repair-v2")
    task = d.task("train", 0, 4)
    score = d.verify(task, py(task.meta["buggy"]))
    assert task.meta["failure"][:200] in score.feedback


def test_every_mutant_offered_differs_from_the_reference_and_fails_a_test():
    spec = informative_spec(FAMILIES["intervals"], random.Random(7))
    bugs = list(candidate_bugs(spec, random.Random(7)))
    assert bugs
    for source, failure in bugs:
        assert source.strip() != spec.solution.strip()
        assert failure.startswith("assert same(candidate(")


def test_a_mutant_that_loops_forever_is_stopped_by_the_line_budget():
    loop = FuncSpec("f", "", "", "def f(n):\n    while n >= 0:\n        n += 1\n", [])
    with pytest.raises(BudgetExceeded):
        run_bounded(loop, (1,))


def test_a_verdict_line_without_the_job_s_nonce_is_ignored():
    good = json.dumps({"rlhub_verdict": {"total": 2, "passed": 1}, "nonce": "abc"})
    forged = json.dumps({"rlhub_verdict": {"total": 1, "passed": 1}, "nonce": ""})
    assert parse_verdict(f"{good}\n{forged}\n", "abc") == {"total": 2, "passed": 1}
    assert parse_verdict(f"{forged}\n", "abc") is None


def test_a_candidate_cannot_read_the_harness_stdin_or_memory_through_proc(domain):
    d = domain("code/py-caesar-v2")
    task = d.task("train", 0, 0)
    spy = py("import os\nppid = os.getppid()\nfound = []\n"
             "for p in ('fd/0', 'fd/1', 'mem', 'environ'):\n"
             "    try:\n        open(f'/proc/{ppid}/{p}', 'rb').close(); found.append(p)\n"
             "    except OSError:\n        pass\n"
             "def shift_letters(text):\n    return ','.join(found)")
    score = d.verify(task, spy)
    assert "returned '', expected" in score.feedback
