"""The pieces of rlhub's HTML reports: PNG figures, intervals, tables, the page, writing it.

Used by the eval report (:mod:`rlhub.report`) and the training run's report
(:mod:`rlhub.integrations.trainer.report`), so both read alike: the same style, the same interval method
(:func:`wilson` for pass rates), the same fault notation (:func:`faults`). Also the scheduler's
weights over steps (:func:`plot_weights`), which ``rlhub mix plot`` draws as well. Matplotlib is
imported inside the functions that draw.
"""

from __future__ import annotations

import html
import io
import math
from typing import Any

from rlhub.failures import is_trainable
from rlhub.store import TrajectoryStore

Z95 = 1.959964  # the standard normal's 97.5th percentile: two-sided 95% intervals


def figure_bytes(fig: Any) -> bytes:
    """``fig`` as PNG bytes; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def height(n: int) -> float:
    """A horizontal plot's height in inches for ``n`` rows."""
    return max(2.5, 0.55 * n + 1.2)


def wilson(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a pass rate ``p`` observed over ``n`` trials.

    Unlike the normal interval it stays inside [0, 1] and is not empty at ``p`` = 0 or 1 (4 of 4
    passes give 0.51..1). ``p`` may be a mean of fractions (a task passed by some of its
    samples); ``n`` is then the number of tasks, each counted once. ``n`` = 0 gives (0, 1).
    """
    if n <= 0:
        return 0.0, 1.0
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # it always holds p; min/max keep float rounding from moving a bound past p at 0 or 1
    return max(0.0, min(p, center - half)), min(1.0, max(p, center + half))


def html_table(head: tuple[str, ...] | list[str], rows: list[tuple[Any, ...]]) -> str:
    """An HTML table; every cell is escaped."""
    header = "".join(f"<th>{html.escape(str(h))}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>"
                   for cells in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def span(lo: float, hi: float, fmt: str = ".3f") -> str:
    """An interval as ``[lo, hi]``."""
    return f"[{lo:{fmt}}, {hi:{fmt}}]"


def faults(counts: dict[str, int]) -> str:
    """``"3 (sandbox 2, judge 1)"``: the faults that are not the model's, by class."""
    bad = {c: n for c, n in sorted(counts.items()) if not is_trainable(c)}
    if not bad:
        return "0"
    return f"{sum(bad.values())} (" + ", ".join(f"{c} {n}" for c, n in bad.items()) + ")"


STYLE = """body{font-family:sans-serif;margin:2em;max-width:1100px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
td:first-child{text-align:left}img{max-width:100%;display:block;margin:1em 0}
pre{white-space:pre-wrap;background:#f6f6f6;padding:6px;margin:2px 0}
pre.assistant{background:#eef4ff}p.note{color:#555;font-size:90%}"""


def page(title: str, body: str) -> str:
    """A whole HTML page: ``title`` as its title and first heading, then ``body``."""
    title = html.escape(title)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{STYLE}</style></head><body><h1>{title}</h1>{body}</body></html>")


def figures(plots: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> str:
    """A heading and an ``<img>`` per ``(file name, title)``."""
    return "".join(f"<h2>{html.escape(title)}</h2><img src='{name}' alt='{html.escape(title)}'>"
                   for name, title in plots)


def write_files(store: TrajectoryStore, out: str | None, files: dict[str, bytes]) -> str:
    """Write ``files`` to ``out`` (a folder or URL), else to the run's ``report/``; returns the
    path or URL of ``index.html``."""
    target = TrajectoryStore(out) if out else None
    fs, base = (target.fs, target.root) if target else (store.fs, store.path("report"))
    fs.makedirs(base, exist_ok=True)
    for name, data in files.items():
        with fs.open(f"{base}/{name}", "wb") as fh:
            fh.write(data)
    return f"{base}/index.html"




def weight_series(rows: list[dict[str, Any]], top: int
                  ) -> tuple[list[int], dict[str, list[float]]]:
    """Steps and per-domain weight lines of the scheduler's log (``scheduler.jsonl`` rows);
    beyond ``top`` domains (by peak weight) the rest become one line."""
    steps = [row["step"] for row in rows]
    domains = list(dict.fromkeys(d for row in rows for d in row["weights"]))
    lines = {d: [float(row["weights"].get(d, 0.0)) for row in rows] for d in domains}
    if len(lines) <= top:
        return steps, lines
    ranked = sorted(lines, key=lambda d: max(lines[d]), reverse=True)
    kept = {d: lines[d] for d in ranked[:top]}
    rest = ranked[top:]
    kept[f"other ({len(rest)} domains)"] = [sum(lines[d][i] for d in rest) for i in range(len(steps))]
    return steps, kept


def plot_weights(rows: list[dict[str, Any]], top: int = 12) -> bytes:
    """Each domain's weight over the steps of the scheduler's log, as PNG bytes."""
    import matplotlib.pyplot as plt

    steps, lines = weight_series(rows, top)
    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    for name, values in lines.items():
        ax.plot(steps, values, label=name, linewidth=1.4, drawstyle="steps-post")
    ax.set_xlabel("step")
    ax.set_ylabel("weight")
    ax.set_ylim(bottom=0)
    ax.set_title(f"domain weights ({len(rows)} decisions)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure_bytes(fig)
