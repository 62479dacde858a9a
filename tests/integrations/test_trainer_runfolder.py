"""Reading a training run folder back: steps from job keys, curves, intervals, hostile files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlhub.errors import RlhubError
from rlhub.integrations.trainer.runfolder import Group, bootstrap_mean, curves, job_key, read_run, step_of


def test_a_job_key_gives_back_its_step_counted_from_one_and_other_keys_give_none():
    assert step_of(job_key("math/tiny-succ-v1:train:0:7", 0, 3)) == 1
    assert step_of(job_key("odd#step9/x:train:0:1", 41, 0)) == 42  # the last mark counts
    for key in ("", "3f2a9c", "math/x-v1:test:0:1", "t#stepx/1", "t#step/1", "t#step-1/0"):
        assert step_of(key) is None


def test_curves_average_group_means_per_bin_and_count_zero_variance_groups():
    groups = [Group(1, "a", [1.0, 1.0]), Group(1, "a", [0.0, 1.0]), Group(2, "a", [0.0, 0.0]),
              Group(2, "a", [], {"sandbox": 2}), Group(1, "b", [0.5, 0.5, 0.5])]
    lines = curves(groups, bins=30)
    one, two = lines["a"]
    assert (one.step, one.mean, one.groups, one.zero_variance) == (1, 0.75, 2, 0.5)
    assert one.lo < 0.75 < one.hi
    assert (two.mean, two.groups, two.zero_variance) == (0.0, 1, 0.5)  # faults: no signal
    assert lines["b"][0].zero_variance == 1.0
    wide = curves([Group(s, "a", [s % 2, 1.0]) for s in range(1, 101)], bins=10)["a"]
    assert len(wide) == 10 and [p.groups for p in wide] == [10] * 10 and wide[0].step == 5.5


def test_a_bootstrap_interval_holds_the_mean_and_skips_unscored_items():
    mean, lo, hi = bootstrap_mean([0.0, 1.0, None, float("nan"), 1.0, 0.0])
    assert mean == 0.5 and 0.0 <= lo < 0.5 < hi <= 1.0
    assert bootstrap_mean([None, None]) is None


def _folder(tmp_path: Path, events: list[str]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.jsonl").write_text("\n".join(events) + "\n")
    return run


def test_a_broken_line_inside_the_event_log_is_named_and_a_cut_last_line_is_tolerated(tmp_path):
    good = json.dumps({"kind": "phase_start", "step": 0, "phase": "warmup"})
    run = _folder(tmp_path, [good, "{not json", good])
    with pytest.raises(RlhubError, match=r"events.jsonl line 2: expected a JSON object, found "
                                         r"'\{not json'"):
        read_run(run)
    (run / "events.jsonl").write_text(good + '\n{"kind": "pha')
    assert [e["kind"] for e in read_run(run).events] == ["phase_start"]


def test_a_folder_that_is_no_training_run_is_refused_naming_what_was_expected(tmp_path):
    with pytest.raises(RlhubError, match="expected a training run .events.jsonl or summary.json"):
        read_run(tmp_path)


def test_text_from_the_run_folder_reaches_the_page_escaped(tmp_path):
    from rlhub.integrations.trainer.report import render_training_report

    hostile = "<script>alert(1)</script>"
    adjustment = {"kind": "adjustment", "step": 3, "control": "temperature", "domain": hostile,
                  "old": 1.0, "new": 1.1, "reason": hostile}
    run = _folder(tmp_path, [json.dumps(adjustment)])
    (run / "run.json").write_text(json.dumps({"policy": hostile, "domains": [hostile]}))
    page = Path(render_training_report(str(run))).read_text()
    assert "<script>" not in page and page.count("&lt;script&gt;") >= 3
