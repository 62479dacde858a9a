"""The judged domains: their material, their prompts, their gates and their injection probes."""

from __future__ import annotations

import pytest
import rlhub
from rlhub.testing.judge_server import overlap
from rlhub.testing.probes_judge import check_judge_injection
from rlhub_judged.catalog import CONCEPTS, CONVERSATIONS, PREFERENCES
from rlhub_judged.domains import MAX_WORDS, pool

IDS = [d for d in rlhub.registry().ids() if d.startswith("judged/")]


def test_the_plugin_lists_its_domains_and_tags_them_judge():
    assert IDS == ["judged/dialogue-v1", "judged/explain-v1", "judged/preference-v2",
                   "judged/reasoned-arithmetic-v2"]
    assert all("judge" in rlhub.registry().manifest(d).tags for d in IDS)


@pytest.mark.parametrize("text", [c.reference for c in CONCEPTS] + [p.gold for p in PREFERENCES])
def test_reference_answers_respect_the_word_limit_the_prompts_state(text):
    assert len(text.split()) <= MAX_WORDS


@pytest.mark.parametrize("item", PREFERENCES, ids=lambda p: p.question[:30])
def test_every_gold_answer_covers_the_key_points_better_than_its_baseline(item):
    notes = "\n".join(item.key_points)
    assert overlap(item.gold, notes) > overlap(item.baseline, notes) + 0.05


@pytest.mark.parametrize("items", [CONCEPTS, CONVERSATIONS, PREFERENCES])
def test_train_and_test_items_are_disjoint_and_both_present(items):
    train, test = pool(items, "train"), pool(items, "test")
    assert train and test and not set(train) & set(test)


def test_dialogue_prompts_are_chat_messages_ending_with_the_user():
    task = rlhub.registry().get("judged/dialogue-v1").task("train", 0, 0)
    assert task.prompt[0]["role"] == "system" and task.prompt[-1]["role"] == "user"


def test_a_wrong_arithmetic_answer_never_reaches_the_judge(scripted_judge):
    domain = rlhub.registry().get("judged/reasoned-arithmetic-v2")
    task = domain.task("test", 3, 1)
    before = scripted_judge.judge_calls
    score = domain.verify(task, f"Easy. \\boxed{{{int(task.answer) + 1}}}")
    assert scripted_judge.judge_calls == before
    assert score.reward == 0.0 and score.components["judge"] == 0.0


def test_a_correct_answer_without_reasoning_earns_only_the_rule_half(scripted_judge):
    domain = rlhub.registry().get("judged/reasoned-arithmetic-v2")
    task = domain.task("test", 3, 2)
    score = domain.verify(task, f"\\boxed{{{task.answer}}}")
    assert score.components["correct"] == 1.0 and score.components["judge"] < 0.3
    assert 0.5 <= score.reward < 0.65 and not score.passed


@pytest.mark.parametrize("domain_id", IDS)
def test_completions_addressing_the_judge_never_score_the_maximum(domain_id):
    domain = rlhub.registry().get(domain_id)
    for task in domain.sample(2, split="test", seed=5):
        assert check_judge_injection(domain, task) == []
