"""Shared helpers for the benchmarks: timing summaries and JSON output."""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any


def summary(seconds: list[float]) -> dict[str, float]:
    """Median, p99 and mean of durations, in milliseconds."""
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"n": len(ordered), "median_ms": statistics.median(ordered) * 1e3,
            "p99_ms": p99 * 1e3, "mean_ms": statistics.fmean(ordered) * 1e3}


def emit(result: dict[str, Any]) -> None:
    json.dump(result, sys.stdout, indent=2, default=float)
    sys.stdout.write("\n")
