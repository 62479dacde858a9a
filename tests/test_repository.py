"""The repository is self-contained: a fresh clone needs nothing of the machine it was made on."""

from __future__ import annotations

import json
import os
import sys
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tracked_links() -> dict[str, str]:
    """Every symbolic link git tracks, mapped to the target it stores."""
    listing = subprocess.run(
        ["git", "ls-files", "-s", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    entries = (entry.split("\t", 1) for entry in listing.split("\0") if entry)
    return {
        path: os.readlink(ROOT / path)
        for meta, path in entries
        if meta.startswith("120000 ") and (ROOT / path).is_symlink()
    }


def test_no_tracked_link_points_outside_the_repository():
    outside = {}
    for path, target in tracked_links().items():
        resolved = (ROOT / path).parent.joinpath(target).resolve()
        if not resolved.is_relative_to(ROOT):
            outside[path] = target
    assert outside == {}, f"tracked links leave the repository (expected none, found {outside})"


def test_benchmarks_md_is_what_the_benches_last_measured():
    """BENCHMARKS.md is rendered from bench/results/*.json, never typed: a hand edit or a result
    kept without rendering fails here."""
    done = subprocess.run([sys.executable, "bench/render.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_kept_bench_result_says_how_and_where_it_was_measured():
    for path in sorted((ROOT / "bench" / "results").glob("*.json")):
        result = json.loads(path.read_text())
        missing = {"bench", "command", "machine", "measured", "table"} - set(result)
        assert not missing, f"{path.name}: expected a result kept by bench/_util.emit, missing {missing}"
        assert result["bench"] == path.stem and result["table"], path.name
        assert all(len(row) == 3 for row in result["table"]), f"{path.name}: rows are (what, figure, baseline)"
