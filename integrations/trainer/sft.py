"""The warm-up: a short supervised pass on gold completions before GRPO.

GRPO only sharpens what the policy already samples: a domain whose sampled pass rate is near zero
gives no group any reward variance and so no gradient. A few hundred steps of teacher forcing on
each domain's ``gold`` completions (train split) lift every domain off zero. The loss covers the
completion and its ``<eos>`` only; prompts are rendered and left-padded exactly as GRPO sees them.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from rlhub.errors import TrainerError
from rlhub.integrations.trainer.text import context_size, encode, left_pad, render_prompt
from rlhub.task import Task


@dataclass
class WarmupResult:
    """What the warm-up did: optimizer steps, examples seen, final loss, seconds, and whether
    the time guard stopped it before its steps were done."""

    steps: int
    examples: int
    loss: float | None
    seconds: float
    guard_hit: bool = False


def gold_stream(domains: dict[str, Any], seed: int, weights: dict[str, float]) -> Iterator[Task]:
    """An endless stream of train tasks with gold completions, domains drawn by ``weights``.

    Domains whose manifest says ``gold: false`` (games, judged domains) have nothing to imitate
    and sit the warm-up out; GRPO trains them.
    """
    rng = random.Random(f"warmup/{seed}")
    ids = [d for d in domains if weights.get(d, 0) > 0 and domains[d].manifest.data["gold"]]
    if not ids:
        raise TrainerError("warm-up: expected a domain with gold completions (manifest gold: "
                           f"true) in the mixture, found none among {sorted(domains)}")
    cursors = dict.fromkeys(ids, 0)
    while True:
        domain_id = rng.choices(ids, [weights[d] for d in ids])[0]
        task = domains[domain_id].task("train", seed, cursors[domain_id])
        cursors[domain_id] += 1
        if task.gold is None:
            raise TrainerError(f"warm-up: expected a gold completion for every task of "
                               f"{domain_id}, found none for {task.id}; give it weight 0 in "
                               "train.warmup.weights or drop the domain")
        yield task


def batch_tensors(tokenizer: Any, tasks: list[Task],
                  context: int | None = None) -> dict[str, torch.Tensor]:
    """Left-padded ``input_ids``/``attention_mask`` and ``labels`` (-100 outside completions);
    a row longer than the model's ``context`` keeps its last ``context`` tokens (the gold's
    end, and as much of its prompt as fits)."""
    prompts = encode(tokenizer, [render_prompt(tokenizer, t) for t in tasks])
    golds = encode(tokenizer, [t.gold or "" for t in tasks])
    rows = [(p + g + [tokenizer.eos_token_id])[-(context or 0):] for p, g in zip(prompts, golds)]
    ids, mask = left_pad(rows, tokenizer.pad_token_id)
    labels = torch.full_like(ids, -100)
    for i, (gold, row) in enumerate(zip(golds, rows)):
        n = min(len(gold) + 1, len(row))
        labels[i, -n:] = ids[i, -n:]
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def warm_up(model: Any, tokenizer: Any, stream: Iterator[Task], *, steps: int, lr: float,
            batch_size: int, max_seconds: float = float("inf"),
            log: Callable[[int, float], None] | None = None) -> WarmupResult:
    """``steps`` AdamW steps on gold completions; the model is left in eval mode.

    ``max_seconds`` is a guard: past it the warm-up stops early and says so (``guard_hit``).
    """
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    start = time.perf_counter()
    done = 0
    loss_value: float | None = None
    while done < steps and time.perf_counter() - start < max_seconds:
        batch = batch_tensors(tokenizer, list(itertools.islice(stream, batch_size)),
                              context_size(model))
        loss = model(**batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        done += 1
        loss_value = float(loss.detach())
        if log is not None and done % 25 == 0:
            log(done, loss_value)
    model.eval()
    return WarmupResult(done, done * batch_size, loss_value, time.perf_counter() - start,
                        guard_hit=done < steps)
