"""Task generation: gold completions satisfy every constraint; prompts never do."""

import random
import re

import pytest

import rlhub
from rlhub_instruct import compose, words
from rlhub_instruct.constraints import KINDS
from rlhub_instruct.domain import constraints_of
from rlhub_instruct.plugin import FAMILIES

IDS = [d for d in rlhub.registry().ids() if d.startswith("instruct/")]


@pytest.mark.parametrize("domain_id", IDS)
def test_gold_scores_the_maximum_and_the_echoed_prompt_does_not_over_many_seeds(domain_id):
    domain = rlhub.registry().get(domain_id)
    for seed in range(40):
        task = domain.task("train", seed, seed * 7)
        assert domain.verify(task, task.gold).reward == 1.0
        echoed = domain.verify(task, task.prompt_text())
        assert echoed.reward < 1.0 and not echoed.passed and echoed.feedback


def test_every_constraint_kind_has_a_single_family_domain():
    covered = {kind for _, kinds, _ in FAMILIES for kind in kinds}
    assert covered == set(KINDS) - {"topic", "content"}


def test_combinations_hold_the_requested_number_of_pairwise_compatible_kinds():
    for seed in range(200):
        kinds = compose.pick_kinds(random.Random(seed), 3)
        assert len(set(kinds)) == 3
        assert not any(compose.conflicts(a, b) for a in kinds for b in kinds if a != b)


def test_a_task_carries_the_topic_constraint_and_its_family():
    task = rlhub.registry().get("instruct/no-commas-v3").task("train", 0, 0)
    assert [x.kind for x in constraints_of(task)] == ["topic", "content", "no_commas"]
    assert "," in task.prompt  # so an echoed prompt breaks the rule


def test_partial_credit_counts_the_instructions_followed_in_combinations():
    domain = rlhub.registry().get("instruct/combo2-v3")
    task = domain.task("train", 3, 1)
    topic = constraints_of(task)[0].word
    text = f"Something about the {topic}, maybe. " + " ".join(words.FILLERS)
    score = domain.verify(task, text)
    assert score.components["content"] == 1
    assert 0 < score.components["constraints"] < 1 and score.components["all_ok"] == 0
    assert score.reward == pytest.approx(0.3 * score.components["constraints"])


@pytest.mark.parametrize("domain_id", IDS)
def test_a_degenerate_response_that_keeps_every_format_rule_earns_nothing(domain_id):
    domain = rlhub.registry().get(domain_id)
    task = domain.task("train", 5, 2)
    topic = constraints_of(task)[0].word
    for text in (topic, topic.lower(), topic.upper(), f'"{topic}"', f'{{"response": "{topic}"}}',
                 f"<<{topic}>>\n{topic}", " ".join([topic] * 80) + ".",
                 re.split(r"(?<=[.!?])\s", task.gold)[0]):
        score = domain.verify(task, text)
        assert score.reward == 0 and not score.passed, text
        assert score.feedback.startswith("The response does not do the task yet")


def test_a_response_that_copies_the_instructions_earns_nothing():
    domain = rlhub.registry().get("instruct/lowercase-v3")
    task = domain.task("train", 0, 0)
    score = domain.verify(task, (task.gold + " " + task.prompt_text()).lower())
    assert score.reward == 0
    assert "copies the instruction" in score.feedback


def _vocabulary(texts):
    return {w.lower() for t in texts for w in re.findall(r"[A-Za-z]+", t)}


def test_gold_filler_never_uses_request_words_or_keywords():
    banned = {w for group in (words.GENRES, words.AUDIENCES, words.FOCUSES, words.TONES)
              for _, w in group}
    filler = _vocabulary(words.FILLERS + words.PREDICATES + words.OPENERS + words.KEYWORD_SENTENCES
                         + words.HIGHLIGHTS + words.START_PHRASES + words.END_PHRASES
                         + words.TITLE_TEMPLATES + words.PLACEHOLDERS + ("Fill in before sending",
                                                                         "Keep in mind that this is"))
    topics = {t for t, _ in words.TOPICS}
    assert not filler & banned
    assert not filler & set(words.KEYWORDS)
    assert not filler & topics
    assert not set(words.KEYWORDS) & (banned | topics)
    assert not any("," in s for s in words.FILLERS + words.END_PHRASES + words.START_PHRASES)


def test_sampling_depends_only_on_split_seed_and_index():
    domain = rlhub.registry().get("instruct/combo3-v3")
    assert domain.task("train", 4, 2) == domain.task("train", 4, 2)
    assert domain.task("train", 4, 2).prompt != domain.task("test", 4, 2).prompt
