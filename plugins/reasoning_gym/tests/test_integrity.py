"""Constant and hedged answers earn nothing on any reasoning-gym domain where they are wrong."""

from __future__ import annotations

import pytest

import rlhub

IDS = [d for d in rlhub.registry().ids() if d.startswith("rg/")]
WITH_ANSWERS = [d for d in IDS if rlhub.registry().manifest(d).data["gold"]]
CONSTANTS = ("0", "1", "-1", "Yes", "No", "True", "False", "None", "", "0123456789")


def answers(domain, n: int = 6) -> list[str]:
    return list(dict.fromkeys(t.answer for t in domain.sample(n, seed=4242) if t.answer))


@pytest.mark.parametrize("domain_id", WITH_ANSWERS)
def test_a_wrong_constant_or_a_hedge_earns_nothing(domain_id):
    domain = rlhub.registry().get(domain_id)
    task = domain.task("train", 0, 0)
    others = [a for a in answers(domain) if a != task.answer][:3]
    for constant in (*CONSTANTS, *others):
        score = domain.verify(task, f"<answer>{constant}</answer>")
        assert score.passed or score.reward == 0.0, (constant, score.reward)
    for other in others:
        for sep in ("", " ", " or ", ", "):
            first = domain.verify(task, f"<answer>{task.answer}{sep}{other}</answer>")
            last = domain.verify(task, f"<answer>{other}{sep}{task.answer}</answer>")
            assert not (first.passed and last.passed), (sep, other)
            assert first.passed or first.reward == 0.0, (sep, other, first.reward)
            assert last.passed or last.reward == 0.0, (sep, other, last.reward)


def test_every_rg_domain_declares_exact_scoring():
    for domain_id in IDS:
        assert rlhub.registry().manifest(domain_id).scoring == "exact", domain_id


def test_a_one_character_constant_is_not_paid_for_a_matching_prefix_of_the_number():
    domain = rlhub.registry().get("rg/coin_flip-v3")
    tasks = [t for t in domain.sample(20, seed=7) if t.answer.startswith("0.")]
    assert len(tasks) >= 5
    for task in tasks:
        assert domain.score(task, "0") == 1.0  # reasoning-gym's scorer: a matching prefix
        score = domain.verify(task, "<answer>0</answer>")
        assert (score.reward, score.passed, score.components["score"]) == (0.0, False, 1.0)
        assert "is not the number asked for" in score.feedback
        assert domain.verify(task, task.gold).reward == 1.0

