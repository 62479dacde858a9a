"""Shared helpers for the benchmarks: timing summaries and JSON output.

Every bench prints its result through :func:`emit`, which also keeps it as
``bench/results/<bench>.json`` with the machine it ran on and the command that reproduces it;
BENCHMARKS.md is rendered from those files, so a figure in the docs is the last one measured.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def summary(seconds: list[float]) -> dict[str, float]:
    """Median, p99 and mean of durations, in milliseconds."""
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"n": len(ordered), "median_ms": statistics.median(ordered) * 1e3,
            "p99_ms": p99 * 1e3, "mean_ms": statistics.fmean(ordered) * 1e3}


def ratio(value: float, target: float, *, at_most: bool = False) -> str:
    """``value`` as a ratio with its target and whether it is met (``at_most``: lower is better)."""
    met = value <= target if at_most else value >= target
    return f"{value:.2f}× (target {'≤' if at_most else '≥'} {target:g}×: {'met' if met else 'not met'})"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {"cpus": os.cpu_count(), "memory_gib": _memory_gib(), "python": platform.python_version(),
            "system": f"{platform.system()} {platform.release()} {platform.machine()}"}


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        return None


Row = tuple[str, str, str]  # what was measured, the figure, its baseline or target


def emit(result: dict[str, Any], table: list[Row], note: str = "") -> None:
    """Print ``result`` as JSON and keep it under ``bench/results/<result["bench"]>.json``
    with the rows BENCHMARKS.md shows (``table``: what, figure, baseline or target, composed by
    the bench that knows what its figures mean) and a ``note`` saying what they show."""
    result = {**result, "table": [list(row) for row in table], "note": note}
    json.dump(result, sys.stdout, indent=2, default=float)
    sys.stdout.write("\n")
    if os.environ.get("RLHUB_BENCH_NO_SAVE"):
        return
    kept = {**result, "command": "python " + shlex.join(["bench/" + Path(sys.argv[0]).name,
                                                         *sys.argv[1:]]),
            "machine": machine(),
            "measured": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{result['bench']}.json"
    path.write_text(json.dumps(kept, indent=2, default=float) + "\n")
