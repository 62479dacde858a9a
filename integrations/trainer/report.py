"""``rlhub report RUN_DIR`` on a training run: what a person training a model looks at.

One self-contained page (``RUN_DIR/report/index.html`` and its PNGs) from the run folder
(:mod:`rlhub.integrations.trainer.runfolder`):

* held-out reward per domain before and after training, each with a 95% percentile-bootstrap
  interval over items, and the paired change with the trainer's own paired-bootstrap interval;
* training reward per domain over steps (the mean of each bin's prompt-group means, with a 95%
  normal interval over groups), and the share of groups with zero reward variance (no signal);
* the held-out checks during training, and the scheduler's weights over steps;
* faults that were not the model's (by class, in training and in held-out scoring) and retries;
  phase times, time guards hit, and every control adjustment with its reason.

An unfinished run (no ``summary.json`` yet) gets the same page with what it has written so far.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

from rlhub.integrations.trainer.runfolder import (
    Point,
    TrainingRun,
    bootstrap_mean,
    curves,
    read_run,
)
from rlhub.pages import (
    faults,
    figure_bytes,
    figures,
    height,
    html_table,
    page,
    plot_weights,
    span,
    write_files,
)

PLOTS = {"heldout.png": "Held-out reward before and after training (95% bootstrap intervals "
                        "over items)",
         "reward.png": "Training reward per domain over steps (mean of prompt groups, 95% "
                       "interval over groups)",
         "zero_variance.png": "Prompt groups with zero reward variance (no GRPO signal)",
         "checks.png": "Held-out checks during training (before and after: every held-out "
                       "item; in between: the in-run subset)",
         "weights.png": "The scheduler's domain weights over steps"}


def heldout_sides(run: TrainingRun) -> dict[str, dict[str, tuple[float, float, float] | None]]:
    """Per domain, ``{"before": (mean, lo, hi), "after": ...}`` over held-out items."""
    items = {side: (run.heldout or {}).get(side, {}).get("items", {})
             for side in ("before", "after")}
    return {d: {side: bootstrap_mean(items[side].get(d, [])) for side in items}
            for d in run.domains}


def plot_heldout(sides: dict[str, dict[str, Any]]) -> bytes:
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(sides)
    fig, ax = plt.subplots(figsize=(8, height(len(names))))
    for side, color, dy in (("before", "tab:gray", -0.12), ("after", "tab:orange", 0.12)):
        rows = [(i + dy, *sides[d][side]) for i, d in enumerate(names) if sides[d][side]]
        if rows:
            y, mean, lo, hi = (np.array(c) for c in zip(*rows))
            ax.errorbar(mean, y, xerr=[mean - lo, hi - mean], fmt="o", capsize=4, color=color,
                        label=side)
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlabel("held-out reward (mean over items)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, frameon=False)
    return figure_bytes(fig)


def plot_over_steps(lines: dict[str, list[Point]], value: str, ylabel: str) -> bytes:
    """One line per domain of ``value`` over steps; the reward lines carry their intervals."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for domain, points in lines.items():
        steps = [p.step for p in points]
        (line,) = ax.plot(steps, [getattr(p, value) for p in points], label=domain,
                          linewidth=1.4)
        if value == "mean":
            ax.fill_between(steps, [p.lo for p in points], [p.hi for p in points],
                            color=line.get_color(), alpha=0.15, linewidth=0)
    ax.set_xlabel("GRPO step")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure_bytes(fig)


def plot_checks(run: TrainingRun) -> bytes:
    """Held-out scores at each check (before: step 0; in-run; after) per domain."""
    import matplotlib.pyplot as plt

    checks = _checks(run)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for domain in run.domains:
        points = [(step, scores[domain]) for step, _, scores in checks
                  if scores.get(domain) is not None]
        ax.plot(*zip(*points), marker="o", label=domain, linewidth=1.4)
    ax.set_xlabel("GRPO step (0: before training)")
    ax.set_ylabel("held-out reward")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure_bytes(fig)


def _checks(run: TrainingRun) -> list[tuple[int, str, dict[str, float | None]]]:
    """``(step, label, scores)`` of every held-out check, the final one at the last step."""
    last = (run.summary or {}).get("steps") or max((g.step for g in run.groups), default=0)
    return [(last if e["label"] == "after" else e["step"], e["label"], e["scores"])
            for e in run.of_kind("heldout")]


def render_training_report(run_dir: str, out: str | None = None) -> str:
    """Write the training run's page and PNGs; returns the path of ``index.html``."""
    import matplotlib

    from rlhub.store import TrajectoryStore

    matplotlib.use("Agg")
    run = read_run(run_dir)
    sides = heldout_sides(run)
    lines = curves(run.groups)
    files = {"heldout.png": plot_heldout(sides) if run.heldout else None,
             "reward.png": plot_over_steps(lines, "mean", "reward") if lines else None,
             "zero_variance.png": (plot_over_steps(lines, "zero_variance", "share of groups")
                                   if lines else None),
             "checks.png": plot_checks(run) if len(_checks(run)) > 1 else None,
             "weights.png": plot_weights(run.weights) if run.weights else None}
    plots = [(name, PLOTS[name]) for name, data in files.items() if data]
    pngs = {name: data for name, data in files.items() if data}
    return write_files(TrajectoryStore(run_dir), out,
                       {**pngs, "index.html": render_html(run, sides, lines, plots).encode()})


def render_html(run: TrainingRun, sides: dict[str, Any], lines: dict[str, list[Point]],
                plots: list[tuple[str, str]]) -> str:
    return page("rlhub training report", (
        _header(run) + "<h2>Held-out reward per domain</h2>" + _heldout_table(run, sides)
        + _metric_note(run) + "<h2>Training per domain</h2>" + _training_table(run, lines)
        + figures(plots) + "<h2>Phases and guards</h2>" + _phases(run)
        + "<h2>Control adjustments</h2>" + _adjustments(run)
        + f"<h2>Run</h2><pre>{html.escape(json.dumps(run.run, indent=2, default=str))}</pre>"))


def _header(run: TrainingRun) -> str:
    s = run.summary
    facts = [f"policy <code>{html.escape(str(run.run.get('policy', '?')))}</code>",
             f"{len(run.domains)} domains",
             f"{max((g.step for g in run.groups), default=0)} GRPO steps recorded",
             f"{sum(len(g.rewards) + sum(g.faults.values()) for g in run.groups)} trajectories"]
    if s is None:
        facts.append("<strong>no summary.json: the run has not finished (or was stopped); this "
                     "page shows what it has written so far</strong>")
    elif s["mean"]["before"] is not None and s["mean"]["after"] is not None:
        delta = s["delta"]["mean"]
        ci = span(*delta["ci95"], "+.3f") if delta["ci95"] else "n/a"
        facts.append(f"held-out mean {s['mean']['before']:.3f} → {s['mean']['after']:.3f} "
                     f"(<strong>{delta['delta']:+.3f}</strong>, 95% CI {ci})")
    return "<p>" + " · ".join(facts) + "</p>"


def _heldout_table(run: TrainingRun, sides: dict[str, Any]) -> str:
    deltas = ((run.summary or {}).get("delta") or {}).get("domains", {})
    regressed = set(((run.summary or {}).get("delta") or {}).get("regressed", []))
    rows = []
    for d in run.domains:
        delta = deltas.get(d) or {}
        rows.append((d, *_side(sides[d]["before"]), *_side(sides[d]["after"]),
                     _num(delta.get("delta"), "+.3f"),
                     span(*delta["ci95"], "+.3f") if delta.get("ci95") else "n/a",
                     delta.get("items", "n/a"), "regressed" if d in regressed else ""))
    return html_table(("domain", "before", "95% CI", "after", "95% CI", "delta", "95% CI (paired)",
                       "items", ""), rows)


def _side(value: tuple[float, float, float] | None) -> tuple[str, str]:
    return (f"{value[0]:.3f}", span(value[1], value[2])) if value else ("n/a", "n/a")


def _num(value: float | None, fmt: str = ".3f") -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:{fmt}}"


def _metric_note(run: TrainingRun) -> str:
    metric = (run.summary or {}).get("metric", "held-out scores appear when the run finishes")
    return (f"<p class='note'>{html.escape(metric)}. Per-side intervals: percentile bootstrap "
            "over items.</p>")


def _training_table(run: TrainingRun, lines: dict[str, list[Point]]) -> str:
    s = run.summary or {}
    retries = (s.get("failures") or {}).get("retries", {})
    held = {side: ((run.heldout or {}).get(side) or {}).get("failures", {})
            for side in ("before", "after")}
    rows = []
    for d in run.domains:
        groups = [g for g in run.groups if g.domain == d]
        zero = sum(g.zero_variance for g in groups)
        counts: dict[str, int] = {}
        for g in groups:
            for cls, n in g.faults.items():
                counts[cls] = counts.get(cls, 0) + n
        points = [p for p in lines.get(d, []) if p.groups]
        rows.append((d, len(groups), f"{zero} ({zero / max(1, len(groups)):.0%})",
                     _num(points[0].mean if points else None),
                     _num(points[-1].mean if points else None), faults(counts),
                     retries.get(d, 0), f"{held['before'].get(d, 0)} / {held['after'].get(d, 0)}"))
    return html_table(("domain", "groups", "zero-variance groups", "reward, first bin",
                       "reward, last bin", "training faults", "retries",
                       "held-out faults (before / after)"), rows)


def _phases(run: TrainingRun) -> str:
    timings = {e["phase"]: e["seconds"] for e in run.of_kind("phase_end")}  # in run order
    if run.summary:
        timings["total"] = run.summary["timings_s"]["total"]
    table = html_table(("phase", "seconds"), [(p, f"{t:.1f}") for p, t in timings.items()])
    guards = [f"{e['phase']}: stopped by its {e['max_seconds']:g} s guard after {e['step']} of "
              f"{e['planned']} steps" for e in run.of_kind("guard")]
    return table + ("<p><strong>Guards hit (the run is not comparable with a full one):</strong> "
                    + html.escape("; ".join(guards)) + "</p>" if guards
                    else "<p>No time guard was hit: every phase ran its planned steps.</p>")


def _adjustments(run: TrainingRun) -> str:
    rows = [(e["step"], e["control"], e.get("domain") or "all", f"{e['old']:.3g} → {e['new']:.3g}",
             e["reason"]) for e in run.of_kind("adjustment")]
    rows += [(e["step"], "shift alarm", e["domain"], f"{e['reference_mean']:.3f} → "
              f"{e['current_mean']:.3f}", f"KS D={e['statistic']:.3f}, p={e['pvalue']:.2g}")
             for e in run.of_kind("shift")]
    if not rows:
        return "<p>None: no control changed a temperature or the learning rate.</p>"
    return html_table(("step", "control", "domain", "change", "reason"),
                      sorted(rows, key=lambda r: r[0]))
