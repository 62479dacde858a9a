"""A score has one shape on the reward path: a turn holds its Score, and the stored turn's score
columns are derived from Score's fields, so one function turns a score into columns and back."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Optional, get_type_hints

import pyarrow as pa
import pytest

from rlhub import Score, Task
from rlhub.parquet import parquet_bytes, parquet_table
from rlhub.rollout import Trajectory, Turn, apply_step
from rlhub.store import (SCHEMA, TrajectoryStore, column_type, decode_row, score_columns,
                         score_struct, stored_score, trajectory_row, turn_struct)

SCORE = Score(0.25, {"correct": 0.0, "format": 1.0}, False, "wrong sum", None,
              {"status": "ok", "stdout": "3"}, "answer")


@dataclass
class Graded(Score):
    """A score with three fields more, as a new field of Score would add them."""

    confidence: float = 0.0
    votes: dict[str, int] = field(default_factory=dict)
    trace: list[Any] | None = None


def test_a_score_survives_its_stored_columns_unchanged():
    columns = score_columns(SCORE)
    assert isinstance(columns["exec"], str) and columns["components"] == [
        ("correct", 0.0), ("format", 1.0)]
    assert stored_score(columns) == SCORE


def test_a_turn_holds_its_score_and_copies_none_of_its_fields():
    turn = Turn(0, [], "x", SCORE)
    assert turn.score is SCORE and turn.exec_status == "ok"
    assert not {f.name for f in fields(Turn)} & {f.name for f in fields(Score)}


def test_the_stored_turns_score_columns_are_scores_fields_typed_by_their_annotations():
    turn = SCHEMA.field("turns").type.value_type
    names = [f.name for f in fields(Score)]
    hints = get_type_hints(Score)
    assert [f.name for f in turn if f.name in names] == names
    assert [turn.field(name) for name in names] == score_struct()
    assert [turn.field(name).type for name in names] == [column_type(hints[n])[0] for n in names]


@pytest.mark.parametrize(("annotation", "arrow", "how"), [
    (float, pa.float64(), "value"),
    (bool, pa.bool_(), "value"),
    (int | None, pa.int64(), "value"),
    (Optional[str], pa.string(), "value"),
    (dict[str, float], pa.map_(pa.string(), pa.float64()), "map"),
    (dict[str, int], pa.map_(pa.string(), pa.int64()), "map"),
    (dict[str, Any] | None, pa.string(), "json"),
    (list[str], pa.string(), "json"),
    (Any, pa.string(), "json"),
], ids=repr)
def test_an_annotation_names_its_arrow_type_and_how_a_value_is_kept(annotation, arrow, how):
    assert column_type(annotation) == (arrow, how)


def test_a_new_score_field_becomes_a_stored_column_with_no_other_edit():
    struct = turn_struct([("index", pa.int32()), "reward", ("status", pa.string())], Graded)
    assert struct.names == ["index", "reward", "status", "components", "passed", "feedback",
                            "error", "exec", "failure", "confidence", "votes", "trace"]
    assert struct.field("confidence").type == pa.float64()
    assert struct.field("votes").type == pa.map_(pa.string(), pa.int64())
    assert struct.field("trace").type == pa.string()  # anything not a scalar or map is JSON
    assert [f.name for f in score_struct(Graded)] == [f.name for f in fields(Graded)]


@pytest.mark.parametrize("score", [
    SCORE,
    Score(-1.0),
    Score(1.0, {"pass_frac": 1.0}, True, "ok", None, None, "none"),
    Score(0.0, {}, False, "", "SandboxError: no worker", {"status": "oom", "nested": [1, {"a": 2}]},
          "sandbox"),
    Graded(0.5, {"c": 0.5}, False, "half", confidence=0.75, votes={"yes": 2, "no": 1},
           trace=["step", {"n": 1}]),
], ids=["wrong-answer", "default", "pass", "sandbox-fault", "graded-subclass"])
def test_every_score_field_survives_a_parquet_round_trip(score):
    struct = turn_struct(["reward"], type(score))
    table = pa.Table.from_pylist([score_columns(score)], schema=pa.schema(list(struct)))
    [row] = parquet_table(parquet_bytes(table)).to_pylist()
    assert stored_score(row, type(score)) == score


def test_a_turns_score_is_stored_and_decoded_as_the_same_score():
    turn = Turn(0, [], "x")
    apply_step(turn, SCORE, {}, None)
    traj = Trajectory("d/x-v1", Task("t", "d/x-v1", "p"), turns=[turn])
    table = pa.Table.from_pylist([trajectory_row(traj)], schema=SCHEMA)
    [stored] = decode_row(parquet_table(parquet_bytes(table)).to_pylist()[0])["turns"]
    assert turn.score == SCORE and stored_score(stored) == SCORE
    assert {name: stored[name] for name in SCORE.to_dict()} == SCORE.to_dict()
    assert stored["exec_status"] == "ok"


def test_a_turn_keeps_a_copy_of_the_score_with_plain_numbers_and_storable_text():
    raw = Score(1, {"correct": 1}, 1, "bad \udcff byte", None, {"status": "ok", "t": {1, 2}})
    turn = Turn(0, [], "x")
    apply_step(turn, raw, {}, None)
    assert turn.score is not raw and raw.feedback == "bad \udcff byte"
    assert turn.score == Score(1.0, {"correct": 1.0}, True, "bad ? byte", None,
                               {"status": "ok", "t": "{1, 2}"})
    assert type(turn.score.reward) is float and type(turn.score.passed) is bool


def test_a_plugins_score_subclass_is_stored_as_the_fields_every_score_has(tmp_path):
    graded = Graded(1.0, {"c": 1.0}, True, "ok", confidence=0.9, votes={"yes": 3})
    turn = Turn(0, [], "x")
    apply_step(turn, graded, {}, None)
    store = TrajectoryStore(str(tmp_path / "run"))
    store.write([Trajectory("d/x-v1", Task("t", "d/x-v1", "p"), turns=[turn])])
    [stored] = store.rows()[0]["turns"]
    assert "confidence" not in stored and stored_score(stored) == Score(1.0, {"c": 1.0}, True, "ok")


@dataclass
class Forging(Score):
    """A plugin's score naming fields the stored turn has of its own, or retyping one."""

    completion: str = "forged by the plugin"
    index: str = "not a number"
    components: dict[str, Any] = field(default_factory=dict)


def stored_turn(tmp_path, score: Score, completion: str = "x") -> dict[str, Any]:
    turn = Turn(0, [], completion)
    apply_step(turn, score, {}, None)
    store = TrajectoryStore(str(tmp_path / "run"))
    store.write([Trajectory("d/x-v1", Task("t", "d/x-v1", "p"), turns=[turn])])
    [stored] = store.rows()[0]["turns"]
    return stored


def test_a_score_subclass_cannot_write_over_the_turns_own_columns_or_retype_a_score_column(
    tmp_path
):
    stored = stored_turn(tmp_path, Forging(1.0, {"c": 1.0}, True), completion="the model's")
    assert stored["completion"] == "the model's" and stored["index"] == 0
    assert stored_score(stored) == Score(1.0, {"c": 1.0}, True)


def test_a_score_with_undecodable_error_text_number_names_or_a_numeric_class_is_stored(
    tmp_path
):
    # a sandbox keeps the policy's undecodable output bytes as lone surrogates, and a verifier's
    # error may quote it; a plugin may name a component by a number or give its class as one
    odd = Score(0.0, {1: 0.5}, False, "", "SandboxError: stderr b'\udcff'", None, 3)
    stored = stored_turn(tmp_path, odd)
    assert stored["error"] == "SandboxError: stderr b'?'"
    assert stored["components"] == {"1": 0.5} and stored["failure"] == "3"
