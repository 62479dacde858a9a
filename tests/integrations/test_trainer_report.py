"""``rlhub train`` talking to people, and ``rlhub report`` on a training run.

Two tiny real runs (a few steps of each phase) go through the command line as a user runs it,
with stdout to a pipe: one with ``--json``, one with the human summary. The first is also the run
the reports are rendered from, in headless Chromium, and evaluated as ``make demo`` does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="the local trainer needs the train extra (trl) installed")

RLHUB = str(Path(sys.executable).parent / "rlhub")
DOMAINS = ["math/tiny-succ-v1", "math/tiny-count-v1"]
TINY = f"""strategy: static
seed: 0
domains: {{{DOMAINS[0]}: {{weight: 1.0}}, {DOMAINS[1]}: {{weight: 1.0}}}}
train:
  threads: 1
  scheduler: {{strategy: adaptive, params: {{floor: 0.4}}}}
  warmup: {{steps: 4, batch_size: 16}}
  grpo: {{steps: 4, log_every: 1, store_every: 2, prompts_per_step: 4, generations: 4}}
  heldout: {{items: 4, samples: 2, every_steps: 2, inrun_items: 2, inrun_samples: 2}}
"""


def run_cli(*args: Any, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``rlhub ARGS`` in a child with stdout and stderr to pipes, as a script would run it."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([RLHUB, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def train(folder: Path, *flags: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    config = folder / "tiny.yaml"
    config.write_text(TINY)
    done = run_cli("train", config, "--out", folder / "run", *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / "run", done


@pytest.fixture(scope="module")
def json_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, str]:
    run, done = train(tmp_path_factory.mktemp("json"), "--json")
    return run, json.loads(done.stdout), done.stderr


def test_train_json_prints_the_summary_alone_on_stdout_and_progress_on_stderr(json_run):
    run, summary, stderr = json_run
    assert summary["run_dir"] == str(run) and summary["report"] == f"{run}/report/index.html"
    on_disk = json.loads((run / "summary.json").read_text())
    assert {k: v for k, v in summary.items() if k not in ("run_dir", "report")} == on_disk
    assert Path(summary["report"]).is_file()
    for line in ("warmup: started", "held-out before: mean reward", "grpo: step 4 of 4",
                 "held-out check at step 2", "save: done in"):
        assert line in stderr


def test_train_prints_a_readable_summary_whose_tables_stay_whole_in_a_pipe(tmp_path: Path):
    run, done = train(tmp_path)
    out = done.stdout
    summary = json.loads((run / "summary.json").read_text())
    header = next(line for line in out.splitlines() if "held-out domain" in line)
    assert all(col in header for col in ("before", "after", "delta", "95% CI", "items"))
    for domain in DOMAINS:
        row = next(line for line in out.splitlines() if domain in line)
        lo, hi = summary["delta"]["domains"][domain]["ci95"]
        assert f"{summary['before'][domain]:.3f}" in row and f"[{lo:+.3f}, {hi:+.3f}]" in row
    assert f"{summary['mean']['after']:.3f}" in next(
        line for line in out.splitlines() if "│ mean " in line)
    for phase, seconds in summary["timings_s"].items():
        assert any(phase in line and f"{seconds:.1f}" in line for line in out.splitlines())
    assert f"trajectories written: {summary['trajectories']} ({run}/trajectories)" in out
    assert "guards hit: none" in out and f"report: {run}/report/index.html" in out
    assert f"run folder: {run} " in out and "…" not in out
    assert "{" not in out  # no JSON on stdout without --json


def test_the_training_report_shows_every_section_in_a_real_browser(json_run, tmp_path: Path):
    from headless import load_page

    from rlhub.integrations.trainer.report import PLOTS

    run, summary, _ = json_run
    page = load_page(Path(summary["report"]), tmp_path / "profile")
    assert page.problems == [] and page.broken_images == []
    assert sorted(i["src"] for i in page.images) == sorted(PLOTS)
    assert page.headings == ["rlhub training report", "Held-out reward per domain",
                             "Training per domain", *PLOTS.values(), "Phases and guards",
                             "Control adjustments", "Run"]
    for domain in DOMAINS:
        assert domain in page.text
    assert f"{summary['mean']['before']:.3f} → {summary['mean']['after']:.3f}" in page.text


def test_rlhub_report_tells_a_training_run_from_the_eval_run_inside_it(json_run):
    run, _, _ = json_run
    evaluated = run_cli("eval", "--mixture", run.parent / "tiny.yaml", "--policy",
                        f"hf:{run}/model", "-n", "2", "--out", run / "eval")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    assert "infra failures" in evaluated.stderr  # the eval table, whole, through a pipe
    assert all(d in evaluated.stderr for d in DOMAINS)
    kinds = {}
    for folder in (run, run / "eval"):
        done = run_cli("report", folder, "--json")
        assert done.returncode == 0, done.stderr[-3000:]
        kinds[folder.name] = json.loads(done.stdout)
    assert kinds["run"] == {"run": str(run), "kind": "train",
                            "index": f"{run}/report/index.html"}
    assert kinds["eval"]["kind"] == "eval"
    assert "rlhub eval report" in Path(kinds["eval"]["index"]).read_text()


def test_an_unfinished_run_gets_a_report_of_what_it_has_written(json_run, tmp_path: Path):
    from rlhub.integrations.trainer.report import render_training_report

    run, _, _ = json_run
    partial = tmp_path / "partial"
    shutil.copytree(run, partial, ignore=shutil.ignore_patterns("summary.json", "heldout.json",
                                                                "report", "model"))
    with (partial / "events.jsonl").open("a") as fh:
        fh.write('{"kind": "phase_start", "st')  # a writer cut mid-line
    page = Path(render_training_report(str(partial))).read_text()
    assert "no summary.json: the run has not finished" in page
    assert "reward.png" in page and "weights.png" in page and "heldout.png" not in page


def test_a_report_that_cannot_render_fails_the_command_after_printing_the_summary(
        json_run, tmp_path: Path):
    from typer.testing import CliRunner

    from rlhub import hookimpl
    from rlhub.cli import app
    from rlhub.plugins import registry

    run, summary, _ = json_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report", "model"))
    events = (copy / "events.jsonl").read_text().splitlines()
    (copy / "events.jsonl").write_text("\n".join([events[0], "{torn", *events[1:]]) + "\n")
    saved = {k: v for k, v in summary.items() if k not in ("run_dir", "report")}

    class Finished:
        """A trainer backend whose run is already on disk."""

        @hookimpl
        def rlhub_make_trainer(self, backend: str, config: dict[str, Any]) -> Any:
            return type("T", (), {"run": lambda _self: saved})() if backend == "done" else None

    plugin = Finished()
    registry().pm.register(plugin, name="test-finished-trainer")
    try:
        config = tmp_path / "tiny.yaml"
        config.write_text(TINY)
        result = CliRunner().invoke(app, ["train", str(config), "--backend", "done", "--out",
                                          str(copy)])
    finally:
        registry().pm.unregister(plugin)
    assert result.exit_code == 1
    assert "report: not rendered" in result.stdout and "held-out domain" in result.stdout
    assert (f"error: the training finished and is saved in {copy}, but its report could not be "
            "rendered: RlhubError: ") in result.stderr and "line 2" in result.stderr
