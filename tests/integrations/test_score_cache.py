"""The local trainer's score cache: least recently used verdicts go first, never one still needed."""

from __future__ import annotations

from typing import Any

import toyplug

from rlhub import Registry
from rlhub.integrations.trainer.heldout import ScoreCache


def cache(size: int) -> tuple[ScoreCache, Any]:
    domain = Registry(plugins=[toyplug], autoload=False).get("toy/reverse-v1")
    return ScoreCache({domain.id: domain}, size=size, workers=1), domain


def test_a_full_cache_serves_a_batch_that_mixes_its_oldest_hit_with_new_pairs() -> None:
    scores, domain = cache(2)
    a, b, c = (domain.task("train", 0, i) for i in range(3))
    scores.scores([a, b], [a.gold, "x"])
    got = scores.scores([a, c], [a.gold, c.gold])  # a is the oldest; storing c evicts one
    assert [s.reward for s in got] == [1.0, 1.0]


def test_the_least_recently_used_verdict_is_evicted_not_the_oldest_stored() -> None:
    scores, domain = cache(2)
    a, b, c = (domain.task("train", 0, i) for i in range(3))
    scores.scores([a], [a.gold])
    scores.scores([b], [b.gold])
    scores.scores([a], [a.gold])  # a is used again: b is now the least recent
    scores.scores([c], [c.gold])
    assert set(scores._scores) == {(a.id, a.gold), (c.id, c.gold)}
