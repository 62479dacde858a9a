"""Joint training that proves itself: uniform, static and adaptive mixing on a 16-domain mixture.

Usage::

    python bench/joint_training.py                 # 3 seeds: main, sequential and ablation runs
    python bench/joint_training.py --quick         # 1 seed, main only, half the steps
    python bench/joint_training.py --json          # print the result object alone

Real GRPO on the tiny model (``rlhub train``), not a simulation. The mixture
(``examples/joint.yaml``) has 16 tiny domains in four groups, as a production mixture looks at
any moment: **saturated** at the start, **out of reach** at this scale (some of them still give
groups with reward variance: guessable answers), **learnable** (some sharing a procedure, so one's
samples help another) and an **interfering** pair (the same prompts, paid for different answers,
so learning one costs the other). The groups are the bench's knowledge, never the scheduler's.

For each seed one warm-up-only run trains the start model. Every other run starts from it with the
same seed, task streams, held-out items and sampling seed, and the same rollout budget (every
step generates ``prompts_per_step x generations`` rollouts, refills included), so paired runs
differ only in what they compare. Held-out scores are taken before training, every
``budget / evals`` steps and after (``heldout_curve.jsonl``), on the same items each time.

Sections:

* ``main``: uniform, static and adaptive. Per strategy: held-out macro mean over all 16 domains
  after the budget (``macro_after``), the worst learnable domain after it (``worst_after``),
  forgetting (the largest drop of any domain below its own best held-out score, at the end), the
  rollouts spent (by group too), and ``adaptive_rollouts_to_uniform_final``: the rollouts
  adaptive needed to reach uniform's final macro mean (linear between evaluations), as a fraction
  of the budget (None when it never did).
* ``sequential``: group A trained alone for half the budget then group B for the other half,
  against A and B trained jointly under the adaptive scheduler for the whole budget; forgetting of
  A (each run also watches the group it does not train: ``heldout.watch``).
* ``ablation``: adaptive with the temperature control, or the learning-rate control, turned off.

``--quick`` keeps the warm-up, the held-out items and the evaluation cadence (every 50 steps) and
halves the GRPO steps (200) of the main comparison; it writes ``joint_training_quick.json``, so
the full run's figures stay where they are. Its time is the wall time and the CPU time of its
training runs, with the machine's load beside them (the machine is shared).

Intervals: ``ci95`` resamples held-out items within each seed (the same draws for every run of
the seed, so differences are paired by item) and averages the replicate over seeds: evaluation
noise. ``ci95_seeds`` is a t interval over the per-seed values: training noise, wide with 3 seeds.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from _training import ROOT, interval, t_interval, train
from _util import RESULTS, Row, emit

CONFIG = "examples/joint.yaml"
GROUPS: dict[str, tuple[str, ...]] = {
    "saturated": ("math/tiny-times1-v1", "math/tiny-times10-v1", "math/tiny-neg-v1",
                  "math/tiny-copy-v1"),
    "out_of_reach": ("math/tiny-count-v1", "math/tiny-parity-v1", "math/tiny-mod7-v1",
                     "math/tiny-mul-v1"),
    "learnable": ("math/tiny-succ-v1", "math/tiny-pred-v1", "math/tiny-add-v1",
                  "math/tiny-reverse-v1", "math/tiny-mirror-v1", "math/tiny-rotate-v1"),
    "interfering": ("math/tiny-pick-first-v1", "math/tiny-pick-last-v1"),
}
MAIN = ("uniform", "static", "adaptive")
# Sequential vs joint: A then B, or A and B together. Each holds learnable domains that share a
# procedure and one side of the interfering pair.
SEQUENTIAL = {"A": ("math/tiny-succ-v1", "math/tiny-pred-v1", "math/tiny-add-v1",
                    "math/tiny-pick-first-v1"),
              "B": ("math/tiny-reverse-v1", "math/tiny-mirror-v1", "math/tiny-rotate-v1",
                    "math/tiny-pick-last-v1")}
ABLATIONS = {"adaptive-no-temperature": "temperature", "adaptive-no-lr": "learning_rate"}
SECTIONS = ("main", "sequential", "ablation")
QUICK = 2  # --quick divides the GRPO steps and evaluations by this: the same 50-step cadence
NICE = 5


# -- run configs ---------------------------------------------------------------------------------


def run_config(base: dict[str, Any], seed: int, args: Any, *, strategy: str | None = None,
               start: Path | None = None, steps: int = 0, domains: tuple[str, ...] = (),
               watch: tuple[str, ...] = (), control_off: str | None = None) -> dict[str, Any]:
    """One run's training config: the warm-up alone (``strategy`` None) or GRPO from ``start``."""
    cfg = copy.deepcopy(base)
    cfg["seed"] = seed  # the task streams
    train_cfg = cfg["train"]
    train_cfg.update(seed=seed, policy_seed=seed)
    heldout = train_cfg.setdefault("heldout", {})
    heldout.update(items=args.items, samples=args.samples, inrun_items=args.items,
                   inrun_samples=args.samples, greedy=False, watch=list(watch))
    if strategy is None:
        train_cfg["grpo"]["steps"] = 0
        return cfg
    if domains:
        cfg["domains"] = {d: base["domains"][d] for d in domains}
    train_cfg["init_model"] = str(start)
    train_cfg["warmup"]["steps"] = 0
    train_cfg["grpo"]["steps"] = steps
    heldout["every_steps"] = max(1, steps // args.evals)
    train_cfg["scheduler"] = {**train_cfg.get("scheduler", {}), "strategy": strategy}
    if strategy != "adaptive":
        train_cfg["scheduler"].pop("params", None)
    if control_off:
        train_cfg.setdefault("controls", {}).setdefault(control_off, {})["enabled"] = False
    return cfg


# -- curves and metrics --------------------------------------------------------------------------


def load_curve(run_dir: Path, domains: list[str]) -> tuple[np.ndarray, list[np.ndarray]]:
    """``(rollouts per evaluation, per domain an (evaluations, items) array of item means)``."""
    lines = [json.loads(x) for x in (run_dir / "heldout_curve.jsonl").read_text().splitlines()
             if x.strip()]
    rollouts = np.array([line["rollouts"] for line in lines], dtype=float)
    items = [np.array([[np.nan if v is None else v for v in line["items"][d]] for line in lines])
             for d in domains]
    return rollouts, items


def join_curves(first: tuple[np.ndarray, list[np.ndarray]],
                second: tuple[np.ndarray, list[np.ndarray]]) -> tuple[np.ndarray, list]:
    """Phase two's curve after phase one's: its first point (phase one's last model) dropped."""
    rollouts = np.concatenate([first[0], first[0][-1] + second[0][1:]])
    return rollouts, [np.concatenate([a, b[1:]]) for a, b in zip(first[1], second[1])]


def resample(items: list[np.ndarray], draws: list[np.ndarray] | None) -> np.ndarray:
    """(replicates, evaluations, domains) of domain means over items; one replicate, the plain
    means, when ``draws`` is None."""
    if draws is None:
        return np.stack([np.nanmean(a, axis=1) for a in items], axis=-1)[None]
    return np.stack([np.nanmean(a[:, idx], axis=2).T for a, idx in zip(items, draws)], axis=-1)


def reach(macro: np.ndarray, rollouts: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Per replicate, the rollouts at which ``macro`` (replicates, evals) first reaches ``target``
    (linear between evaluations); NaN where it never does."""
    out = np.full(macro.shape[0], np.nan)
    for r in range(macro.shape[0]):
        hit = np.flatnonzero(macro[r] >= target[r])
        if hit.size == 0:
            continue
        j = int(hit[0])
        if j == 0:
            out[r] = rollouts[0]
            continue
        lo, hi = macro[r, j - 1], macro[r, j]
        frac = (target[r] - lo) / (hi - lo) if hi > lo else 1.0
        out[r] = rollouts[j - 1] + frac * (rollouts[j] - rollouts[j - 1])
    return out


def curve_metrics(curve: np.ndarray, domains: list[str], worst_of: tuple[str, ...],
                  forget_of: list[str] | None = None) -> dict[str, np.ndarray]:
    """macro_after, worst_after (over ``worst_of``) and forgetting (over ``forget_of``, default
    every domain) per replicate of ``curve`` (replicates, evaluations, domains)."""
    pick = [domains.index(d) for d in worst_of if d in domains]
    keep = [domains.index(d) for d in (forget_of or domains)]
    final = curve[:, -1, :]
    drop = curve.max(axis=1) - final
    return {"macro_after": final.mean(axis=1), "worst_after": final[:, pick].min(axis=1),
            "forgetting": drop[:, keep].max(axis=1), "macro_curve": curve.mean(axis=2)}


def rollouts_by_group(summary: dict[str, Any], generations: int) -> dict[str, int]:
    """Rollouts generated per group of domains (refills included)."""
    counts = summary["scheduler"]["counts"]
    out = {}
    for group, members in GROUPS.items():
        out[group] = int(sum(counts[d]["groups"] for d in members if d in counts) * generations)
    return out


# -- sections ------------------------------------------------------------------------------------


class Seed:
    """One seed's warm-up and the item draws that pair every run of the seed."""

    def __init__(self, bench: Bench, seed: int):
        self.bench, self.seed = bench, seed
        self.dir = bench.out / f"seed{seed}"
        self.warm = train(run_config(bench.base, seed, bench.args), self.dir / "warmup")
        self.domains = sorted(self.warm["summary"]["before"])
        n = len(self.warm["items"]["before"]["items"][self.domains[0]])
        rng = np.random.default_rng(1000 + seed)
        self.draws = {d: rng.integers(0, n, (bench.args.resamples, n)) for d in self.domains}

    def run(self, name: str, start: Path | None = None, **kw: Any) -> dict[str, Any]:
        """A GRPO run of this seed, from ``start`` (default: the seed's warm-up model)."""
        cfg = run_config(self.bench.base, self.seed, self.bench.args,
                         start=start or self.dir / "warmup" / "model", **kw)
        return train(cfg, self.dir / name)

    def curves(self, run_dirs: list[Path], domains: list[str]) -> dict[str, Any]:
        """The (joined) held-out curve of ``run_dirs``: plain means and item replicates."""
        loaded = [load_curve(d, domains) for d in run_dirs]
        rollouts, items = loaded[0]
        for more in loaded[1:]:
            rollouts, items = join_curves((rollouts, items), more)
        draws = [self.draws[d] for d in domains]
        return {"rollouts": rollouts, "point": resample(items, None),
                "reps": resample(items, draws)}

    def figures(self, run: dict[str, Any]) -> dict[str, Any]:
        """One run over every domain: its curve, summary and metrics (plain and replicates)."""
        c = self.curves([run["dir"]], self.domains)
        return {"curve": c, "summary": run["summary"],
                **{kind: curve_metrics(c[kind], self.domains, GROUPS["learnable"])
                   for kind in ("point", "reps")}}


class Bench:
    """The whole benchmark: configuration, seeds, sections and the summary over seeds."""

    def __init__(self, args: Any):
        self.args = args
        self.base = yaml.safe_load((ROOT / CONFIG).read_text())
        check_groups(self.base)
        self.out = Path(args.out).resolve()
        grpo = self.base["train"]["grpo"]
        self.per_step = grpo["prompts_per_step"] * grpo["generations"]
        self.generations = grpo["generations"]

    def main(self, s: Seed) -> dict[str, Any]:
        """Uniform, static and adaptive from the seed's warm-up on the same budget."""
        steps = self.args.steps
        figures = {k: s.figures(s.run(k, strategy=k, steps=steps)) for k in MAIN}
        budget = steps * self.per_step
        rollouts = figures["adaptive"]["curve"]["rollouts"]
        for kind in ("point", "reps"):
            target = figures["uniform"][kind]["macro_after"]
            got = reach(figures["adaptive"][kind]["macro_curve"], rollouts, target)
            figures["adaptive"][kind]["to_uniform_final"] = got / budget
        return figures

    def sequential(self, s: Seed) -> dict[str, Any]:
        """A then B (half the budget each) against A and B jointly (the whole budget)."""
        a, b = SEQUENTIAL["A"], SEQUENTIAL["B"]
        half = self.args.steps // 2
        first = s.run("seq-A", strategy="adaptive", steps=half, domains=a, watch=b)
        s.run("seq-B", strategy="adaptive", steps=half, domains=b, watch=a,
              start=first["dir"] / "model")
        joint = s.run("joint-AB", strategy="adaptive", steps=2 * half, domains=a + b)
        both = sorted(a + b)
        out = {}
        for name, dirs in (("sequential", [s.dir / "seq-A", s.dir / "seq-B"]),
                           ("joint", [joint["dir"]])):
            c = s.curves(dirs, both)
            out[name] = {"curve": c, **{kind: seq_metrics(c[kind], both) for kind in
                                        ("point", "reps")}}
        return out

    def ablation(self, s: Seed, main: dict[str, Any]) -> dict[str, Any]:
        """Adaptive with one control off, against adaptive with both on (the main run)."""
        out = {"adaptive": main["adaptive"]}
        for name, control in ABLATIONS.items():
            out[name] = s.figures(s.run(name, strategy="adaptive", steps=self.args.steps,
                                        control_off=control))
        return out


def seq_metrics(curve: np.ndarray, domains: list[str]) -> dict[str, np.ndarray]:
    """Forgetting of group A (largest and mean drop below each domain's best, at the end) and
    the final macro means of A, B and both, per replicate."""
    a = [domains.index(d) for d in SEQUENTIAL["A"]]
    b = [domains.index(d) for d in SEQUENTIAL["B"]]
    final = curve[:, -1, :]
    drop = curve.max(axis=1) - final
    return {"forgetting_A": drop[:, a].max(axis=1), "mean_forgetting_A": drop[:, a].mean(axis=1),
            "macro_A": final[:, a].mean(axis=1), "macro_B": final[:, b].mean(axis=1),
            "macro_after": final.mean(axis=1)}


def check_groups(base: dict[str, Any]) -> None:
    """The bench's groups cover the config's domains exactly, and A and B are inside them."""
    grouped = sorted(d for members in GROUPS.values() for d in members)
    if grouped != sorted(base["domains"]):
        raise SystemExit(f"{CONFIG}: expected the domains {grouped} (the bench's groups), "
                         f"found {sorted(base['domains'])}")
    if not set(SEQUENTIAL["A"] + SEQUENTIAL["B"]) <= set(grouped):
        raise SystemExit("SEQUENTIAL: expected groups A and B within the mixture's domains")


# -- summaries over seeds ------------------------------------------------------------------------

METRICS = ("macro_after", "worst_after", "forgetting")


def paired(per_seed: list[dict[str, Any]], a: str, b: str, metric: str) -> dict[str, Any]:
    """``a - b`` of ``metric`` over seeds: mean, item-bootstrap ci95, seeds' t interval."""
    values = [float(f[a]["point"][metric][0] - f[b]["point"][metric][0]) for f in per_seed]
    reps = np.mean([f[a]["reps"][metric] - f[b]["reps"][metric] for f in per_seed], axis=0)
    return {"diff": round(float(np.mean(values)), 4), "ci95": interval(reps),
            "ci95_seeds": t_interval(values), "per_seed": [round(v, 4) for v in values]}


def mean_of(per_seed: list[dict[str, Any]], run: str, metric: str) -> float:
    return round(float(np.mean([f[run]["point"][metric][0] for f in per_seed])), 4)


def summarise_main(per_seed: list[dict[str, Any]], budget: int, generations: int
                   ) -> dict[str, Any]:
    strategies = {}
    for k in MAIN:
        by_group = [rollouts_by_group(f[k]["summary"], generations) for f in per_seed]
        strategies[k] = {**{m: mean_of(per_seed, k, m) for m in METRICS},
                         "rollouts": budget,
                         "rollouts_by_group": {g: round(float(np.mean([x[g] for x in by_group])))
                                               for g in GROUPS},
                         "after": mean_after(per_seed, k)}
    fractions = [float(f["adaptive"]["point"]["to_uniform_final"][0]) for f in per_seed]
    # A replicate that never reaches uniform's final counts as past any budget (inf), not as absent.
    reps = np.mean([np.nan_to_num(f["adaptive"]["reps"]["to_uniform_final"], nan=np.inf)
                    for f in per_seed], axis=0)
    out: dict[str, Any] = {"strategies": strategies, "adaptive_rollouts_to_uniform_final": (
        round(float(np.mean(fractions)), 4) if np.all(np.isfinite(fractions)) else None),
        "rollouts_to_uniform_final": {"per_seed": [None if not np.isfinite(x) else round(x, 4)
                                                   for x in fractions],
                                      "ci95": reach_interval(reps), "ci95_seeds": t_interval(
                                          [x for x in fractions if np.isfinite(x)])}}
    for base in ("uniform", "static"):
        out[f"adaptive_vs_{base}"] = {m: paired(per_seed, "adaptive", base, m) for m in METRICS}
    out["targets"] = targets(out)
    return out


def reach_interval(reps: np.ndarray) -> list[float | None]:
    """The 2.5 and 97.5 percentiles of rollout fractions to reach a target (None: never)."""
    bounds = np.percentile(reps, [2.5, 97.5], method="nearest")
    return [round(float(b), 4) if np.isfinite(b) else None for b in bounds]


def mean_after(per_seed: list[dict[str, Any]], run: str) -> dict[str, float]:
    """Each domain's held-out score after the budget, averaged over seeds."""
    afters = [f[run]["summary"]["after"] for f in per_seed]
    return {d: round(float(np.mean([a[d] for a in afters])), 4) for d in sorted(afters[0])}


def targets(out: dict[str, Any]) -> dict[str, Any]:
    """The issue's three targets, judged on the means over seeds (intervals beside them)."""
    frac = out["adaptive_rollouts_to_uniform_final"]
    vs = out["adaptive_vs_uniform"]
    return {
        "rollouts_to_uniform_final_at_most_0.7": {"value": frac,
                                                  "met": frac is not None and frac <= 0.7},
        "worst_learnable_not_lower_than_uniform": {**vs["worst_after"],
                                                   "met": vs["worst_after"]["diff"] >= 0},
        "forgetting_not_higher_than_uniform": {**vs["forgetting"],
                                               "met": vs["forgetting"]["diff"] <= 0},
    }


def summarise_sequential(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    names = ("forgetting_A", "mean_forgetting_A", "macro_A", "macro_B", "macro_after")
    out: dict[str, Any] = {"groups": {k: list(v) for k, v in SEQUENTIAL.items()}}
    for run in ("sequential", "joint"):
        out[run] = {m: mean_of(per_seed, run, m) for m in names}
    out["sequential_vs_joint"] = {m: paired(per_seed, "sequential", "joint", m) for m in names}
    return out


def summarise_ablation(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"controls_on": {m: mean_of(per_seed, "adaptive", m) for m in METRICS}}
    for name in ABLATIONS:
        out[name] = {m: mean_of(per_seed, name, m) for m in METRICS}
        out[f"{name}_vs_on"] = {m: paired(per_seed, name, "adaptive", m) for m in METRICS}
    return out


# -- plots ---------------------------------------------------------------------------------------


def mean_curve(per_seed: list[dict[str, Any]], run: str, cols: list[int] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Rollouts and the seeds' mean held-out curve of ``run`` (macro, or over ``cols``)."""
    curves = [f[run]["curve"]["point"][0] for f in per_seed]
    values = np.mean([c[:, cols].mean(axis=1) if cols else c.mean(axis=1) for c in curves], axis=0)
    return per_seed[0][run]["curve"]["rollouts"], values


def plot(result: dict[str, Any], per_seed: dict[str, list[dict[str, Any]]], path: Path) -> None:
    """Macro curves, rollouts by group and (when run) sequential vs joint, in one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 3 if per_seed.get("sequential") else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.2))
    main = per_seed["main"]
    for k in MAIN:
        x, y = mean_curve(main, k)
        axes[0].plot(x, y, marker="o", ms=3, label=k)
    axes[0].axhline(result["strategies"]["uniform"]["macro_after"], ls="--", c="grey",
                    lw=0.8, label="uniform final")
    axes[0].set(xlabel="rollouts", ylabel="held-out macro mean (16 domains)",
                title=f"held-out macro, mean of {len(main)} seed(s)")
    axes[0].legend()
    groups = list(GROUPS)
    bottom = np.zeros(len(MAIN))
    for g in groups:
        share = np.array([result["strategies"][k]["rollouts_by_group"][g]
                          / result["strategies"][k]["rollouts"] for k in MAIN])
        axes[1].bar(MAIN, share, bottom=bottom, label=g)
        bottom += share
    axes[1].set(ylabel="share of rollouts", title="where the rollouts went")
    axes[1].legend(fontsize=8)
    if panels == 3:
        plot_sequential(axes[2], per_seed["sequential"])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_sequential(ax: Any, per_seed: list[dict[str, Any]]) -> None:
    both = sorted(SEQUENTIAL["A"] + SEQUENTIAL["B"])
    for run, style in (("sequential", "-"), ("joint", "--")):
        for group in ("A", "B"):
            cols = [both.index(d) for d in SEQUENTIAL[group]]
            x, y = mean_curve(per_seed, run, cols)
            ax.plot(x, y, style, marker="o", ms=3, label=f"{run}: group {group}")
    ax.set(xlabel="rollouts", ylabel="held-out mean of the group",
           title="A then B, or A and B jointly")
    ax.legend(fontsize=8)


# -- entry point ---------------------------------------------------------------------------------


def run_bench(args: Any) -> dict[str, Any]:
    bench = Bench(args)
    per_seed: dict[str, list[dict[str, Any]]] = {k: [] for k in args.sections}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        s = Seed(bench, seed)
        main = bench.main(s)
        per_seed["main"].append(main)
        report_seed(seed, main)
        if "sequential" in args.sections:
            per_seed["sequential"].append(bench.sequential(s))
        if "ablation" in args.sections:
            per_seed["ablation"].append(bench.ablation(s, main))
    budget = args.steps * bench.per_step
    result: dict[str, Any] = {"main": summarise_main(per_seed["main"], budget, bench.generations)}
    if per_seed.get("sequential"):
        result["sequential"] = summarise_sequential(per_seed["sequential"])
    if per_seed.get("ablation"):
        result["ablation"] = summarise_ablation(per_seed["ablation"])
    result["per_seed"] = [seed_table(f) for f in per_seed["main"]]
    return {"result": result, "per_seed": per_seed}


def report_seed(seed: int, main: dict[str, Any]) -> None:
    text = ", ".join(f"{k} macro {main[k]['point']['macro_after'][0]:.3f} worst "
                     f"{main[k]['point']['worst_after'][0]:.3f} forgetting "
                     f"{main[k]['point']['forgetting'][0]:.3f}" for k in MAIN)
    frac = main["adaptive"]["point"]["to_uniform_final"][0]
    print(f"seed {seed}: {text}; adaptive reached uniform's final at {frac:.2f} of the budget",
          file=sys.stderr)


def seed_table(main: dict[str, Any]) -> dict[str, Any]:
    """One seed's figures: per strategy the metrics and every domain after the budget."""
    out = {}
    for k in MAIN:
        out[k] = {m: round(float(main[k]["point"][m][0]), 4) for m in METRICS}
        out[k]["after"] = {d: round(v, 4) for d, v in main[k]["summary"]["after"].items()}
    frac = float(main["adaptive"]["point"]["to_uniform_final"][0])
    out["adaptive_rollouts_to_uniform_final"] = round(frac, 4) if np.isfinite(frac) else None
    return out


def parse(argv: list[str] | None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="one seed, the main comparison only, on half the steps (under 15 "
                             "minutes)")
    parser.add_argument("--json", action="store_true", help="print the result object alone")
    parser.add_argument("--seeds", type=int, default=None, help="[3; 1 with --quick]")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=None,
                        help="[all; main with --quick]")
    parser.add_argument("--steps", type=int, default=None, help="GRPO steps per run [config's]")
    parser.add_argument("--evals", type=int, default=None,
                        help="in-run evaluations per run [8; 4 with --quick]")
    parser.add_argument("--items", type=int, default=48, help="held-out items per domain")
    parser.add_argument("--samples", type=int, default=4, help="samples per held-out item")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--out", default="runs/bench-joint")
    args = parser.parse_args(argv)
    args.seeds = args.seeds or (1 if args.quick else 3)
    args.evals = args.evals or (8 // QUICK if args.quick else 8)
    args.sections = args.sections or (["main"] if args.quick else list(SECTIONS))
    if "main" not in args.sections:
        args.sections.insert(0, "main")  # the others are read against it
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    os.nice(max(0, NICE - os.nice(0)))  # a shared machine: every run at niceness >= NICE
    base = yaml.safe_load((ROOT / CONFIG).read_text())
    args.steps = args.steps or base["train"]["grpo"]["steps"] // (QUICK if args.quick else 1)
    name = "joint_training_quick" if args.quick else "joint_training"
    began, load = time.perf_counter(), os.getloadavg()
    done = run_bench(args)
    result = {"bench": name, "config": CONFIG, "quick": args.quick,
              "seeds": list(range(args.first_seed, args.first_seed + args.seeds)),
              "steps": args.steps, "evals": args.evals, "items": args.items,
              "samples": args.samples, "groups": {k: list(v) for k, v in GROUPS.items()},
              **done["result"].pop("main"), **done["result"], "load_at_start": load,
              "load_at_end": os.getloadavg(), "runtime_s": round(time.perf_counter() - began, 1),
              "cpu_s": round(children_cpu_s(), 1)}
    if not os.environ.get("RLHUB_BENCH_NO_SAVE"):
        RESULTS.mkdir(exist_ok=True)
        plot(result, done["per_seed"], RESULTS / f"{name}.png")
    if not args.json:
        print(human(result), file=sys.stderr)
    emit(result, table(result), NOTE)
    return result


def children_cpu_s() -> float:
    """CPU seconds of the finished training runs (user + system): the bench's cost on an idle
    machine, whatever the load it ran under. A run reused from an earlier bench counts 0."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


NOTE = ("Real GRPO runs of the embedded tiny policy on examples/joint.yaml (16 domains in four "
        "groups), every strategy on the same seeds and held-out items; differences are paired "
        "per held-out item, with 95% bootstrap intervals.")


def _diff(d: dict[str, Any]) -> str:
    lo, hi = d["ci95"]
    return f"{d['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def table(result: dict[str, Any]) -> list[Row]:
    """The rows BENCHMARKS.md shows: the main comparison, joint against sequential, ablations."""
    seeds = f"seed{'s' if len(result['seeds']) > 1 else ''} {', '.join(map(str, result['seeds']))}"
    rows: list[Row] = []
    uni = result["strategies"]["uniform"]
    for name, got in result["strategies"].items():
        rows.append((f"{name}: macro / worst held-out reward after {result['steps']} steps "
                     f"({seeds})", f"{got['macro_after']:.3f} / {got['worst_after']:.3f}",
                     "" if name == "uniform" else
                     f"uniform {uni['macro_after']:.3f} / {uni['worst_after']:.3f}"))
    for metric in ("macro_after", "worst_after", "forgetting"):
        rows.append((f"adaptive − uniform, {metric.replace('_', ' ')}",
                     _diff(result["adaptive_vs_uniform"][metric]), "paired, 95% CI"))
    frac = result["adaptive_rollouts_to_uniform_final"]
    rows.append(("adaptive's rollouts to reach uniform's final macro",
                 "never, within the budget" if frac is None else f"{frac:.2f} of the budget",
                 "target ≤ 0.70"))
    if "sequential" in result:
        seq = result["sequential"]
        rows.append(("largest drop of an A domain: sequential A→B against joint",
                     f"{seq['sequential']['forgetting_A']:.3f} against "
                     f"{seq['joint']['forgetting_A']:.3f}",
                     _diff(seq["sequential_vs_joint"]["forgetting_A"])))
    for name, got in result.get("ablation", {}).items():
        if name.endswith("_vs_on"):
            rows.append((f"{name.removesuffix('_vs_on')} − adaptive, forgetting",
                         _diff(got["forgetting"]), "paired, 95% CI"))
    return rows


def human(result: dict[str, Any]) -> str:
    """A short table of the main comparison."""
    rows = [f"{'strategy':<10} {'macro_after':>11} {'worst_after':>11} {'forgetting':>10}"]
    for k, v in result["strategies"].items():
        rows.append(f"{k:<10} {v['macro_after']:>11.3f} {v['worst_after']:>11.3f} "
                    f"{v['forgetting']:>10.3f}")
    rows.append(f"adaptive reached uniform's final macro on "
                f"{result['adaptive_rollouts_to_uniform_final']} of the budget")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
