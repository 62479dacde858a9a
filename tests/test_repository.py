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


def test_xdist_groups_keep_to_one_worker(tmp_path: Path):
    """`make test` relies on xdist_group (serial infra tests, a guide's dependent blocks): tests
    of one group must run on one worker, which an incompatible pytest silently breaks."""
    (tmp_path / "test_grouped.py").write_text(
        "import os, pytest\n"
        "@pytest.mark.parametrize('i', range(8))\n"
        "@pytest.mark.xdist_group('one')\n"
        "def test_a(i):\n"
        f"    open({str(tmp_path / 'workers')!r}, 'a').write(os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
                           "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-c", os.devnull,
                           str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    workers = (tmp_path / "workers").read_text().split()
    assert len(workers) == 8 and len(set(workers)) == 1, workers
