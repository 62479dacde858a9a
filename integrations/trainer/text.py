"""Text and model plumbing shared by the local trainer's warm-up, GRPO and held-out evaluation.

Three things every stage must agree on:

* **Prompts.** A task is rendered exactly as :class:`rlhub.policy.local.LocalCausalLM` renders it
  (the tokenizer's chat template, ``<bos>`` included), so a trained model served with
  ``--policy hf:RUN_DIR/model`` sees the prompts it was trained on.
* **Positions.** Prompts of different lengths are left-padded. ``generate`` derives position ids
  from the attention mask, but TRL's loss forward passes only ``input_ids`` and ``attention_mask``,
  and GPT-2 then counts the pads as positions: the gradient would be taken for a different policy
  than the one that sampled. :func:`attach_mask_positions` makes every forward without explicit
  ``position_ids`` derive them from the mask (``cumsum(mask) - 1``), so padded and unpadded rows
  get identical log-probabilities in sampling, warm-up and loss alike.
* **Per-row temperature.** TRL samples and scores a batch at one temperature. The trainer's
  controls give each domain its own, so :class:`RowTemperature` divides the final hidden state of
  row ``i`` by ``t_i``; the LM head has no bias, so this is exactly ``logits / t_i`` for sampling
  and for the loss (TRL's own temperature stays 1).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from rlhub.errors import TrainerError
from rlhub.rollout import initial_messages
from rlhub.task import Task


def load_saved(path: str | os.PathLike[str]) -> tuple[Any, Any]:
    """``(model, tokenizer)`` saved by an earlier run (``RUN_DIR/model``), ready to train on."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = Path(path)
    if not (where / "config.json").is_file():
        raise TrainerError(f"train.init_model: expected a saved model folder (RUN_DIR/model of "
                           f"an earlier run) with config.json, found {where}")
    tokenizer = AutoTokenizer.from_pretrained(where)
    tokenizer.padding_side, tokenizer.truncation_side = "left", "left"
    return AutoModelForCausalLM.from_pretrained(where).eval(), tokenizer


def render_prompt(tokenizer: Any, task: Task, budget: int | None = None) -> str:
    """The prompt text of ``task``, chat template and ``<bos>`` included, within ``budget``
    tokens (:func:`fit_prompt`)."""
    text = tokenizer.apply_chat_template(initial_messages(task), tokenize=False,
                                         add_generation_prompt=True)
    return fit_prompt(tokenizer, text, budget)


def context_size(model: Any) -> int | None:
    """The positions ``model`` can attend over (None when its config does not say)."""
    config = getattr(model, "config", None)
    return getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)


def prompt_budget(model: Any, completion_tokens: int) -> int | None:
    """The tokens a prompt may take so that ``completion_tokens`` more still fit ``model``."""
    size = context_size(model)
    return None if size is None else max(1, size - completion_tokens)


def fit_prompt(tokenizer: Any, text: str, budget: int | None) -> str:
    """``text`` if it fits ``budget`` tokens, else its first quarter and its end (the template's
    opening and the generation prompt kept), the middle left out: a repository prompt longer
    than a small model's context is still played, not a crash in the position embedding."""
    if budget is None:
        return text
    ids = encode(tokenizer, [text])[0]
    keep = budget
    while len(ids) > budget:
        head = keep // 4
        fitted = tokenizer.decode(ids[:head]) + tokenizer.decode(ids[len(ids) - (keep - head):])
        over = len(encode(tokenizer, [fitted])[0]) - budget
        if over <= 0 or keep <= 1:
            return fitted
        keep -= over  # decoding and encoding again may split the text into other tokens
    return text


def encode(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of already rendered texts (special tokens are in the text, none are added)."""
    return tokenizer(list(texts), add_special_tokens=False)["input_ids"]


def left_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, mask)`` with every row right-aligned, as generation expects."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row):] = torch.tensor(row, dtype=torch.long)
            mask[i, width - len(row):] = 1
    return ids, mask


def mask_positions(attention_mask: torch.Tensor, length: int) -> torch.Tensor:
    """Position ids of the last ``length`` columns: the count of real tokens before each one."""
    positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    return positions[:, -length:]


def attach_mask_positions(model: Any) -> Any:
    """Make ``model(...)`` derive missing ``position_ids`` from ``attention_mask`` (idempotent)."""
    if getattr(model, "_rlhub_mask_positions", False):
        return model

    def hook(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask")
        if kwargs.get("position_ids") is None and ids is not None and mask is not None:
            kwargs["position_ids"] = mask_positions(mask, ids.shape[1])
        return args, kwargs

    model.register_forward_pre_hook(hook, with_kwargs=True)
    model._rlhub_mask_positions = True
    return model


class RowTemperature:
    """Per-row sampling temperature for a GPT-2 style model (see the module docstring)."""

    def __init__(self, model: Any):
        head = model.get_output_embeddings()
        if getattr(head, "bias", None) is not None:
            raise ValueError(f"per-row temperature needs an LM head without bias, found "
                             f"{type(head).__name__} with a bias")
        self.values: torch.Tensor | None = None
        final_norm = model.base_model.ln_f
        final_norm.register_forward_hook(self._scale)

    def _scale(self, module: Any, args: Any, output: torch.Tensor) -> torch.Tensor:
        if self.values is None:
            return output
        if output.shape[0] != self.values.shape[0]:
            raise RuntimeError(f"row temperatures: expected a batch of {self.values.shape[0]} "
                               f"rows, found {output.shape[0]}")
        return output / self.values.to(output.dtype).view(-1, 1, 1)

    @contextmanager
    def using(self, values: Sequence[float] | torch.Tensor | None) -> Iterator[None]:
        """Apply ``values`` (one temperature per row) to every forward inside the block."""
        previous = self.values
        self.values = None if values is None else torch.as_tensor(values, dtype=torch.float32)
        try:
            yield
        finally:
            self.values = previous


@torch.no_grad()
def sample_texts(model: Any, tokenizer: Any, prompts: Sequence[str], *, temperature: float,
                 max_new_tokens: int, batch_size: int = 512) -> list[str]:
    """One completion per prompt (greedy when ``temperature`` is 0), cut at ``<eos>``."""
    out: list[str] = []
    ids = encode(tokenizer, prompts)
    for start in range(0, len(ids), batch_size):
        chunk, mask = left_pad(ids[start:start + batch_size], tokenizer.pad_token_id)
        sampling = ({"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
                    if temperature > 0 else {"do_sample": False})
        gen = model.generate(input_ids=chunk, attention_mask=mask, max_new_tokens=max_new_tokens,
                             pad_token_id=tokenizer.pad_token_id,
                             eos_token_id=tokenizer.eos_token_id, **sampling)
        out += tokenizer.batch_decode(_cut_at_eos(gen[:, chunk.shape[1]:], tokenizer),
                                      skip_special_tokens=True)
    return out


def _cut_at_eos(new: torch.Tensor, tokenizer: Any) -> list[list[int]]:
    rows = []
    for row in new.tolist():
        if tokenizer.eos_token_id in row:
            row = row[:row.index(tokenizer.eos_token_id)]
        rows.append(row)
    return rows
