"""``rlhub report RUN_DIR``: a self-contained HTML page with PNG plots of an eval run.

Plots (matplotlib, Agg backend): per-domain reward distributions, first-try versus after-repair
pass rates (the repair gain), a latency breakdown (generation versus verification per
trajectory) and trajectory status counts. The page also holds the metrics table and one example
trajectory per domain. Rewards and pass rates cover the model's own outcomes only; faults of the
hub (sandbox, verifier, judge, label, policy: :mod:`rlhub.failures`) have their own column and
line, so an outage never reads as a weak model. Everything is written to ``RUN_DIR/report/``
(any fsspec URL) unless another directory is given.
"""

from __future__ import annotations

import html
import io
import json
from typing import Any

from rlhub.evaluate import compute_metrics
from rlhub.failures import is_trainable
from rlhub.store import TrajectoryStore

EXAMPLE_CHARS = 1200
PLOTS = (("rewards.png", "Reward distribution per domain"),
         ("repair.png", "Pass rate: first try vs after repair"),
         ("latency.png", "Latency breakdown per trajectory"),
         ("status.png", "Trajectory status counts"))


def _figure_bytes(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def _height(n: int) -> float:
    return max(2.5, 0.55 * n + 1.2)


def plot_rewards(by_domain: dict[str, list[dict[str, Any]]]) -> bytes:
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(by_domain)
    fig, ax = plt.subplots(figsize=(8, _height(len(names))))
    data = [[float(r["reward"]) for r in by_domain[d] if is_trainable(r["failure"])] or [0.0]
            for d in names]
    ax.boxplot(data, vert=False, tick_labels=names, widths=0.5)
    rng = np.random.default_rng(0)
    for i, rewards in enumerate(data, 1):
        ax.scatter(rewards, i + rng.uniform(-0.15, 0.15, len(rewards)), s=12, alpha=0.6,
                   color="tab:blue")
    values = [x for rewards in data for x in rewards]
    ax.set_xlim(min(0.0, *values) - 0.05, max(1.0, *values) + 0.05)
    ax.invert_yaxis()  # the first domain on top, as in the table
    ax.set_xlabel("final reward (after repair discount)")
    return _figure_bytes(fig)


def plot_repair(metrics: dict[str, Any]) -> bytes:
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(metrics["domains"])
    first = [metrics["domains"][d]["first_try_pass@1"] for d in names]
    final = [metrics["domains"][d]["pass@1"] for d in names]
    y = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(8, _height(len(names))))
    ax.barh(y - 0.2, first, 0.4, label="first try", color="tab:blue")
    ax.barh(y + 0.2, final, 0.4, label="after repair", color="tab:orange")
    for yi, a, b in zip(y, first, final):
        ax.text(max(a, b) + 0.01, yi, f"{b - a:+.2f}", va="center", fontsize=8)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.15)
    ax.set_xlabel("pass@1")
    ax.legend(loc="lower right")
    return _figure_bytes(fig)


def plot_latency(by_domain: dict[str, list[dict[str, Any]]]) -> bytes:
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(by_domain)
    gen = [np.mean([sum(t["gen_s"] or 0 for t in r["turns"]) for r in by_domain[d]]) for d in names]
    ver = [np.mean([sum(t["verify_s"] or 0 for t in r["turns"]) for r in by_domain[d]])
           for d in names]
    fig, ax = plt.subplots(figsize=(8, _height(len(names))))
    ax.barh(names, gen, label="generate", color="tab:blue")
    ax.barh(names, ver, left=gen, label="verify / environment", color="tab:green")
    ax.invert_yaxis()
    ax.set_xlabel("mean seconds per trajectory (all turns)")
    ax.legend(loc="lower right")
    return _figure_bytes(fig)


def plot_status(metrics: dict[str, Any]) -> bytes:
    import matplotlib.pyplot as plt

    names = list(metrics["domains"])
    statuses = sorted({s for m in metrics["domains"].values() for s in m["status_counts"]})
    fig, ax = plt.subplots(figsize=(8, _height(len(names))))
    left = [0] * len(names)
    for status in statuses:
        counts = [metrics["domains"][d]["status_counts"].get(status, 0) for d in names]
        ax.barh(names, counts, left=left, label=status)
        left = [a + b for a, b in zip(left, counts)]
    ax.invert_yaxis()
    ax.set_xlabel("trajectories")
    ax.legend(loc="lower right", fontsize=8)
    return _figure_bytes(fig)


def _table(metrics: dict[str, Any]) -> str:
    k = metrics["overall"]["k"]
    head = ("domain", "tasks", "samples", "pass@1", *([f"pass@{k}"] if k > 1 else []),
            "first try", "repair gain", "reward mean", "reward std", "turns", "infra failures")
    rows = []
    for d, m in metrics["domains"].items():
        passk = [f"{m['pass@k']:.3f}"] if k > 1 else []
        cells = (d, m["n_tasks"], m["n_samples"], f"{m['pass@1']:.3f}", *passk,
                 f"{m['first_try_pass@1']:.3f}", f"{m['repair_gain']:+.3f}",
                 f"{m['reward_mean']:.3f}", f"{m['reward_std']:.3f}", f"{m['turns_mean']:.2f}",
                 _faults(m["failure_counts"]))
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{h}</th>" for h in head)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _faults(counts: dict[str, int]) -> str:
    """``"3 (sandbox 2, judge 1)"``: the faults that are not the model's, by class."""
    faults = {c: n for c, n in sorted(counts.items()) if not is_trainable(c)}
    if not faults:
        return "0"
    return f"{sum(faults.values())} (" + ", ".join(f"{c} {n}" for c, n in faults.items()) + ")"


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


STYLE = """body{font-family:sans-serif;margin:2em;max-width:1100px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
td:first-child{text-align:left}img{max-width:100%;display:block;margin:1em 0}
pre{white-space:pre-wrap;background:#f6f6f6;padding:6px;margin:2px 0}
pre.assistant{background:#eef4ff}"""


def render_html(metrics: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    run = metrics.get("run", {})
    firsts: dict[str, dict[str, Any]] = {}
    for r in rows:
        firsts.setdefault(r["domain"], r)
    figures = "".join(f"<h2>{html.escape(title)}</h2><img src='{name}' alt='{html.escape(title)}'>"
                      for name, title in PLOTS)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>rlhub eval report</title>"
            f"<style>{STYLE}</style></head><body><h1>rlhub eval report</h1>"
            f"<p>policy <code>{html.escape(str(run.get('policy', '?')))}</code> · "
            f"{metrics['overall']['n_samples']} trajectories over "
            f"{metrics['overall']['n_domains']} domains · overall pass@1 "
            f"{metrics['overall']['pass@1']:.3f} over the model's own outcomes · "
            f"{metrics['overall']['infra_failures']} infrastructure failures left out "
            f"(sandbox, verifier, judge, label or policy)</p>{_table(metrics)}{figures}"
            f"<h2>Example trajectories</h2>{''.join(_example(r) for r in firsts.values())}"
            f"<h2>Run</h2><pre>{html.escape(json.dumps(run, indent=2, default=str))}</pre>"
            "</body></html>")


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
    files = {"rewards.png": plot_rewards(by_domain), "repair.png": plot_repair(metrics),
             "latency.png": plot_latency(by_domain), "status.png": plot_status(metrics),
             "index.html": render_html(metrics, rows).encode()}
    target = TrajectoryStore(out) if out else None
    fs, base = (target.fs, target.root) if target else (store.fs, store.path("report"))
    fs.makedirs(base, exist_ok=True)
    for name, data in files.items():
        with fs.open(f"{base}/{name}", "wb") as fh:
            fh.write(data)
    return f"{base}/index.html"
