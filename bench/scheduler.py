"""Benchmark of the domain scheduler against a simulated GRPO learner; prints JSON.

Usage::

    python bench/scheduler.py            # 7 scenarios x 4 strategies x 30 paired seeds (~1 min)
    python bench/scheduler.py --quick    # 8 seeds, for a smoke run

The learner (numpy). A latent skill vector theta. Domain d solves an item of difficulty delta with
probability sigmoid(U_d . theta - b_d - delta); training on d moves theta along W_d, so W_d . U_e
encodes transfer (> 0) and interference (< 0) from d to e. Unpractised skill decays towards its
start. A step draws B prompt groups per the scheduler's allocation, G rollouts each; a noisy
verifier flips each reward with probability nu_d; GRPO advantages (r - mean) / std are zero for
zero-variance groups, which therefore give no gradient. The policy-gradient step on the item logit
is mean_j A_j (c_j - p) (c = true correctness), pushed through W_d with step size eta.

Metrics (on a fixed, noise-free eval set per domain, evaluated every ``eval_every`` steps): final
macro accuracy (mean over domains), final worst-domain accuracy, AUC (mean macro over evals), and
mean max forgetting ``mean_d max_t (max_{s<=t} h_d(s) - h_d(t))``. Every strategy runs on the same
seeds (same learner, items and eval sets); differences are paired per seed, with 95% bootstrap CIs.
The schedulers see only rewards and noisy held-out scores, never the scenario.

Two scenarios, ``tiny_demo`` and ``tiny_imbalanced``, are calibrated on real GRPO runs of the demo
(``bench/demo_mixing.py``): its scale, its adaptive parameters, per-domain learning speeds fitted to
the real uniform runs, a held-out score before training, and a domain whose groups are informative
but whose skill does not move (the real runs' math/tiny-count-v1). They are where the simulator
can be checked against reality: both say adaptive cannot lift the worst domain at that scale.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from _util import Row, emit

os.environ.setdefault("RLHUB_DISABLE_AUTOLOAD", "1")  # only the built-in schedulers are compared

import rlhub  # noqa: E402
from rlhub.mixture import DEFAULT_PARAMS  # noqa: E402

STRATEGIES = ("uniform", "static", "temperature", "adaptive")
METRICS = ("macro", "worst", "auc", "forgetting", "reach")
K = 16


@dataclass
class Scenario:
    """One simulated world: skill geometry, start accuracies, sizes, verifier noise, shifts.

    A scenario has up to ``K`` domains (as many as ``acc0`` lists); ``setup`` overrides the
    shared :class:`Setup` for it (a scenario calibrated on real runs uses their batch and steps).
    """

    name: str
    acc0: list[float]
    sizes: list[int]
    noise: list[float] | None = None  # None: a noise-free verifier for every domain
    scales: list[float] = field(default_factory=lambda: [1.0, 10.0, 1.0, 1.0, 2.0, 1.0])
    edits: list[tuple[str, int, int, float]] = field(default_factory=list)  # (U|W, d, dim, value)
    shifts: list[tuple[float, int, float]] = field(default_factory=list)  # (at fraction, d, +b)
    setup: dict[str, Any] = field(default_factory=dict)
    weights: list[float] | None = None  # the static mixture; None: proportional to sizes
    params: dict[str, Any] = field(default_factory=dict)  # adaptive parameters of the real config
    learnable: list[int] | None = None  # the domains "worst" is taken over; None: every domain
    groups: dict[str, list[int]] | None = None  # named groups of domains whose rollouts are shown

    @property
    def k(self) -> int:
        return len(self.acc0)

    def noise_of(self) -> np.ndarray:
        return np.zeros(self.k) if self.noise is None else np.asarray(self.noise, dtype=float)


# dims: 0..K-1 private skills, G general, C conflict axis, T transfer skill
GEN, CON, TRA = K, K + 1, K + 2
DIMS = K + 3

# Calibrated on real runs of the demo (bench/demo_mixing.py; README "Measured"): 4 tiny domains
# (succ, reverse, lambda, count) at the demo's scale (180 steps of 8 groups of 8, held-out before
# training and every 60 steps) and with its adaptive parameters. Per-domain learning speed was
# fitted to the gains the real uniform runs measured (about +0.07, +0.08, +0.04 and 0.00 in 180
# steps); count is "informative but unresponsive": three of four of its groups had reward
# variance, yet its held-out score did not move whatever its share (1/15 under static, 1/4
# under uniform, up to 1/2 under adaptive), so it shares no general skill and learns nothing
# from its own samples.
TINY_COUNT = [("W", 3, 3, 0.0), ("U", 3, GEN, 0.0), ("W", 3, GEN, 0.0)]
TINY_SPEED = [("W", 0, 0, 2.0), ("W", 1, 1, 0.9), ("W", 2, 2, 0.5)]
TINY_SETUP = {"steps": 180, "batch": 8, "group": 8, "eval_items": 64, "eval_every": 60,
              "eval_at_start": True}
TINY_PARAMS = {"floor": 0.4, "smoothing": 0.1, "rho_max": 0.3}  # examples/demo*.yaml

# Calibrated on the real runs of bench/joint_training.py (examples/joint.yaml, seed 0): 16 tiny
# domains in four groups at that bench's scale, starting from the real warm-up's held-out scores.
# Domains 0-3 are saturated after the warm-up; 4-7 are out of reach (they share no skill; 4-6 have
# guessable answers, so their groups carry variance, and creep up by learning which answers are
# common); 8-13 are learnable, 9 and 10 sharing 8's procedure and 12 and 13 sharing 11's
# (transfer); 14 and 15 ask the same prompts and pay for different answers (one's gain is the
# other's loss). Each domain's own learning speed is fitted to its gain in the real uniform run
# (bench/results/joint_training.json; 6 simulated seeds within 0.01 of every gain but the
# interfering pair's, 0.212 against 0.172 for pick-last).
def joint_edits() -> list[tuple[str, int, int, float]]:
    edits: list[tuple[str, int, int, float]] = []
    for d in range(4, 8):
        edits += [("U", d, GEN, 0.0), ("W", d, GEN, 0.0)]
    for d, source in ((9, 8), (10, 8), (12, 11), (13, 11)):
        edits += [("U", d, source, 0.7), ("W", d, source, 0.7)]
    edits += [("W", d, d, speed) for d, speed in JOINT_SPEED.items()]
    edits += [("U", 15, 15, 0.0), ("W", 15, 15, 0.0), ("U", 15, GEN, 0.0),
              ("U", 14, CON, 1.0), ("W", 14, CON, 1.0), ("U", 15, CON, -1.0), ("W", 15, CON, -1.0)]
    return edits


# times1 times10 neg copy | count parity mod7 mul | succ pred add reverse mirror rotate | picks
JOINT_ACC0 = [0.974, 0.979, 0.938, 0.865, 0.266, 0.427, 0.125, 0.0,
              0.318, 0.438, 0.042, 0.177, 0.125, 0.88, 0.531, 0.203]
JOINT_SPEED = {4: 2.6, 5: 0.34, 6: 2.1, 7: 0.0, 8: 2.8, 9: 7.0, 10: 0.3, 11: 3.4, 12: 5.5,
               13: 9.7, 14: 9.5}
# eval_fresh: between two real evaluations of an out-of-reach domain (parity, count, mod7 in the
# quick uniform run) the held-out score moved by 0.28-0.48 of the standard deviation fresh draws
# would give (variance 0.08-0.23 of it): about 0.15 of the draws are new each time.
JOINT_SETUP = {"steps": 400, "batch": 8, "group": 8, "eval_items": 48, "eval_samples": 4,
               "eval_every": 50, "eval_at_start": True, "eval_fresh": 0.15}
JOINT_PARAMS: dict[str, Any] = {"floor": 0.2}  # examples/joint.yaml
JOINT_WEIGHTS = [3.0] * 4 + [1.5] * 4 + [1.0] * 8  # examples/joint.yaml
JOINT_GROUPS = {"saturated": [0, 1, 2, 3], "out_of_reach": [4, 5, 6, 7],
                "learnable": [8, 9, 10, 11, 12, 13], "interfering": [14, 15]}

SCENARIOS = [
    Scenario("imbalance", [0.96, 0.75, 0.25, 0.2, 0.15, 0.1], [60000, 20000, 1500, 800, 500, 300]),
    Scenario("conflict", [0.45, 0.5, 0.3, 0.25, 0.35, 0.3], [4000, 4000, 3000, 3000, 2000, 2000],
             edits=[("U", 0, CON, 1.0), ("U", 1, CON, -1.0), ("W", 0, CON, 2.0),
                    ("W", 1, CON, -0.8), ("U", 0, 0, 0.2), ("U", 1, 1, 0.2),
                    ("W", 0, 0, 0.2), ("W", 1, 1, 0.2)]),
    Scenario("transfer", [0.4, 0.3, 0.35, 0.3, 0.3, 0.002], [4000, 4000, 3000, 3000, 2000, 2000],
             edits=[("U", 5, TRA, 1.2), ("W", 4, TRA, 0.9), ("W", 2, TRA, -0.4),
                    ("W", 4, 3, -0.6)]),
    Scenario("noisy_verifier", [0.3, 0.35, 0.3, 0.25, 0.3, 0.4], [4000, 4000, 3000, 3000, 2000, 2000],
             noise=[0.0, 0.0, 0.3, 0.1, 0.0, 0.0]),
    Scenario("nonstationary", [0.35, 0.4, 0.3, 0.3, 0.25, 0.35], [4000, 4000, 3000, 3000, 2000, 2000],
             shifts=[(0.5, 1, 2.5), (0.5, 4, -1.5), (0.75, 2, 2.0)]),
    Scenario("tiny_demo", [0.88, 0.77, 0.87, 0.23], [1000] * 4, scales=[1.0] * 4,
             edits=TINY_SPEED + TINY_COUNT, setup=TINY_SETUP, params=TINY_PARAMS),
    Scenario("tiny_imbalanced", [0.82, 0.47, 0.38, 0.29], [8000, 4000, 2000, 1000],
             scales=[1.0] * 4, edits=TINY_SPEED + TINY_COUNT, setup=TINY_SETUP,
             params=TINY_PARAMS),
    Scenario("tiny_joint", JOINT_ACC0, [1000] * 16, scales=[1.0] * 16, edits=joint_edits(),
             setup=JOINT_SETUP, weights=JOINT_WEIGHTS, params=JOINT_PARAMS,
             learnable=JOINT_GROUPS["learnable"], groups=JOINT_GROUPS),
]


@dataclass
class Setup:
    """Learner hyper-parameters shared by every scenario and strategy."""

    steps: int = 300
    batch: int = 64
    group: int = 8
    eta: float = 0.0025
    decay: float = 0.001
    item_sd: float = 1.0
    eval_items: int = 200
    eval_samples: int = 1
    eval_every: int = 10
    eval_at_start: bool = False  # the held-out score before training, as the real trainer has
    eval_fresh: float = 0.0  # share of the held-out sampling draws that are new at each evaluation


class World:
    """The simulated learner for one (scenario, seed)."""

    def __init__(self, sc: Scenario, setup: Setup, seed: int):
        rng = np.random.default_rng(seed)
        self.sc, self.setup = sc, setup
        k = sc.k
        self.U = np.zeros((k, DIMS))
        self.W = np.zeros((k, DIMS))
        for d in range(k):
            self.U[d, d] = self.W[d, d] = 1.0
            self.U[d, GEN] = self.W[d, GEN] = 0.3
        for which, d, dim, value in sc.edits:
            (self.U if which == "U" else self.W)[d, dim] = value
        self.W += rng.normal(0.0, 0.05, self.W.shape)  # per-seed jitter of the geometry
        self.theta0 = np.zeros(DIMS)
        self.theta = self.theta0.copy()
        acc0 = np.clip(np.asarray(sc.acc0) + rng.normal(0.0, 0.02, k), 0.001, 0.995)
        squash = np.sqrt(1.0 + np.pi * setup.item_sd ** 2 / 8.0)
        self.b = -np.log(acc0 / (1.0 - acc0)) * squash
        self.eval_delta = rng.normal(0.0, setup.item_sd, (k, setup.eval_items))
        self.rng = np.random.default_rng(seed + 10_000)
        # The held-out draws are fixed, as the trainer's fixed items and sampling seed make them:
        # two evaluations of one model agree, and of two close models differ little.
        self.crn = np.random.default_rng(seed + 20_000)
        shape = (k, setup.eval_items, setup.eval_samples)
        self.eval_u, self.eval_flip = self.crn.random(shape), self.crn.random(shape)

    def logits(self) -> np.ndarray:
        return self.U @ self.theta - self.b

    def accuracy(self) -> np.ndarray:
        z = self.logits()[:, None] - self.eval_delta
        return (1.0 / (1.0 + np.exp(-z))).mean(axis=1)

    def observed_eval(self) -> np.ndarray:
        """Held-out score per domain as a verifier sees it, on the fixed draws; ``eval_fresh`` of
        them are drawn anew each time (the trainer's fixed sampling seed fixes a sample only
        while the policy's distribution at that point has not moved)."""
        if self.setup.eval_fresh > 0:
            renew = self.crn.random(self.eval_u.shape) < self.setup.eval_fresh
            self.eval_u[renew] = self.crn.random(int(renew.sum()))
        z = self.logits()[:, None] - self.eval_delta
        p = (1.0 / (1.0 + np.exp(-z)))[:, :, None]
        correct = self.eval_u < p
        flipped = self.eval_flip < self.sc.noise_of()[:, None, None]
        return (correct ^ flipped).mean(axis=(1, 2))

    def shift(self, step: int) -> None:
        for at, d, delta in self.sc.shifts:
            if step == int(at * self.setup.steps):
                self.b[d] += delta

    def rollouts(self, domains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(observed rewards, policy-gradient on each group's logit) for one group per entry."""
        s, g = self.setup, self.setup.group
        z = self.logits()[domains] - self.rng.normal(0.0, s.item_sd, len(domains))
        p = 1.0 / (1.0 + np.exp(-z))
        correct = (self.rng.random((len(domains), g)) < p[:, None]).astype(float)
        flips = self.rng.random((len(domains), g)) < self.sc.noise_of()[domains, None]
        reward = np.where(flips, 1.0 - correct, correct)
        sd = reward.std(axis=1, keepdims=True)
        adv = np.where(sd > 0, (reward - reward.mean(axis=1, keepdims=True)) / np.maximum(sd, 1e-9), 0)
        grad = (adv * (correct - p[:, None])).mean(axis=1)
        return reward, grad

    def train(self, domains: np.ndarray, grad: np.ndarray) -> None:
        per_domain = np.bincount(domains, weights=grad, minlength=self.sc.k)
        self.theta += self.setup.eta * per_domain @ self.W
        self.theta -= self.setup.decay * (self.theta - self.theta0)


PARAMS: dict[str, Any] = {}  # adaptive overrides from --params (the same for every scenario)


def mixture(sc: Scenario, strategy: str, setup: Setup) -> dict[str, Any]:
    weights = sc.weights or sc.sizes
    domains = {f"d{d}": {"size": sc.sizes[d], "reward_range": [0.0, sc.scales[d]],
                         **({"weight": float(weights[d])} if strategy == "static" else {})}
               for d in range(sc.k)}
    adaptive = {**sc.params, **PARAMS}
    params = {"params": adaptive} if strategy == "adaptive" and adaptive else {}
    return {"strategy": strategy, "domains": domains, **params,
            "eval": {"items_per_domain": setup.eval_items, "every": setup.eval_every}}


def run(sc: Scenario, strategy: str, setup: Setup, seed: int) -> dict[str, float]:
    """One training run; returns the four metrics."""
    setup = dataclasses.replace(setup, **sc.setup)
    world = World(sc, setup, seed)
    sched = rlhub.Scheduler.simulation(mixture(sc, strategy, setup))
    names = [f"d{d}" for d in range(sc.k)]
    scales = np.asarray(sc.scales)
    curve = [world.accuracy()]
    spent = np.zeros(sc.k)
    if setup.eval_at_start:
        observe_eval(sched, world, sc, setup, names)
    for step in range(1, setup.steps + 1):
        world.shift(step)
        alloc = sched.allocate(setup.batch)
        domains = np.repeat([int(n[1:]) for n in alloc], list(alloc.values()))
        spent += np.bincount(domains, minlength=sc.k)
        reward, grad = world.rollouts(domains)
        world.train(domains, grad)
        scaled = reward * scales[domains, None]
        start = 0
        for name, count in alloc.items():
            sched.observe(name, scaled[start:start + count].tolist())
            start += count
        if step % setup.eval_every == 0:
            curve.append(world.accuracy())
            observe_eval(sched, world, sc, setup, names)
    out = metrics(np.asarray(curve), sc.learnable)
    for name, members in (sc.groups or {}).items():
        out[f"share_{name}"] = float(spent[members].sum() / spent.sum())
    return out


def observe_eval(sched: Any, world: World, sc: Scenario, setup: Setup, names: list[str]) -> None:
    """A noisy held-out score per domain: fixed items and fixed sampling draws (as the trainer
    scores), through the verifier's noise."""
    seen = world.observed_eval()
    n = setup.eval_items * setup.eval_samples
    for d, name in enumerate(names):
        sched.observe_eval(name, seen[d] * sc.scales[d], n)


def metrics(curve: np.ndarray, learnable: list[int] | None = None) -> dict[str, Any]:
    """curve: (evals, domains) noise-free accuracies. ``reach`` is filled in by :func:`reach`."""
    running_best = np.maximum.accumulate(curve, axis=0)
    return {
        "macro": float(curve[-1].mean()),
        "worst": float(curve[-1][learnable or slice(None)].min()),
        "auc": float(curve.mean(axis=1).mean()),
        "forgetting": float((running_best - curve).max(axis=0).mean()),
        "macro_curve": curve.mean(axis=1),
    }


def reach(rows: dict[str, list[dict[str, Any]]]) -> None:
    """Set each run's ``reach``: the fraction of the steps it needed to reach uniform's final
    macro accuracy in the same seed (linear between evaluations; NaN when it never did)."""
    for s, runs in rows.items():
        for run, base in zip(runs, rows["uniform"]):
            curve = run["macro_curve"]
            hit = np.flatnonzero(curve >= base["macro"])
            run["reach"] = math.nan
            if hit.size:
                j = int(hit[0])
                frac = 1.0 if j == 0 or curve[j] <= curve[j - 1] else \
                    (base["macro"] - curve[j - 1]) / (curve[j] - curve[j - 1])
                run["reach"] = (j - 1 + frac) / (len(curve) - 1) if j else 0.0


def paired_ci(diff: np.ndarray, rng: np.random.Generator, reps: int = 2000) -> dict[str, float]:
    diff = diff[np.isfinite(diff)]
    if diff.size == 0:
        return {"diff": math.nan, "lo": math.nan, "hi": math.nan}
    means = rng.choice(diff, (reps, len(diff)), replace=True).mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"diff": round(float(diff.mean()), 4), "lo": round(float(lo), 4),
            "hi": round(float(hi), 4)}


def summarise(results: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    table = {s: {m: np.array([r[m] for r in rows]) for m in METRICS} for s, rows in results.items()}
    out: dict[str, Any] = {"mean": {s: {m: round(float(np.nanmean(v)), 4) for m, v in t.items()}
                                    for s, t in table.items()}}
    shares = sorted(m for m in next(iter(results.values()))[0] if m.startswith("share_"))
    if shares:  # where the rollouts went, by named group of domains
        out["rollout_share"] = {s: {m.removeprefix("share_"): round(float(np.mean(
            [r[m] for r in rows])), 4) for m in shares} for s, rows in results.items()}
    for base in ("uniform", "static"):
        out[f"vs_{base}"] = {s: {m: paired_ci(table[s][m] - table[base][m], rng) for m in METRICS}
                             for s in STRATEGIES if s != base}
    return out


def targets(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, each with its CI and whether it was met."""
    checks = []

    def add(scenario: str, base: str, metric: str, want: str) -> None:
        ci = summary[scenario][f"vs_{base}"]["adaptive"][metric]
        ok = {"better": ci["lo"] > 0, "lower": ci["hi"] < 0, "not_worse": ci["hi"] >= 0,
              "not_higher": ci["lo"] <= 0}[want]
        checks.append({"scenario": scenario, "vs": base, "metric": metric, "want": want,
                       "ci": ci, "met": bool(ok)})

    add("imbalance", "static", "macro", "better")
    add("imbalance", "static", "worst", "better")
    for scenario in ("conflict", "transfer"):
        add(scenario, "uniform", "worst", "better")
        add(scenario, "uniform", "forgetting", "lower")
    for sc in SCENARIOS:
        add(sc.name, "uniform", "macro", "not_worse")
    for scenario in ("tiny_demo", "tiny_imbalanced"):  # what the real runs can show at their scale
        add(scenario, "uniform", "worst", "not_worse")
    add("tiny_joint", "uniform", "worst", "not_worse")  # the targets of bench/joint_training.py
    add("tiny_joint", "uniform", "forgetting", "not_higher")
    got = summary["tiny_joint"]["mean"]["adaptive"]["reach"]
    checks.append({"scenario": "tiny_joint", "vs": "uniform", "metric": "reach",
                   "want": "at_most_0.7", "value": got, "met": bool(got <= 0.7)})
    return checks


def scale_bench(domains: int = 500, groups: int = 256, group_size: int = 8,
                reps: int = 300) -> dict[str, Any]:
    """Median time of one decision (allocate) plus the observations of one batch of groups.

    Two ways of observing are timed: ``observe_batch`` (one call per batch, the trainer's fast
    path) and ``observe`` once per domain present in the batch (the plain API).
    """
    rng = np.random.default_rng(0)
    rewards = (rng.random((reps, groups, group_size)) < 0.4).astype(float)
    out: dict[str, Any] = {"domains": domains, "groups": groups, "group_size": group_size,
                           "target_ms": 1.0}
    for path in ("observe_batch", "observe"):
        config = {"strategy": "adaptive", "domains": {
            f"s{d:03d}": {"size": 1000, "reward_range": [0, 1]} for d in range(domains)}}
        sched = rlhub.Scheduler.simulation(config)
        nested = rewards.tolist() if path == "observe" else None
        total, decide = [], []
        for rep in range(reps):
            t0 = time.perf_counter()
            alloc = sched.allocate(groups)
            t1 = time.perf_counter()
            if path == "observe_batch":
                sched.observe_batch(list(np.repeat(list(alloc), list(alloc.values()))), rewards[rep])
            else:
                start = 0
                for name, count in alloc.items():
                    sched.observe(name, nested[rep][start:start + count])
                    start += count
            if rep % 10 == 0:
                sched.observe_eval("s000", 0.5, 200)
            total.append(time.perf_counter() - t0)
            decide.append(t1 - t0)
        out[path] = {"median_ms": round(statistics.median(total) * 1e3, 3),
                     "p90_ms": round(float(np.percentile(total, 90)) * 1e3, 3),
                     "decision_median_ms": round(statistics.median(decide) * 1e3, 3),
                     "met": statistics.median(total) <= 1e-3}
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 seeds instead of 30")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--scenario", action="append", help="run only these scenarios")
    parser.add_argument("--params", type=json.loads, default={},
                        help="JSON overrides of the adaptive strategy's parameters")
    args = parser.parse_args(argv)
    PARAMS.update(args.params)
    seeds = args.seeds or (8 if args.quick else 30)
    setup = Setup()
    began = time.perf_counter()
    report: dict[str, Any] = {"bench": "scheduler", "seeds": seeds, "setup": setup.__dict__,
                              "adaptive_params": {**DEFAULT_PARAMS["adaptive"], **PARAMS},
                              "strategies": list(STRATEGIES), "scenarios": {}}
    chosen = [s for s in SCENARIOS if not args.scenario or s.name in args.scenario]
    for sc in chosen:
        results = {s: [run(sc, s, setup, seed) for seed in range(seeds)] for s in STRATEGIES}
        reach(results)
        report["scenarios"][sc.name] = summarise(results)
        print(f"{sc.name}: {report['scenarios'][sc.name]['mean']}", file=sys.stderr)
    if len(chosen) == len(SCENARIOS):
        report["targets"] = targets(report["scenarios"])
        report["targets_met"] = f"{sum(t['met'] for t in report['targets'])}/{len(report['targets'])}"
    report["scale"] = scale_bench()
    report["runtime_s"] = round(time.perf_counter() - began, 1)
    emit(report, table(report), "A simulated GRPO learner (module docstring), every strategy on the "
         "same seeds; differences are paired per seed, with 95% bootstrap intervals.")
    return report


def table(report: dict[str, Any]) -> list[Row]:
    """Per scenario adaptive's paired gains over uniform, then the targets and the scale cost."""
    rows: list[Row] = []
    for name, got in report["scenarios"].items():
        for metric in ("macro", "worst", "forgetting"):
            d = got["vs_uniform"]["adaptive"][metric]
            rows.append((f"{name}: adaptive − uniform, {metric} ({report['seeds']} seeds)",
                         f"{d['diff']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]", "paired, 95% CI"))
    if "targets_met" in report:
        missed = [f"{t['scenario']} {t['metric']} vs {t['vs']}" for t in report["targets"]
                  if not t["met"]]
        rows.append(("adaptive's targets met", report["targets_met"],
                     "missed: " + "; ".join(missed) if missed else "all"))
    scale = report["scale"]
    for path in ("observe_batch", "observe"):
        rows.append((f"one decision and one batch's observations ({scale['domains']} domains, "
                     f"{scale['groups']} groups, `{path}`)", f"{scale[path]['median_ms']:.3f} ms "
                     "median", f"target ≤ {scale['target_ms']:g} ms"))
    return rows


if __name__ == "__main__":
    main()
