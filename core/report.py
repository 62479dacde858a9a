"""``rlhub report RUN_DIR``: a self-contained HTML page with PNG plots of an eval run.

Plots (matplotlib, Agg backend): per-domain pass rates with 95% Wilson score intervals, first try
and after repair (the repair gain), a latency breakdown (generation versus verification per
trajectory) and trajectory status counts. The page also holds the metrics table and one example
trajectory per domain. Rewards and pass rates cover the model's own outcomes only; faults of
rlhub (sandbox, verifier, judge, label, policy: :mod:`rlhub.failures`) have their own column and
line, so an outage never reads as a weak model. Everything is written to ``RUN_DIR/report/``
(any fsspec URL) unless another directory is given.
"""

from __future__ import annotations

import html
import json
from typing import Any

from rlhub.evaluate import compute_metrics
from rlhub.failures import is_trainable
from rlhub.pages import (
    faults,
    figure_bytes,
    figures,
    height,
    html_table,
    page,
    span,
    wilson,
    write_files,
)
from rlhub.store import TrajectoryStore

EXAMPLE_CHARS = 1200
PLOTS = (("passrate.png", "Pass rate per domain: first try and after repair (95% Wilson "
                          "intervals over tasks)"),
         ("latency.png", "Latency breakdown per trajectory"),
         ("status.png", "Trajectory status counts"))


def scored_tasks(rows: list[dict[str, Any]]) -> int:
    """How many tasks of ``rows`` have at least one outcome that is the model's own."""
    return len({r["task_id"] for r in rows if is_trainable(r["failure"])})


def plot_pass_rates(metrics: dict[str, Any], tasks: dict[str, int]) -> bytes:
    """Each domain's pass@1 with its Wilson interval over ``tasks[domain]`` tasks: after
    repair, and first try when any domain repaired an answer."""
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(metrics["domains"])
    series = [("after repair", "pass@1", "tab:orange")]
    if any(metrics["domains"][d]["repair_gain"] for d in names):
        series.insert(0, ("first try", "first_try_pass@1", "tab:blue"))
    fig, ax = plt.subplots(figsize=(8, height(len(names))))
    offsets = np.linspace(-0.18, 0.18, len(series)) if len(series) > 1 else [0.0]
    for (label, key, color), dy in zip(series, offsets):
        rates = [metrics["domains"][d][key] for d in names]
        spans = [wilson(p, tasks[d]) for p, d in zip(rates, names)]
        xerr = np.array([[p - lo for p, (lo, _) in zip(rates, spans)],
                         [hi - p for p, (_, hi) in zip(rates, spans)]])
        y = np.arange(len(names)) + dy
        ax.errorbar(rates, y, xerr=xerr, fmt="o", capsize=4, color=color, label=label)
        for p, yi, (lo, hi) in zip(rates, y, spans):
            ax.annotate(f"{p:.2f} [{lo:.2f}, {hi:.2f}]", (hi, yi), xytext=(6, 0),
                        textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), [f"{d} (n={tasks[d]})" for d in names])
    ax.set_ylim(len(names) - 0.5, -0.5)  # the first domain on top, as in the table
    ax.set_xlim(0, 1.35)
    ax.set_xticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_xlabel("pass@1 over the model's own outcomes")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return figure_bytes(fig)


def plot_latency(by_domain: dict[str, list[dict[str, Any]]]) -> bytes:
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(by_domain)
    gen = [np.mean([sum(t["gen_s"] or 0 for t in r["turns"]) for r in by_domain[d]]) for d in names]
    ver = [np.mean([sum(t["verify_s"] or 0 for t in r["turns"]) for r in by_domain[d]])
           for d in names]
    fig, ax = plt.subplots(figsize=(8, height(len(names))))
    ax.barh(names, gen, label="generate", color="tab:blue")
    ax.barh(names, ver, left=gen, label="verify / environment", color="tab:green")
    ax.invert_yaxis()
    ax.set_xlabel("mean seconds per trajectory (all turns)")
    ax.legend(loc="lower right")
    return figure_bytes(fig)


def plot_status(metrics: dict[str, Any]) -> bytes:
    import matplotlib.pyplot as plt

    names = list(metrics["domains"])
    statuses = sorted({s for m in metrics["domains"].values() for s in m["status_counts"]})
    fig, ax = plt.subplots(figsize=(8, height(len(names))))
    left = [0] * len(names)
    for status in statuses:
        counts = [metrics["domains"][d]["status_counts"].get(status, 0) for d in names]
        ax.barh(names, counts, left=left, label=status)
        left = [a + b for a, b in zip(left, counts)]
    ax.invert_yaxis()
    ax.set_xlabel("trajectories")
    ax.legend(loc="lower right", fontsize=8)
    return figure_bytes(fig)


def _table(metrics: dict[str, Any], tasks: dict[str, int]) -> str:
    k = metrics["overall"]["k"]
    head = ("domain", "tasks", "samples", "pass@1", "95% CI", *([f"pass@{k}"] if k > 1 else []),
            "first try", "repair gain", "reward mean", "reward std", "turns", "infra failures")
    rows = []
    for d, m in metrics["domains"].items():
        passk = [f"{m['pass@k']:.3f}"] if k > 1 else []
        rows.append((d, m["n_tasks"], m["n_samples"], f"{m['pass@1']:.3f}",
                     span(*wilson(m["pass@1"], tasks[d])), *passk,
                     f"{m['first_try_pass@1']:.3f}", f"{m['repair_gain']:+.3f}",
                     f"{m['reward_mean']:.3f}", f"{m['reward_std']:.3f}", f"{m['turns_mean']:.2f}",
                     faults(m["failure_counts"])))
    return html_table(head, rows)


def _example(row: dict[str, Any]) -> str:
    parts = [f"<h3>{html.escape(row['domain'])} · {html.escape(row['task_id'])} · reward "
             f"{row['reward']:.3f} · {html.escape(row['status'])}</h3>"]
    for t in row["turns"]:
        for m in t["messages"]:
            parts.append(f"<pre class='{html.escape(m['role'])}'>{html.escape(m['role'])}: "
                         f"{html.escape(m['content'][:EXAMPLE_CHARS])}</pre>")
        text = t["completion"] if t["completion"] is not None else f"[{t['error']}]"
        parts.append(f"<pre class='assistant'>assistant (turn {t['index']}, reward "
                     f"{t['reward']:.3f}): {html.escape(text[:EXAMPLE_CHARS])}</pre>")
    return "<div class='example'>" + "".join(parts) + "</div>"


def render_html(metrics: dict[str, Any], rows: list[dict[str, Any]],
                tasks: dict[str, int]) -> str:
    run = metrics.get("run", {})
    firsts: dict[str, dict[str, Any]] = {}
    for r in rows:
        firsts.setdefault(r["domain"], r)
    o = metrics["overall"]
    return page("rlhub eval report", (
        f"<p>policy <code>{html.escape(str(run.get('policy', '?')))}</code> · "
        f"{o['n_samples']} trajectories over {o['n_domains']} domains · overall pass@1 "
        f"{o['pass@1']:.3f} over the model's own outcomes · {o['infra_failures']} "
        "infrastructure failures left out (sandbox, verifier, judge, label or policy)</p>"
        f"{_table(metrics, tasks)}<p class='note'>95% CI: Wilson score interval of pass@1 over "
        "the domain's tasks with an outcome of the model's own, each task counted once.</p>"
        f"{figures(PLOTS)}"
        f"<h2>Example trajectories</h2>{''.join(_example(r) for r in firsts.values())}"
        f"<h2>Run</h2><pre>{html.escape(json.dumps(run, indent=2, default=str))}</pre>"))


def render_report(run_dir: str, out: str | None = None) -> str:
    """Write ``index.html`` and the PNGs; returns the path or URL of ``index.html``."""
    import matplotlib

    matplotlib.use("Agg")
    store = TrajectoryStore(run_dir)
    rows = store.rows()
    if not rows:
        from rlhub.errors import RlhubError

        raise RlhubError(f"{run_dir}: expected committed trajectories, found none; run "
                         "`rlhub eval ... --out RUN_DIR` first")
    stored = store.read_json("metrics.json") or {}
    k = int(stored.get("overall", {}).get("k", 1))
    metrics = compute_metrics(rows, k)
    metrics["run"] = stored.get("run", {})
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_domain.setdefault(r["domain"], []).append(r)
    tasks = {d: scored_tasks(rs) for d, rs in by_domain.items()}
    files = {"passrate.png": plot_pass_rates(metrics, tasks),
             "latency.png": plot_latency(by_domain), "status.png": plot_status(metrics),
             "index.html": render_html(metrics, rows, tasks).encode()}
    return write_files(store, out, files)
