"""The json-schema-values verifier: schema validity plus the values the prompt stated."""

import pytest

import rlhub
from rlhub import Task
from rlhub_structured.verifiers import dotted, resolve, same

SERVICES = rlhub.registry().services

SCHEMA = {"type": "object", "required": ["n", "ok", "tags"], "additionalProperties": False,
          "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"},
                         "tags": {"type": "array", "items": {"type": "string"}}}}
VALUES = [{"path": ["n"], "value": 3}, {"path": ["ok"], "value": True},
          {"path": ["tags", 1], "value": "b"}]
TASK = Task("t", "structured/x-v1", "p", answer={"schema": SCHEMA, "values": VALUES})


def verify(completion):
    return SERVICES.verifier("json-schema-values").check(TASK, completion)


def test_the_verifier_is_registered_by_name_and_passes_a_correct_fenced_answer():
    verdict = verify('Here:\n```json\n{"n": 3, "ok": true, "tags": ["a", "b"]}\n```')
    assert verdict.passed and verdict.components == {"valid_json": 1.0, "schema_ok": 1.0,
                                                     "values": 1.0, "exact": 1.0}


def test_a_valid_object_with_a_wrong_value_fails_and_names_the_path():
    verdict = verify('{"n": 4, "ok": true, "tags": ["a", "c"]}')
    assert not verdict.passed and verdict.components["schema_ok"] == 1.0
    assert verdict.components["values"] == pytest.approx(1 / 3)
    assert "n: expected 3, found 4" in verdict.feedback and 'tags[1]: expected "b"' in verdict.feedback


def test_a_schema_violation_fails_even_when_every_value_is_right():
    verdict = verify('{"n": 3, "ok": true, "tags": ["a", "b"], "extra": 1}')
    assert not verdict.passed and verdict.components["values"] == 1.0
    assert verdict.components["schema_ok"] == 0.0 and "Schema violation" in verdict.feedback


def test_text_that_is_not_json_scores_nothing():
    verdict = verify("n is 3")
    assert not verdict.passed and set(verdict.components.values()) == {0.0}


def test_values_keep_booleans_apart_from_numbers():
    assert not same(True, 1) and not same(1, True) and not same(0, False)
    assert same(2, 2.0) and same([1, {"a": "x"}], [1.0, {"a": "x"}])
    assert not same({"a": 1}, {"a": 1, "b": 2}) and not same("1", 1)


def test_paths_resolve_through_objects_and_arrays_and_print_readably():
    doc = {"a": [{"b": 5}]}
    assert resolve(doc, ["a", 0, "b"]) == 5
    assert resolve(doc, ["a", 1, "b"]) is not None and resolve(doc, ["a", 1]) is resolve(doc, ["x"])
    assert dotted(["a", 0, "b"]) == "a[0].b" and dotted([]) == "(root)"


def test_an_answer_without_a_schema_is_a_clear_error():
    bad = Task("t", "structured/x-v1", "p", answer=[1])
    with pytest.raises(ValueError, match=r"expected task.answer = \{'schema'"):
        SERVICES.verifier("json-schema-values").check(bad, "{}")
