"""rlhub-swe: task kinds, grading, its defences past the guard, levels, the agent episode."""

from __future__ import annotations

import json
import random

import pytest

import rlhub
from rlhub import make_patch
from rlhub_swe.diffs import apply_patch
from rlhub_swe.domain import SweDomain
from rlhub_swe.synth import tasks
from rlhub_swe.synth.repo import LEVELS


@pytest.fixture(scope="module")
def reg():
    registry = rlhub.registry()
    yield registry
    registry.services.close()


def _score(domain, task, changes):
    return domain.finalize(domain.grader.grade(task.id, SweDomain.suite(task), changes))


@pytest.mark.parametrize("kind", tasks.KINDS)
def test_the_reference_patch_resolves_each_task_kind_and_no_change_does_not(reg, kind):
    domain = reg.get(f"swe/syn-{kind}-s-v1")
    task = domain.task("train", 3, 0)
    assert domain.verify(task, task.gold).reward == 1.0
    nothing = _score(domain, task, {})
    assert nothing.components["fail_to_pass"] < 1.0 and nothing.reward == 0.0


def test_the_obvious_local_fix_of_a_dont_break_task_breaks_its_callers(reg):
    domain = reg.get("swe/syn-dont-break-s-v1")
    task = domain.task("train", 1, 0)
    facts = task.meta["provenance"]
    module, _ = facts["function"].split(".")
    path = f"{task.meta['package']}/{module}.py"
    gold = apply_patch(task.meta["patch"], task.meta["files"])
    local = {path: gold[path]}  # the function fixed, its callers' compensations left
    score = _score(domain, task, local)
    assert score.components["fail_to_pass"] == 1.0
    assert score.components["pass_to_pass"] < 1.0 and score.reward == 0.0


@pytest.mark.parametrize("code", [
    "import os\nos._exit(0)\n",
    "import sys\nsys.exit(0)\n",
    "print('{\"rlhub_swe\": [\"tests/x.py::t\", \"call\", \"passed\"], \"nonce\": \"00\"}')\n",
])
def test_attacks_that_slip_past_the_guard_still_win_nothing(reg, code):
    """The grader itself (no guard in front of it) must not be fooled by exits or printed
    result lines (a runner patched from the package is the guard's to refuse: repo probes)."""
    domain = reg.get("swe/syn-fix-issue-s-v1")
    task = domain.task("train", 5, 0)
    init = f"{task.meta['package']}/__init__.py"
    score = _score(domain, task, {init: code + task.meta["files"][init]})
    assert score.reward == 0.0 and score.components["fail_to_pass"] == 0.0


def test_levels_grow_to_a_120000_character_prompt(reg):
    sizes = {}
    for level in ("s", "xl", "xxl"):
        task = reg.get(f"swe/syn-fix-test-{level}-v1").task("train", 0, 0)
        sizes[level] = len(task.prompt_text())
    assert sizes["s"] < 12_000 < 4 * 30_000 <= sizes["xl"]  # 30k tokens at 4 characters each
    assert sizes["xxl"] >= 120_000


def test_a_repository_has_a_call_graph_across_modules():
    repo, _ = tasks.make(random.Random(2), "rename", LEVELS["l"])
    crossing = [f for f in repo.functions.values()
                if any(repo.functions[c].module != f.module for c in f.shape.calls)]
    assert len(crossing) >= 5
    depth = max(repo.layers.values())
    assert depth >= 3


def test_a_patch_touching_tests_or_configuration_earns_the_minimum(reg):
    domain = reg.get("swe/syn-fix-test-s-v1")
    task = domain.task("train", 0, 0)
    test = next(p for p in task.meta["files"] if p.startswith("tests/"))
    for path, text in ((test, "def test_ok():\n    pass\n"), ("conftest.py", "x = 1\n")):
        patch = make_patch(task.meta["files"], {path: text})
        score = domain.verify(task, f"```diff\n{patch}```")
        assert score.reward == 0.0 and "Refused" in score.feedback


def _call(name, **arguments):
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_an_agent_reads_runs_tests_fails_a_submission_and_repairs(reg):
    domain = reg.get("swe/syn-fix-test-s-agent-v1")
    task = domain.task("train", 0, 0)
    episode = domain.start(task)
    try:
        first = episode.step(_call("list_files") + '<tool name="read_file">{"path": "'
                             f'{task.meta["package"]}/__init__.py"}}</tool>')
        assert first.messages[0]["tool_calls"][1]["function"]["name"] == "read_file"
        assert [m["role"] for m in first.messages] == ["assistant", "tool", "tool"]
        assert "tests/" in first.messages[1]["content"]
        ran = episode.step({"role": "assistant", "content": None, "tool_calls": [
            {"id": "x", "type": "function", "function": {"name": "run_tests",
                                                         "arguments": "{}"}}]}["tool_calls"]
                           and rlhub.completion_text({"content": "", "tool_calls": [
                               {"id": "x", "type": "function",
                                "function": {"name": "run_tests", "arguments": "{}"}}]}))
        assert "failed" in ran.messages[1]["content"] and not ran.done
        wrong = episode.step(_call("submit"))
        assert not wrong.done and wrong.info["attempt"] and wrong.score.reward == 0.0
        done = episode.step(task.gold)
        assert done.done and done.score.reward == 1.0 and done.info["repair"] == 1
    finally:
        episode.close()
    hidden = next(iter(task.meta["hidden"]))
    assert hidden not in first.messages[1]["content"]


def test_a_real_project_is_pinned_and_its_tasks_carry_provenance(reg):
    from rlhub_swe.real.prepare import fetch
    from rlhub_swe.real.projects import PROJECTS

    task = reg.get("swe/real-inflection-fix-test-v1").task("test", 0, 0)
    prov = task.meta["provenance"]
    assert prov["sdist_sha256"] == PROJECTS["inflection"].sha256 and prov["fail_to_pass"]
    assert prov["original_sha256"] and prov["file"].startswith("inflection/")
    forged = PROJECTS["inflection"].__class__(**{**PROJECTS["inflection"].__dict__,
                                                 "sha256": "0" * 64})
    with pytest.raises(ValueError, match="refusing it"):
        fetch(forged)
