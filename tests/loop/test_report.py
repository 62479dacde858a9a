"""``rlhub report``: the HTML page and its PNG plots, checked in headless Chromium."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rlhub.evaluate import EvalConfig, run_eval
from rlhub.report import PLOTS, render_report

from conftest import RLHUB, cli_env


@pytest.fixture
def run_dir(reg, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    mixture = {"domains": {"looptest/reverse-v1": {}, "looptest/add-v1": {}}}
    run_eval(EvalConfig(mixture=mixture, policy="oracle:wrong-first", out=str(out), n=4,
                        tensorboard=False), registry=reg)
    return out


def test_the_report_writes_an_html_page_and_every_plot_as_png(run_dir: Path) -> None:
    index = Path(render_report(str(run_dir)))
    assert index == run_dir / "report" / "index.html"
    page = index.read_text()
    for name, title in PLOTS:
        assert (index.parent / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"<img src='{name}' alt='{title}'>" in page
    assert "looptest/reverse-v1" in page and "+1.000" in page  # the repair gain, in the table


def test_the_report_counts_infrastructure_failures_apart_from_the_pass_rate(reg, tmp_path):
    out = tmp_path / "crashy"
    run_eval(EvalConfig(mixture={"domains": {"looptest/crashy-v1": {}}}, policy="oracle:right",
                        out=str(out), n=4, tensorboard=False), registry=reg)
    page = Path(render_report(str(out))).read_text()
    assert "overall pass@1 1.000 over the model's own outcomes" in page
    assert "2 infrastructure failures left out" in page
    assert "<td>2 (verifier 2)</td>" in page


def test_rlhub_report_prints_the_path_of_the_page(run_dir: Path, rlhub_home: Path) -> None:
    done = subprocess.run([RLHUB, "report", str(run_dir)], env=cli_env(rlhub_home),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{run_dir}/report/index.html"
    as_json = subprocess.run([RLHUB, "report", str(run_dir), "--json"], env=cli_env(rlhub_home),
                             capture_output=True, text=True, timeout=120)
    assert json.loads(as_json.stdout) == {"run": str(run_dir), "kind": "eval",
                                          "index": f"{run_dir}/report/index.html"}


def test_headless_chromium_shows_every_section_and_loads_every_image(run_dir: Path,
                                                                     tmp_path: Path) -> None:
    from headless import load_page

    page = load_page(Path(render_report(str(run_dir))), tmp_path / "profile")
    assert page.problems == [] and page.broken_images == []
    assert sorted(i["src"] for i in page.images) == sorted(name for name, _ in PLOTS)
    assert page.headings == ["rlhub eval report", *(title for _, title in PLOTS),
                             "Example trajectories", "Run"]
    assert "looptest/reverse-v1" in page.text and "95% CI" in page.text


def test_the_browser_check_sees_a_missing_image_a_corrupt_one_and_a_script_error(
        tmp_path: Path) -> None:
    from headless import load_page

    (tmp_path / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    index = tmp_path / "index.html"
    index.write_text("<!doctype html><html><body><h1>t</h1><img src='missing.png'>"
                     "<img src='corrupt.png'><script>undefined_name()</script></body></html>")
    page = load_page(index, tmp_path / "profile")
    assert sorted(page.broken_images) == ["corrupt.png", "missing.png"]
    assert any("undefined_name" in p for p in page.problems)
    assert any(p.startswith("request failed") or "missing.png" in p for p in page.problems)


def test_pass_rates_carry_wilson_intervals_that_stay_inside_zero_and_one() -> None:
    from rlhub.pages import wilson

    lo, hi = wilson(1.0, 4)
    assert hi == 1.0 and 0.5 < lo < 0.52  # 4 of 4: 0.510..1, not the empty normal interval
    assert wilson(0.0, 4)[0] == 0.0 and wilson(0.5, 0) == (0.0, 1.0)
    lo, hi = wilson(0.5, 100)
    assert lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)
