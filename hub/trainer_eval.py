"""Held-out evaluation of the local trainer: sampled reward per item, and paired bootstrap CIs.

The held-out metric is the **sampled reward at the training temperature**: the mean reward of
``samples`` completions per held-out item (test split), drawn at the base GRPO temperature. GRPO
optimises exactly this quantity; greedy accuracy of a tiny model often does not move while its
sampled reward rises (the policy sharpens without changing its argmax), so greedy accuracy is
reported beside it for information only.

Before and after training the same items are scored with the same sampling seed, and the change
is summarised per domain by a paired bootstrap over items: resample items, average the per-item
differences, take the 2.5 and 97.5 percentiles. A domain "regressed beyond noise" when its whole
interval lies below zero.
"""

from __future__ import annotations

from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from rlhub.hub.trainer_text import render_prompt, sample_texts
from rlhub.task import Score, Task


class ScoreCache:
    """Verdicts of ``(task id, completion)`` pairs for deterministic domains (bounded LRU)."""

    def __init__(self, domains: dict[str, Any], size: int = 200_000, workers: int = 4):
        self.domains = domains
        self.size = size
        self.workers = workers
        self._scores: OrderedDict[tuple[str, str], Score] = OrderedDict()

    def scores(self, tasks: list[Task], completions: list[str]) -> list[Score]:
        """One score per (task, completion); each distinct pair is verified once.

        Hits are taken (and made most recent) before any new verdict is stored, so storing one
        can never evict a verdict this batch still needs.
        """
        keys = [(t.id, c) for t, c in zip(tasks, completions)]
        known = {k: self._hit(k) for k in keys if k in self._scores}
        todo = {k: (t, c) for k, t, c in zip(keys, tasks, completions) if k not in known}
        if todo:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                known.update(zip(todo, pool.map(lambda tc: self._verify(*tc), todo.values())))
            for key, (task, _) in todo.items():
                self._remember(key, known[key], task)
        return [known[k] for k in keys]

    def _hit(self, key: tuple[str, str]) -> Score:
        self._scores.move_to_end(key)
        return self._scores[key]

    def _verify(self, task: Task, completion: str) -> Score:
        return self.domains[task.domain].verify(task, completion)

    def _remember(self, key: tuple[str, str], score: Score, task: Task) -> None:
        """Keep the verdict when the domain is deterministic (``determinism: seeded``)."""
        if self.domains[task.domain].manifest.data.get("determinism", "seeded") != "seeded":
            return
        self._scores[key] = score
        if len(self._scores) > self.size:
            self._scores.popitem(last=False)


@dataclass
class HeldOutResult:
    """Per-domain, per-item mean rewards (items in held-out order) and the scoring settings."""

    items: dict[str, list[float]]
    temperature: float
    samples: int

    def scores(self) -> dict[str, float]:
        return {d: float(np.mean(v)) for d, v in self.items.items()}

    def mean(self) -> float:
        return float(np.mean(list(self.scores().values())))


class HeldOut:
    """A fixed set of test-split tasks per domain, scored by sampling the model."""

    def __init__(self, domains: dict[str, Any], items: int, seed: int, cache: ScoreCache,
                 max_new_tokens: int, split: str = "test"):
        self.tasks = {d: dom.sample(items, split=split, seed=seed) for d, dom in domains.items()}
        self.cache = cache
        self.seed = seed
        self.max_new_tokens = max_new_tokens

    def evaluate(self, model: Any, tokenizer: Any, *, temperature: float, samples: int,
                 items: int | None = None) -> HeldOutResult:
        """Mean reward of ``samples`` completions per item (greedy: temperature 0, samples 1)."""
        chosen = {d: ts[:items] if items else ts for d, ts in self.tasks.items()}
        flat = [t for ts in chosen.values() for t in ts for _ in range(samples)]
        prompts = [render_prompt(tokenizer, t) for t in flat]
        with torch.random.fork_rng():
            torch.manual_seed(self.seed)
            texts = sample_texts(model, tokenizer, prompts, temperature=temperature,
                                 max_new_tokens=self.max_new_tokens)
        rewards = np.array([s.reward for s in self.cache.scores(flat, texts)])
        out, at = {}, 0
        for domain, ts in chosen.items():
            block = rewards[at:at + len(ts) * samples].reshape(len(ts), samples)
            out[domain] = block.mean(axis=1).tolist()
            at += len(ts) * samples
        return HeldOutResult(out, temperature, samples)


def paired_bootstrap(before: list[float], after: list[float], *, seed: int = 0,
                     resamples: int = 2000) -> dict[str, float]:
    """Mean paired difference ``after - before`` over items with its 95% bootstrap interval."""
    diff = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    if diff.size == 0:
        raise ValueError("paired_bootstrap: expected at least one item, found none")
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, (resamples, diff.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"delta": float(diff.mean()), "ci95": [float(lo), float(hi)]}


def mean_bootstrap(before: HeldOutResult, after: HeldOutResult, *, seed: int = 0,
                   resamples: int = 2000) -> dict[str, float]:
    """The paired change of the domain-averaged score, resampling items within each domain."""
    rng = np.random.default_rng(seed)
    per_domain = []
    for domain, b in before.items.items():
        diff = np.asarray(after.items[domain]) - np.asarray(b)
        per_domain.append(diff[rng.integers(0, diff.size, (resamples, diff.size))].mean(axis=1))
    means = np.mean(per_domain, axis=0)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"delta": after.mean() - before.mean(), "ci95": [float(lo), float(hi)]}


def compare(before: HeldOutResult, after: HeldOutResult, seed: int = 0) -> dict[str, Any]:
    """Per-domain paired deltas with CIs, the mean's, and the domains that regressed."""
    deltas = {d: paired_bootstrap(before.items[d], after.items[d], seed=seed)
              for d in before.items}
    regressed = sorted(d for d, v in deltas.items() if v["ci95"][1] < 0)
    return {"domains": deltas, "mean": mean_bootstrap(before, after, seed=seed),
            "regressed": regressed}
