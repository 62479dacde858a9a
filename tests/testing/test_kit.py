"""The contract kit catches each deliberately broken domain, with its exact message."""

from __future__ import annotations

import os
import re

import brokenplug
import pytest
import toyplug

from rlhub.testing import assert_domain_ok, bad_inputs, check_determinism, check_domain


@pytest.fixture
def reg(rlhub_registry):
    return rlhub_registry(plugins=[toyplug, brokenplug])


def first_task(reg, domain_id):
    return reg.get(domain_id).task("train", 0, 0)


def problems(reg, domain_id):
    return check_domain(reg.get(domain_id), n=2, across_processes=False)


def test_well_behaved_domains_have_no_problems(reg):
    assert problems(reg, "toy/reverse-v1") == []
    assert problems(reg, "toy/copy-v1") == []


def test_a_verifier_that_writes_into_its_task_is_reported(reg):
    """Reported first, once: what it breaks next (a genuine label no longer matching its task, in
    the forged-label probes) follows."""
    tid = first_task(reg, "broken/writes-task-v1").id
    found = problems(reg, "broken/writes-task-v1")
    changed = (f"broken/writes-task-v1: verifying completions changed task {tid} (its prompt, "
               "answer, gold or meta); every completion of a task is verified against the same "
               "task, so one verification would change the next one's")
    assert found[0] == changed and found.count(changed) == 1


def test_a_gold_completion_that_fails_is_reported(reg):
    assert problems(reg, "broken/wrong-gold-v1") == [
        "broken/wrong-gold-v1: the gold completion of task t1 scored 0 (expected the maximum 1); "
        "feedback: 'wrong number'"
    ]


def test_a_verifier_that_raises_on_empty_input_is_reported(reg):
    tid = first_task(reg, "broken/crash-on-empty-v1").id
    found = problems(reg, "broken/crash-on-empty-v1")
    assert found[0] == (
        f"broken/crash-on-empty-v1: the empty completion of task {tid} failed with class "
        "'verifier', not the answer's (expected 'answer'): IndexError: string index out of range")
    assert all("IndexError: string index out of range" in p for p in found)
    assert f"the constant probe \"constant ''\" on task {tid} failed with class 'verifier'" in found[1]


def test_an_echoed_prompt_that_earns_the_maximum_is_reported(reg):
    tid = first_task(reg, "broken/echo-passes-v1").id
    found = problems(reg, "broken/echo-passes-v1")
    assert found[0] == (
        f"broken/echo-passes-v1: the echoed prompt completion of task {tid} scored the maximum 1 "
        "(expected less)")
    assert any("passed with its own answer first and last" in p for p in found[1:])


def test_sampling_from_the_global_random_module_is_reported(reg):
    found = problems(reg, "broken/nondeterministic-v1")
    assert found[-1] == (
        "broken/nondeterministic-v1: sampling is not deterministic: the same (split, seed, index) "
        "gave different tasks on two calls")
    assert found[0].startswith("broken/nondeterministic-v1: the genuine label of task "
                               "broken/nondeterministic-v1:train:0:0 scored 0 (expected 1, as "
                               "verified directly): LabelError: label: forged")


def test_a_slow_verifier_is_reported(reg):
    found = problems(reg, "broken/slow-v1")
    tid = first_task(reg, "broken/slow-v1").id
    took = re.fullmatch(rf"broken/slow-v1: verification took (\d+\.\d\d)s on the gold completion "
                        rf"of task {tid} \(limit 0.05s\)", found[0])
    assert took is not None, found[0]
    assert float(took.group(1)) >= 0.1  # the check sleeps 0.1 s; a loaded machine only adds


def test_a_reward_outside_the_declared_range_is_reported(reg):
    tid = first_task(reg, "broken/out-of-range-v1").id
    assert problems(reg, "broken/out-of-range-v1")[0] == (
        f"broken/out-of-range-v1: reward 2.0 for the gold completion of task {tid} is outside the "
        "declared range [0.0, 1.0]"
    )


def test_a_missing_gold_completion_is_reported(reg):
    assert problems(reg, "broken/no-gold-v1") == [
        "broken/no-gold-v1: manifest says gold: true but task t2 has no gold completion"
    ]


def test_assert_domain_ok_raises_with_every_problem(reg):
    with pytest.raises(AssertionError, match="scored 0 \\(expected the maximum 1\\)"):
        assert_domain_ok(reg.get("broken/wrong-gold-v1"), across_processes=False)


def test_bad_inputs_cover_every_probe_the_contract_names():
    from rlhub import Task

    probes = bad_inputs(Task("t", "toy/x-v1", "What is 2+2?"))
    assert set(probes) == {"empty", "whitespace", "echoed prompt", "random garbage", "100 kB",
                           "control characters"}
    assert len(probes["100 kB"]) == 100_000
    assert probes["echoed prompt"] == "What is 2+2?"


def test_determinism_across_processes_uses_a_fresh_interpreter(monkeypatch):
    monkeypatch.setenv("RLHUB_PLUGINS", "toyplug")
    monkeypatch.setenv("RLHUB_DISABLE_AUTOLOAD", "1")
    from rlhub import plugins

    plugins.reset()
    try:
        assert check_domain("toy/reverse-v1", n=2) == []
    finally:
        plugins.reset()


def test_a_fresh_interpreter_that_loses_its_worker_is_tried_again_and_named(monkeypatch, tmp_path):
    """A lost worker in the fresh interpreter is rlhub's fault, not non-determinism: the kit
    tries once more and then says what failed, with the error's text."""
    log = tmp_path / "children"
    monkeypatch.setenv("RLHUB_PLUGINS", "toyplug,brokenplug")
    monkeypatch.setenv("RLHUB_DISABLE_AUTOLOAD", "1")
    monkeypatch.setenv("BROKEN_PARENT_PID", str(os.getpid()))
    monkeypatch.setenv("BROKEN_CHILD_LOG", str(log))
    from rlhub import plugins

    plugins.reset()
    try:
        found = check_determinism(plugins.registry().get("broken/lost-in-child-v1"))
    finally:
        plugins.reset()
    assert found == ["broken/lost-in-child-v1: sampling failed in a fresh interpreter, so "
                     "determinism across processes could not be checked: VerifierError: bounded "
                     "worker: not ready within 120 s"]
    assert len(set(log.read_text().split())) == 2
