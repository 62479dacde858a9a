"""The repository is self-contained: a fresh clone needs nothing of the machine it was made on."""

from __future__ import annotations

import os
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
