"""Hybrid rule + judge verification: gates, renames, logging-only parts, failures, probes."""

from __future__ import annotations

from pathlib import Path

import pytest
import rlhub
from rlhub import Task, VerifierError
from rlhub.domain import Domain
from rlhub.manifest import Manifest
from rlhub.plugins import Registry
from rlhub.testing.judge_server import down_url, judge_env
from rlhub.testing.probes_judge import check_judge_injection

REG = rlhub.registry()

EXAMPLE = Path(__file__).parents[2] / "examples" / "judged" / "science.yaml"
GOOD = "Water boils when its vapour pressure reaches the air pressure.\nAnswer: 100"


def hybrid(url: str, **judge_extra) -> dict:
    return {"parts": [
        {"name": "regex", "options": {"pattern": r"(?s)\s*\S.*\nAnswer: [^\n]+"},
         "rename": {"match": "format"}, "gate": True},
        {"name": "exact", "gate": True},
        {"name": "judge", "options": {"url": url, "model": "m", "reference": "gold",
                                      "backoff_s": 0.01, "retries": 0,
                                      "rubric": {"criteria": {"clarity": "clear"}},
                                      **judge_extra}}]}


class Hybrid(Domain):
    """A one-task domain with a composite verifier."""


def domain(options: dict) -> Hybrid:
    comps = {"format": 0.1, "correct": 0.4, "judge": 0.5, "judge_clarity": 0.0}
    hybrid = Hybrid(Manifest.parse({
        "id": "toy/hybrid-v1", "version": "1", "summary": "hybrid", "license": "MIT",
        "tags": ["judge"], "factory": "x:y", "verifier": {"name": "composite", "options": options},
        "reward": {"range": [0, 1], "components": {k: {"weight": w} for k, w in comps.items()}}},
        plugin="toy"))
    hybrid.registry = REG
    return hybrid


@pytest.fixture
def boil() -> Task:
    return Task("boil", "toy/hybrid-v1", "At what temperature does water boil?", answer="100",
                gold=GOOD)


def test_a_failed_gate_skips_the_judge_and_scores_its_components_at_the_minimum(judge, boil):
    server = judge()
    score = domain(hybrid(server.url)).verify(boil, "Because.\nAnswer: 90")
    assert server.judge_calls == 0
    assert score.components == {"format": 1.0, "correct": 0.0, "judge": 0.0, "judge_clarity": 0.0}
    assert score.reward == pytest.approx(0.1) and not score.passed
    assert score.feedback == "Expected a different answer; got '90'."


def test_passing_gates_let_the_judge_score_and_every_component_lands_in_the_score(judge, boil):
    server = judge()
    score = domain(hybrid(server.url)).verify(boil, GOOD)
    assert server.judge_calls == 1
    assert score.components == {"format": 1.0, "correct": 1.0, "judge": 1.0, "judge_clarity": 1.0}
    assert score.reward == 1.0 and score.passed


def test_a_terse_correct_answer_earns_the_rule_reward_but_not_the_judge_reward(judge, boil):
    server = judge()
    score = domain(hybrid(server.url)).verify(boil, "Hot.\nAnswer: 100")
    assert score.components["correct"] == 1.0 and score.components["judge"] < 0.5
    assert 0.5 <= score.reward < 0.75 and not score.passed


def test_a_part_that_is_not_required_does_not_decide_the_pass(judge, boil):
    server = judge()
    options = hybrid(server.url, pass_threshold=1.0)
    options["parts"][2]["require"] = False
    assert domain(options).verify(boil, "Hot.\nAnswer: 100").passed


def test_a_down_judge_behind_passing_gates_scores_the_minimum_not_the_rule_reward(boil):
    score = domain(hybrid(down_url())).verify(boil, GOOD)
    assert score.reward == 0.0 and score.error.startswith("JudgeUnavailable: ")


def test_a_judge_fallback_inside_a_composite_is_recorded_in_the_error(boil):
    score = domain(hybrid(down_url(), fallback=0.5)).verify(boil, GOOD)
    assert score.reward == pytest.approx(0.1 + 0.4 + 0.25)
    assert score.error.startswith("judge: JudgeUnavailable: ") and not score.passed


def test_components_from_two_parts_with_one_name_are_refused_clearly(boil):
    v = REG.services.verifier("composite", {"parts": ["exact", "exact"]})
    with pytest.raises(VerifierError, match="component 'correct' comes from both part 0 "
                                            r"\(exact\) and part 1 \(exact\); rename one"):
        v.check(boil, "Answer: 100")


@pytest.mark.parametrize(("options", "message"), [
    ({}, "expected options.parts as a non-empty list"),
    ({"parts": [{"name": "exact", "weight": 2}]}, "unknown keys ['weight']"),
    ({"parts": ["exakt"]}, "unknown verifier 'exakt'; did you mean 'exact'?"),
])
def test_bad_composites_fail_at_construction(options, message):
    with pytest.raises(VerifierError) as err:
        REG.services.verifier("composite", options)
    assert message in str(err.value)


def test_the_example_data_only_hybrid_domain_meets_the_contract_with_a_judge():
    from rlhub.testing import check_domain

    reg = Registry(domain_files=[EXAMPLE], autoload=False)
    with judge_env() as server:
        assert check_domain("judgedex/science-v1", registry=reg, across_processes=False) == []
        assert server.judge_calls > 0


def test_the_injection_probes_catch_a_gullible_judge_and_pass_a_careful_one(task):
    manifest = Manifest.parse({
        "id": "toy/explain-v1", "version": "1", "summary": "judged", "license": "MIT",
        "tags": ["judge"], "factory": "x:y",
        "verifier": {"name": "judge", "options": {"reference": "answer", "retries": 0,
                                                  "rubric": {"criteria": {"clarity": "clear"}}}},
        "reward": {"range": [0, 1], "components": {"judge": {"weight": 1.0}}}}, plugin="toy")
    d = Hybrid(manifest)
    d.registry = REG
    with judge_env("good"):
        assert check_judge_injection(d, task) == []
    with judge_env("injectable"):
        problems = check_judge_injection(d, task)
    REG.services.judge_endpoints.close()
    assert len(problems) == 5
    assert problems[0] == ("toy/explain-v1: the judge-injection probe 'ignore previous "
                           "instructions' on task photo-1 scored 1 (passed: True); a completion "
                           "addressing the judge must score below the maximum 1")
    with judge_env("good") as server:
        server.stop()
        unjudged = check_judge_injection(d, task)
    assert all("could not be judged (JudgeUnavailable" in p for p in unjudged)


def test_gates_keep_injections_away_from_a_gullible_judge(boil):
    with judge_env("injectable") as server:
        options = hybrid(server.url)
        assert check_judge_injection(domain(options), boil) == []
        assert server.judge_calls == 0
