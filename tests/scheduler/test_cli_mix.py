"""``rlhub mix``: the run log format, ``mix plot`` writing a PNG, ``mix show``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from rlhub.cli import app
from rlhub.cli.mix import series
from rlhub.errors import SchedulerError
from rlhub.scheduler import LOG_NAME, Scheduler, log_weights, read_weights

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def logged_run(run_dir, steps: int = 12) -> None:
    """A short adaptive run over three domains that logs every decision."""
    sched = Scheduler.simulation({"domains": {d: {"reward_range": [0, 1]} for d in "abc"}})
    rng = np.random.default_rng(0)
    for step in range(steps):
        for domain, k in sched.allocate(24).items():
            rate = {"a": 1.0, "b": 0.5, "c": 0.1}[domain]
            sched.observe(domain, (rng.random((k, 8)) < rate).astype(float).tolist())
        sched.log(run_dir, step, counts={d: c["groups"] for d, c in sched.counts().items()})


def test_the_scheduler_log_has_one_json_line_per_decision(tmp_path):
    logged_run(tmp_path, steps=5)
    lines = (tmp_path / LOG_NAME).read_text().splitlines()
    assert len(lines) == 5
    first = json.loads(lines[0])
    assert first["step"] == 0 and set(first["weights"]) == {"a", "b", "c"}
    assert sum(first["weights"].values()) == pytest.approx(1.0)
    assert [row["step"] for row in read_weights(tmp_path)] == [0, 1, 2, 3, 4]


def test_plot_writes_a_png_of_the_weights(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib (the rlhub[report] extra) is not installed")
    logged_run(tmp_path)
    result = CliRunner().invoke(app, ["mix", "plot", str(tmp_path)])
    assert result.exit_code == 0, result.output
    png = tmp_path / "scheduler_weights.png"
    assert result.stdout.strip() == str(png)
    data = png.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 5_000


def test_plot_honours_out_and_sums_domains_beyond_top(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib (the rlhub[report] extra) is not installed")
    logged_run(tmp_path)
    out = tmp_path / "plots" / "w.png"
    result = CliRunner().invoke(app, ["mix", "plot", str(tmp_path), "--out", str(out), "--top", "1"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == PNG_MAGIC
    steps, lines = series(read_weights(tmp_path), top=1)
    assert len(lines) == 2 and "other (2 domains)" in lines
    for i in range(len(steps)):
        assert sum(line[i] for line in lines.values()) == pytest.approx(1.0)


def test_plot_json_names_the_png_and_what_it_drew(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib (the rlhub[report] extra) is not installed")
    logged_run(tmp_path)
    result = CliRunner().invoke(app, ["mix", "plot", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"png": str(tmp_path / "scheduler_weights.png"),
                                         "decisions": len(read_weights(tmp_path)),
                                         "lines": ["a", "b", "c"]}


def test_plot_without_a_log_exits_with_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["mix", "plot", str(tmp_path)])
    assert result.exit_code == 2
    assert f"expected a scheduler log at {tmp_path / LOG_NAME}, found no such file" in result.output


def test_a_malformed_log_line_is_reported_with_its_line_number(tmp_path):
    log_weights(tmp_path, 0, {"a": 1.0})
    with (tmp_path / LOG_NAME).open("a") as fh:
        fh.write('{"step": "one", "weights": {}}\n')
    with pytest.raises(SchedulerError, match=r"scheduler.jsonl line 2: expected \{step: int"):
        read_weights(tmp_path)


def test_show_expands_globs_against_installed_domains_and_prints_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("RLHUB_PLUGINS", "toyplug")
    mix = tmp_path / "mix.yaml"
    mix.write_text("strategy: static\ndomains: {'toy/*': 1, toy/copy-v1: 3}\n")
    result = CliRunner().invoke(app, ["mix", "show", str(mix), "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["weights"] == {"toy/copy-v1": 0.75, "toy/reverse-v1": 0.25}
    assert shown["config"]["strategy"] == "static"
