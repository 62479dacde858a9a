"""Format checkers: the pattern and the value are judged separately."""

import datetime as dt
import re

import pytest

import rlhub
from rlhub_structured.formats import (DURATION, IDENTIFIER_STYLES, ISO_INSTANT, SEMVER, ordinal,
                                      offset_text)

FORMATS = ["date", "timestamp", "phone", "semver", "identifier", "duration"]


def domain_of(name):
    return rlhub.registry().get(f"structured/format-{name}-v{3 if name == 'duration' else 2}")


@pytest.mark.parametrize("name", FORMATS)
def test_gold_scores_the_maximum_and_variants_score_by_what_they_get_right(name):
    domain = domain_of(name)
    for seed in range(40):
        task = domain.task("train", seed, 1)
        assert domain.verify(task, task.gold).reward == 1.0
        assert domain.verify(task, f"Answer: `{task.gold}`").reward == 1.0
        assert re.fullmatch(task.answer["pattern"], task.gold)
        wrong = domain.verify(task, "not " + task.gold)
        assert wrong.reward == 0.0 and "not in the format" in wrong.feedback


@pytest.mark.parametrize("name", FORMATS)
def test_a_bare_pattern_with_the_wrong_value_earns_nothing(name):
    domain = domain_of(name)
    task = domain.task("train", 0, 0)
    others = [domain.task("train", 1, i).gold for i in range(8)]
    other = next(g for g in others if g != task.gold and re.fullmatch(task.answer["pattern"], g))
    score = domain.verify(task, other)
    assert score.reward == 0.0 and not score.passed
    assert score.components == {"format": 1.0, "correct": 0.0}  # logged, never paid


def test_a_well_formed_but_wrong_value_is_told_it_has_the_right_format():
    domain = rlhub.registry().get("structured/format-date-v2")
    task = domain.task("train", 0, 0)
    digits = [c for c in task.gold if c.isdigit()]
    other = "".join(str((int(c) + 1) % 10) if c.isdigit() else c for c in task.gold)
    assert digits
    score = domain.verify(task, other)
    assert score.components == {"format": 1.0, "correct": 0.0} and score.reward == 0.0
    assert "right format but is not the requested value" in score.feedback


@pytest.mark.parametrize("text,ok", [
    ("1.0.0", True), ("10.20.30-rc.1+build.5", True), ("1.0.0-alpha.beta", True),
    ("01.0.0", False), ("1.0", False), ("1.0.0-", False), ("1.0.0+", False), ("v1.0.0", False),
])
def test_the_semver_pattern_follows_the_specification(text, ok):
    assert (re.fullmatch(SEMVER, text) is not None) is ok


@pytest.mark.parametrize("text,ok", [
    ("P3D", True), ("PT5M", True), ("P1DT2H30M", True), ("PT1H0M", True),
    ("P", False), ("PT", False), ("P1DT", False), ("3D", False), ("P1W", False),
])
def test_the_duration_pattern_rejects_empty_and_dangling_parts(text, ok):
    assert (re.fullmatch(DURATION, text) is not None) is ok


def test_identifier_styles_produce_text_their_own_pattern_accepts():
    words = ["cobalt", "river", "signal"]
    made = {style: join(words) for style, (join, _) in IDENTIFIER_STYLES.items()}
    assert made == {"snake_case": "cobalt_river_signal", "SCREAMING_SNAKE_CASE": "COBALT_RIVER_SIGNAL",
                    "kebab-case": "cobalt-river-signal", "camelCase": "cobaltRiverSignal",
                    "PascalCase": "CobaltRiverSignal"}
    for style, (_, pattern) in IDENTIFIER_STYLES.items():
        assert re.fullmatch(pattern, made[style])
        others = [made[s] for s in made if s != style]
        assert not any(re.fullmatch(pattern, text) for text in others)


def test_small_helpers_spell_ordinals_and_offsets():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st"]
    assert [offset_text(m) for m in (0, 330, -210)] == ["+00:00", "+05:30", "-03:30"]


def test_utc_timestamps_denote_the_same_instant_as_the_local_time_in_the_prompt():
    domain = rlhub.registry().get("structured/format-timestamp-v2")
    for seed in range(60):
        task = domain.task("train", seed, 0)
        assert re.fullmatch(ISO_INSTANT, task.gold)
        when = dt.datetime.fromisoformat(task.gold.replace("Z", "+00:00"))
        clock = re.search(r"(\d+):(\d\d):(\d\d) (AM|PM)", task.prompt).groups()
        hour = int(clock[0]) % 12 + (12 if clock[3] == "PM" else 0)
        offset = re.search(r"UTC([+-]\d\d):(\d\d)", task.prompt).groups()
        minutes = int(offset[0]) * 60 + (int(offset[1]) if offset[0][0] == "+" else -int(offset[1]))
        local = when.astimezone(dt.timezone(dt.timedelta(minutes=minutes)))
        assert (local.hour, local.minute, local.second) == (hour, int(clock[1]), int(clock[2]))
