"""Shared helpers of the benches that train for real: child ``rlhub train`` runs and intervals.

A bench builds one training config per run, and :func:`train` runs it as a child process of the
venv's ``rlhub train`` (at the bench's niceness), or reuses the run folder when it already holds a
finished run, so an interrupted bench resumes where it stopped. Intervals: :func:`interval` is the
95% percentile interval of bootstrap replicates, :func:`t_interval` a Student t interval over
per-seed values (training noise; wide with 3 seeds).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}


def rlhub_cli() -> str:
    """The ``rlhub`` next to this interpreter (the venv's), else the one on PATH."""
    here = Path(sys.executable).with_name("rlhub")
    return str(here) if here.exists() else "rlhub"


def train(cfg: dict[str, Any], out: Path) -> dict[str, Any]:
    """``rlhub train`` in a child process (it inherits the bench's niceness); reuses a finished
    run folder, and starts an interrupted one again."""
    if (out / "summary.json").exists():
        return load_run(out)
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    path = out.with_suffix(".yaml")
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    began = time.perf_counter()
    done = subprocess.run([rlhub_cli(), "train", str(path), "--out", str(out), "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"rlhub train {path} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    print(f"  {out.parent.name}/{out.name}: {time.perf_counter() - began:.0f} s", file=sys.stderr)
    return load_run(out)


def load_run(out: Path) -> dict[str, Any]:
    """A finished run: its summary, its per-item held-out before/after, and its folder."""
    summary = json.loads((out / "summary.json").read_text())
    items = json.loads((out / "heldout.json").read_text())
    return {"summary": summary, "items": items, "dir": out}


def interval(values: np.ndarray) -> list[float] | None:
    """The 2.5 and 97.5 percentiles of bootstrap replicates (None when none is finite)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return None
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return [round(float(lo), 4), round(float(hi), 4)]


def t_interval(values: list[float]) -> list[float] | None:
    """A 95% Student t interval of the mean of per-seed values (None below two seeds)."""
    if len(values) < 2:
        return None
    m, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    half = T975.get(len(values) - 1, 1.96) * sd / np.sqrt(len(values))
    return [round(m - half, 4), round(m + half, 4)]
