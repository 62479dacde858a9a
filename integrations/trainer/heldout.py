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

import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from rlhub.integrations.trainer.text import prompt_budget, render_prompt, sample_texts
from rlhub.task import Score, Task


Key = tuple[str, str]


class ScoreCache:
    """Verdicts of ``(task id, completion)`` pairs for deterministic domains (bounded LRU).

    A verdict whose failure is not the model's (:mod:`rlhub.failures`: the sandbox, verifier or
    judge failed) is retried up to ``retries`` times, after ``backoff_s``, doubling each round; one
    that still fails is returned as it is, counted in :attr:`retried`, and never cached.
    """

    def __init__(self, domains: dict[str, Any], size: int = 200_000, workers: int = 4, *,
                 retries: int = 2, backoff_s: float = 0.2,
                 sleep: Callable[[float], None] = time.sleep):
        self.domains = domains
        self.size = size
        self.workers = workers
        self.retries, self.backoff_s, self.sleep = retries, backoff_s, sleep
        self.retried: dict[str, int] = {}
        self._scores: OrderedDict[Key, Score] = OrderedDict()

    def scores(self, tasks: list[Task], completions: list[str]) -> list[Score]:
        """One score per (task, completion); each distinct pair is verified once.

        Hits are taken (and made most recent) before any new verdict is stored, so storing one
        can never evict a verdict this batch still needs.
        """
        keys = [(t.id, c) for t, c in zip(tasks, completions)]
        known = {k: self._hit(k) for k in keys if k in self._scores}
        todo = {k: (t, c) for k, t, c in zip(keys, tasks, completions) if k not in known}
        fresh = self._verify_with_retries(todo) if todo else {}
        for key, score in fresh.items():
            self._remember(key, score, todo[key][0])
        return [known[k] if k in known else fresh[k] for k in keys]

    def _hit(self, key: Key) -> Score:
        self._scores.move_to_end(key)
        return self._scores[key]

    def _verify_with_retries(self, todo: dict[Key, tuple[Task, str]]) -> dict[Key, Score]:
        fresh = self._verify_all(todo)
        for attempt in range(self.retries):
            again = {k: todo[k] for k, score in fresh.items() if not score.trainable}
            if not again:
                break
            self.sleep(self.backoff_s * 2 ** attempt)
            for task, _ in again.values():
                self.retried[task.domain] = self.retried.get(task.domain, 0) + 1
            fresh.update(self._verify_all(again))
        return fresh

    def _verify_all(self, todo: dict[Key, tuple[Task, str]]) -> dict[Key, Score]:
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return dict(zip(todo, pool.map(lambda tc: self._verify(*tc), todo.values())))

    def _verify(self, task: Task, completion: str) -> Score:
        return self.domains[task.domain].verify(task, completion)

    def _remember(self, key: Key, score: Score, task: Task) -> None:
        """Keep the verdict when the domain is deterministic (``determinism: seeded``) and the
        verdict is the model's own outcome (a fault is verified again next time)."""
        if not score.trainable:
            return
        if self.domains[task.domain].manifest.data.get("determinism", "seeded") != "seeded":
            return
        self._scores[key] = score
        if len(self._scores) > self.size:
            self._scores.popitem(last=False)


@dataclass
class HeldOutResult:
    """Per-domain, per-item mean rewards (items in held-out order) and the scoring settings.

    An item's mean covers its samples whose outcome was the model's own; samples lost to a fault
    that persisted through the retries are counted in ``failures`` and the item is NaN when
    none of its samples was scored.
    """

    items: dict[str, list[float]]
    temperature: float
    samples: int
    failures: dict[str, int] = field(default_factory=dict)

    def scores(self) -> dict[str, float | None]:
        """Each domain's mean over its scored items; None when no sample of it was scored."""
        return {d: _finite_mean(v) for d, v in self.items.items()}

    def mean(self) -> float | None:
        return _finite_mean([v for v in self.scores().values() if v is not None])

    def as_dict(self) -> dict[str, Any]:
        """Plain data: settings, faults, and per-item means (None for an item never scored)."""
        items = {d: [x if np.isfinite(x) else None for x in v] for d, v in self.items.items()}
        return {"temperature": self.temperature, "samples": self.samples,
                "failures": dict(self.failures), "items": items}

    def scored(self, domain: str) -> int:
        """How many samples of ``domain`` were the model's own outcomes."""
        return len(self.items[domain]) * self.samples - self.failures.get(domain, 0)


def _finite_mean(values: Any) -> float | None:
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.mean()) if finite.size else None


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
        budget = prompt_budget(model, self.max_new_tokens)
        prompts = [render_prompt(tokenizer, t, budget) for t in flat]
        with torch.random.fork_rng():
            torch.manual_seed(self.seed)
            texts = sample_texts(model, tokenizer, prompts, temperature=temperature,
                                 max_new_tokens=self.max_new_tokens)
        rewards = np.array([s.reward if s.trainable else np.nan
                            for s in self.cache.scores(flat, texts)])
        out, failures, at = {}, {}, 0
        for domain, ts in chosen.items():
            block = rewards[at:at + len(ts) * samples].reshape(len(ts), samples)
            scored = np.isfinite(block)
            sums = np.where(scored, block, 0.0).sum(axis=1)
            counts = scored.sum(axis=1)
            out[domain] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).tolist()
            failures[domain] = int(block.size - scored.sum())
            at += len(ts) * samples
        return HeldOutResult(out, temperature, samples, failures)


def _pairs(before: list[float], after: list[float]) -> np.ndarray:
    """``after - before`` per item, over the items scored in both."""
    diff = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    return diff[np.isfinite(diff)]


def paired_bootstrap(before: list[float], after: list[float], *, seed: int = 0,
                     resamples: int = 2000) -> dict[str, Any]:
    """Mean paired difference ``after - before`` over items with its 95% bootstrap interval.

    Items not scored on both sides (every sample a fault) are left out; with none left the
    delta and interval are None.
    """
    if len(before) == 0:
        raise ValueError("paired_bootstrap: expected at least one item, found none")
    diff = _pairs(before, after)
    if diff.size == 0:
        return {"delta": None, "ci95": None, "items": 0}
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, (resamples, diff.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"delta": float(diff.mean()), "ci95": [float(lo), float(hi)], "items": int(diff.size)}


def mean_bootstrap(before: HeldOutResult, after: HeldOutResult, *, seed: int = 0,
                   resamples: int = 2000) -> dict[str, Any]:
    """The paired change of the domain-averaged score, resampling items within each domain."""
    rng = np.random.default_rng(seed)
    diffs = [d for d in (_pairs(b, after.items[k]) for k, b in before.items.items()) if d.size]
    if not diffs:
        return {"delta": None, "ci95": None}
    means = np.mean([d[rng.integers(0, d.size, (resamples, d.size))].mean(axis=1)
                     for d in diffs], axis=0)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"delta": float(np.mean([d.mean() for d in diffs])), "ci95": [float(lo), float(hi)]}


def compare(before: HeldOutResult, after: HeldOutResult, seed: int = 0) -> dict[str, Any]:
    """Per-domain paired deltas with CIs, the mean's, and the domains that regressed."""
    deltas = {d: paired_bootstrap(before.items[d], after.items[d], seed=seed)
              for d in before.items}
    regressed = sorted(d for d, v in deltas.items() if v["ci95"] and v["ci95"][1] < 0)
    return {"domains": deltas, "mean": mean_bootstrap(before, after, seed=seed),
            "regressed": regressed}
