"""One function turns a score into its stored columns and one reads it back."""

from __future__ import annotations

from rlhub import Score, Task
from rlhub.rollout import Trajectory, Turn, apply_step
from rlhub.store import decode_row, score_columns, stored_score, trajectory_row

SCORE = Score(0.25, {"correct": 0.0, "format": 1.0}, False, "wrong sum", None,
              {"status": "ok", "stdout": "3"}, "answer")


def test_a_score_survives_its_stored_columns_unchanged():
    columns = score_columns(SCORE)
    assert isinstance(columns["exec"], str) and columns["components"] == [
        ("correct", 0.0), ("format", 1.0)]
    assert stored_score(columns) == SCORE


def test_a_turns_score_is_stored_and_decoded_as_the_same_score():
    turn = Turn(0, [], "x")
    apply_step(turn, SCORE, {}, None)
    traj = Trajectory("d/x-v1", Task("t", "d/x-v1", "p"), turns=[turn])
    [stored] = decode_row(trajectory_row(traj))["turns"]
    assert turn.score == SCORE and stored_score(stored) == SCORE
    assert stored["exec_status"] == "ok" and stored["components"] == SCORE.components
