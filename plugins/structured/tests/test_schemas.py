"""JSON Schema levels: each adds its features; golds validate; invented fields are checked."""

import json
import random

import pytest

import rlhub
from rlhub_structured.schemas import build


def features(schema):
    """Every schema keyword used anywhere in ``schema``."""
    found = set()
    if isinstance(schema, dict):
        found |= set(schema)
        for value in schema.values():
            found |= features(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= features(value)
    return found


EXPECTED = {1: set(), 2: {"enum", "minimum", "additionalProperties"}, 3: {"minItems", "maxItems"},
            4: {"pattern", "uniqueItems", "maxLength"}, 5: {"oneOf", "const"}}


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_each_level_uses_its_own_features_and_those_of_the_levels_below(level):
    for seed in range(20):
        _, obj = build(random.Random(seed), level)
        used = features(obj.schema())
        for lower in range(1, level + 1):
            assert EXPECTED[lower] <= used, (level, lower)
        for higher in range(level + 1, 6):
            assert not EXPECTED[higher] & used - set().union(*(EXPECTED[k] for k in range(1, level + 1)))


def test_level_two_has_optional_fields_and_the_gold_leaves_out_the_unstated_one():
    _, obj = build(random.Random(3), 2)
    optional = set(obj.properties) - set(obj.required)
    assert len(optional) == 2 and len(optional & set(obj.instance)) == 1


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_golds_score_the_maximum_and_echoes_do_not_over_many_seeds(level):
    domain = rlhub.registry().get(f"structured/json-schema-l{level}-v2")
    for seed in range(30):
        task = domain.task("train", seed, seed)
        assert domain.verify(task, task.gold).reward == 1.0
        assert domain.verify(task, task.prompt_text()).reward == 0.0


def _gold_object(task):
    return json.loads(task.gold.strip().removeprefix("```json").removesuffix("```"))


def test_an_invented_field_passes_when_it_matches_the_pattern_and_fails_when_it_does_not():
    domain = rlhub.registry().get("structured/json-schema-l4-v2")
    task = domain.task("train", 0, 0)
    obj = _gold_object(task)
    free = next(k for k, s in task.answer["schema"]["properties"].items() if "pattern" in s)
    obj[free] = obj[free][::-1] + "x"
    score = domain.verify(task, json.dumps(obj))
    assert score.reward == 0.0 and free in score.feedback


def test_a_oneof_contact_with_both_variants_mixed_fails_the_schema():
    domain = rlhub.registry().get("structured/json-schema-l5-v2")
    task = domain.task("train", 0, 2)
    obj = _gold_object(task)
    obj["contact"]["number" if "address" in obj["contact"] else "address"] = "x"
    score = domain.verify(task, json.dumps(obj))
    assert score.components["schema_ok"] == 0.0 and score.components["values"] == 1.0


def _placeholder(value):
    if isinstance(value, dict):
        return {k: _placeholder(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_placeholder(v) for v in value]
    if isinstance(value, bool):
        return False
    return 0 if isinstance(value, (int, float)) else "x"


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_a_placeholder_object_that_only_validates_earns_nothing(level):
    domain = rlhub.registry().get(f"structured/json-schema-l{level}-v2")
    for index in range(10):
        task = domain.task("train", 2, index)
        score = domain.verify(task, json.dumps(_placeholder(_gold_object(task))))
        assert score.reward == 0.0 and not score.passed
        assert score.components["values"] < 1.0  # logged: the stated values are missing
