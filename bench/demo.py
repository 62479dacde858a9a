"""The demo's own target, on seeds 0, 1 and 2: does `make demo`'s training lift the held-out mean?

Usage::

    python bench/demo.py                      # examples/demo.yaml, seeds 0 1 2 (~4 min each)
    python bench/demo.py --seeds 0 --out runs/bench-demo

Each seed is one ``rlhub train examples/demo.yaml`` with ``train.seed`` set (a child process at
niceness 5; a finished run folder is reused). The target: the held-out mean gains at least +0.05,
its paired 95% interval (the trainer's bootstrap over held-out items) lies above 0, and no domain
is down (the trainer's ``regressed`` list: a domain whose interval lies below 0).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import yaml
from _training import ROOT, train
from _util import Row, emit

CONFIG = "examples/demo.yaml"
TARGET = 0.05
NICE = 5


def seed_figures(summary: dict[str, Any]) -> dict[str, Any]:
    delta = summary["delta"]
    gain, (lo, hi) = delta["mean"]["delta"], delta["mean"]["ci95"]
    return {"before": round(summary["mean"]["before"], 4), "after": round(summary["mean"]["after"], 4),
            "delta": round(gain, 4), "ci95": [round(lo, 4), round(hi, 4)],
            "regressed": delta["regressed"], "grpo_s": summary["timings_s"].get("grpo"),
            "total_s": summary["timings_s"].get("total"),
            "met": gain >= TARGET and lo > 0 and not delta["regressed"]}


def table(result: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for seed, got in result["seeds"].items():
        lo, hi = got["ci95"]
        down = ", ".join(got["regressed"]) or "none"
        rows.append((f"`rlhub train {CONFIG}`, seed {seed}: held-out mean before → after",
                     f"{got['before']:.3f} → {got['after']:.3f} ({got['delta']:+.3f} "
                     f"[{lo:+.3f}, {hi:+.3f}]); domains down: {down}; {got['total_s']:.0f} s",
                     f"target ≥ +{TARGET:g}, interval above 0, no domain down: "
                     f"{'met' if got['met'] else 'not met'}"))
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default="runs/bench-demo")
    args = parser.parse_args(argv)
    os.nice(max(0, NICE - os.nice(0)))
    base = yaml.safe_load((ROOT / CONFIG).read_text())
    seeds: dict[str, Any] = {}
    for seed in args.seeds:
        cfg = {**base, "train": {**base["train"], "seed": seed}}
        run = train(cfg, Path(args.out).resolve() / f"seed{seed}")
        seeds[str(seed)] = seed_figures(run["summary"])
    result = {"bench": "demo", "config": CONFIG, "seeds": seeds,
              "met": all(s["met"] for s in seeds.values())}
    emit(result, table(result), "What `make demo` trains, on three seeds; the figures are the "
         "trainer's own summary (sampled held-out reward, paired bootstrap intervals over items).")
    return result


if __name__ == "__main__":
    main()
