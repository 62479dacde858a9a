"""The entry codec: JSON-safe, lossless, and enough for reasoning-gym's exact comparisons."""

import json
import math

import pytest

import rlhub
from rlhub import Task
from rlhub_reasoning_gym import codec


def roundtrip(value):
    return codec.decode(json.loads(json.dumps(codec.encode(value), allow_nan=False)))


def test_tuples_nested_in_lists_and_dicts_come_back_as_tuples():
    value = {"output": ((1, 2), (3, 4)), "pairs": [(0, "a"), (1, "b")]}
    assert roundtrip(value) == value
    assert isinstance(roundtrip(value)["output"][0], tuple)


def test_dicts_with_integer_or_dollar_keys_keep_their_keys():
    value = {"by_id": {1: "one", 2: (2,)}, "odd": {"$tuple": [1]}, "n": {None: 0, True: 1}}
    assert roundtrip(value) == value


def test_sets_and_non_finite_floats_survive_strict_json():
    value = {"s": {3, 1, 2}, "f": frozenset({"x"}), "inf": math.inf, "ninf": -math.inf}
    back = roundtrip(value)
    assert back == value and isinstance(back["f"], frozenset)
    assert math.isnan(roundtrip(math.nan))


def test_plain_json_values_are_left_unchanged():
    value = {"question": "q", "answer": "42", "metadata": {"a": [1, 2.5, None, True]}}
    assert codec.encode(value) == value


def test_unknown_types_are_refused_with_the_path_to_them():
    with pytest.raises(TypeError, match=r"entry\.metadata\.when: expected JSON-like data .* "
                                        r"found object"):
        codec.encode({"metadata": {"when": object()}})


def test_arc_agi_gold_scores_the_maximum_after_the_task_travels_as_json():
    """Plain JSON turns the tuple board into lists and arc_agi's own gold then scores 0.05."""
    domain = rlhub.registry().get("rg/arc_agi-v3")
    task = domain.task("train", 0, 0)
    travelled = Task.from_dict(json.loads(json.dumps(task.to_dict(), allow_nan=False)))
    assert domain.verify(travelled, travelled.gold).reward == 1.0
    assert any(codec.is_tagged(v) for v in task.meta["entry"]["metadata"].values())
