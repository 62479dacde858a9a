"""The math verifier bounds its work from any thread: answers denoting unbounded work are refused."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

import rlhub
from rlhub import Task

SERVICES = rlhub.registry().services

UNBOUNDED = ["10^{10^{7}}", "2^{2^{30}}", "99999999!", "{100000}!!", "(10^{7})^{10^{7}}",
             "\\binom{10^{9}}{5\\cdot 10^8}", "\\sqrt[10^{9}]{2}", "9^{99999999}",
             "\\left(9^{9}\\right)^{9^{9}}", "1" + "0" * 600]


def check_off_the_main_thread(answer: str, completion: str) -> dict:
    box: list = []
    thread = threading.Thread(target=lambda: box.append(
        SERVICES.verifier("math").check(Task("t", "x/y-v1", "Q?", answer=answer), completion)))
    thread.start()
    thread.join()
    verdict = box[0]
    return {"passed": verdict.passed, "failure": verdict.failure, "feedback": verdict.feedback,
            "components": verdict.components}


CHILD = """
import json, sys, threading
import rlhub
from rlhub import Task

SERVICES = rlhub.registry().services

def run(answer):
    box = []
    t = threading.Thread(target=lambda: box.append(SERVICES.verifier("math").check(
        Task("t", "x/y-v1", "Q?", answer="922"), "\\\\boxed{%s}" % answer)))
    t.start()
    t.join()
    return {"passed": box[0].passed, "failure": box[0].failure, "feedback": box[0].feedback}

print(json.dumps([run(a) for a in json.loads(sys.argv[1])]))
"""


def test_answers_denoting_unbounded_work_are_refused_off_the_main_thread_in_a_fresh_process():
    """A child interpreter with a deadline, where a hang cannot freeze the test session."""
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(UNBOUNDED)],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    verdicts = json.loads(out.stdout.strip().splitlines()[-1])
    for answer, verdict in zip(UNBOUNDED, verdicts):
        assert not verdict["passed"] and verdict["failure"] == "answer", answer
        assert verdict["feedback"].startswith("The answer was not evaluated: "), answer


@pytest.mark.parametrize("answer", UNBOUNDED)
def test_each_shape_of_unbounded_answer_is_named_by_a_guard_or_the_cpu_budget(answer):
    from rlhub.verifiers.mathv import oversized

    verdict = check_off_the_main_thread("922", f"\\boxed{{{answer}}}")
    assert verdict["failure"] == "answer" and verdict["components"]["correct"] == 0
    reason = oversized(answer, 512)
    if reason is not None:
        assert reason in verdict["feedback"]


def test_an_answer_whose_evaluation_spends_the_cpu_budget_is_the_answers_fault():
    from rlhub.verifiers import bounded
    from rlhub.verifiers.mathv import Math

    def spent(*args, **kwargs):
        raise bounded.WorkExceeded("cpu", "needed more than 5 s of CPU time")

    verdict = Math({}, work=spent).check(Task("t", "x/y-v1", "Q?", answer="922"),
                                         "\\boxed{7^{999 \\cdot 999 \\cdot 99}}")
    assert not verdict.passed and verdict.failure == "answer"
    assert verdict.feedback == ("The answer was not evaluated: evaluating it needed more than 5 s "
                                "of CPU time. Box only the final, simplified value.")


@pytest.mark.parametrize(("answer", "completion"), [
    ("922", "\\boxed{922}"), ("\\frac{1}{2}", "\\boxed{0.5}"), ("3.5 \\times 10^{-3}",
                                                               "\\boxed{0.0035}"),
    ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
     "\\boxed{\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}}"),
])
def test_ordinary_answers_still_pass_through_the_worker(answer, completion):
    assert check_off_the_main_thread(answer, completion)["passed"]
