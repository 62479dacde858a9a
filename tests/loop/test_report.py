"""``rlhub report``: the HTML page and its PNG plots, checked in headless Chromium."""

from __future__ import annotations

import json

import shutil
import subprocess
from pathlib import Path

import pytest

from rlhub.evaluate import EvalConfig, run_eval
from rlhub.report import PLOTS, render_report

from conftest import RLHUB, cli_env

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--no-first-run"]


@pytest.fixture
def run_dir(reg, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    mixture = {"domains": {"looptest/reverse-v1": {}, "looptest/add-v1": {}}}
    run_eval(EvalConfig(mixture=mixture, policy="oracle:wrong-first", out=str(out), n=4,
                        tensorboard=False), registry=reg)
    return out


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("headless Chromium is not installed (apt-get install -y chromium)")


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
    assert json.loads(as_json.stdout) == {"run": str(run_dir),
                                          "index": f"{run_dir}/report/index.html"}


def test_headless_chromium_renders_the_report_with_its_images(run_dir: Path,
                                                              tmp_path: Path) -> None:
    from PIL import Image

    browser = _chromium()
    index = Path(render_report(str(run_dir)))
    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", index.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<img ") == len(PLOTS)
    assert "rlhub eval report" in dom.stdout
    shot = tmp_path / "shot.png"
    done = subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1200,2400",
                           "--hide-scrollbars", index.as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    pixels = Image.open(shot).convert("RGB").getdata()
    blue = sum(1 for r, g, b in pixels if abs(r - 31) < 12 and abs(g - 119) < 12 and b > 160)
    orange = sum(1 for r, g, b in pixels if r > 240 and abs(g - 127) < 15 and b < 40)
    # matplotlib's tab:blue and tab:orange appear only inside the plots, so they prove the
    # browser decoded and drew the PNGs rather than showing broken-image placeholders.
    assert blue > 2000 and orange > 500
