"""``hf:PATH`` and ``builtin:tiny``: a local transformers causal LM on CPU (or a GPU if present).

Prompts are rendered with the tokenizer's chat template when it has one, otherwise as
``role: content`` lines ending in ``assistant: `` (:func:`rlhub.policy.tiny.chat_prompt`). Long
prompts are truncated from the left so that prompt plus ``max_tokens`` fits the context window.
Concurrent requests are merged by a :class:`~rlhub.policy.batching.MicroBatcher`; one model call
runs at a time. Option ``threads`` sets torch's (process-wide) intra-op thread count; the tiny
model defaults to 1, which on a busy 2-core machine is several times faster than 2. With ``seed`` set, sampling is reproducible for the same batch composition.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

from rlhub.errors import PolicyError
from rlhub.policy.batching import MicroBatcher
from rlhub.policy.protocol import Conversation, Generation
from rlhub.policy.tiny import chat_prompt

DEFAULTS: dict[str, Any] = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 64}


class LocalCausalLM:
    """A transformers causal LM behind the policy protocol (see the module docstring)."""

    def __init__(self, model: Any, tokenizer: Any, *, spec: str, name: str,
                 defaults: dict[str, Any] | None = None, max_batch: int = 16,
                 source: str = "", threads: int | None = None):
        from transformers.utils import logging as hf_logging

        if threads:
            import torch

            torch.set_num_threads(int(threads))  # process-wide; small models run best on 1
        hf_logging.set_verbosity_error()  # generate()'s padding advice is noise here
        self.model = model
        self.tokenizer = tokenizer
        self.spec = spec
        self.name = name
        self.source = source
        self.defaults = {**DEFAULTS, **(defaults or {})}
        self._lock = threading.Lock()
        self._batcher = MicroBatcher(self._generate_sync, max_batch=max_batch)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
        tokenizer.truncation_side = "left"

    @classmethod
    def from_pretrained(cls, path: str, *, spec: str | None = None, **options: Any) -> LocalCausalLM:
        """Load ``path`` (a directory or a Hub id already in the local cache)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path).eval()
        except (OSError, ValueError) as exc:
            raise PolicyError(f"hf:{path}: expected a transformers causal LM directory, "
                              f"could not load it: {exc}") from exc
        return cls(model, tokenizer, spec=spec or f"hf:{path}", name=Path(path).name or path,
                   source=str(path), **_split_options(options))

    # -- protocol ---------------------------------------------------------------------------

    async def generate(self, messages_batch: list[Conversation], **sampling: Any) -> list[str]:
        results = await self.generate_detailed(messages_batch, **sampling)
        failed = [g.error for g in results if g.error]
        if failed:
            raise PolicyError(f"{self.spec}: generation failed: {failed[0]}")
        return [g.text or "" for g in results]

    async def generate_detailed(self, messages_batch: list[Conversation],
                                **sampling: Any) -> list[Generation]:
        merged = {**self.defaults, **{k: v for k, v in sampling.items() if v is not None}}
        return await self._batcher.submit(list(messages_batch), merged)

    def info(self) -> dict[str, Any]:
        cfg = self.model.config.to_json_string(use_diff=False)
        return {"spec": self.spec, "model": self.name, "source": self.source,
                "parameters": sum(p.numel() for p in self.model.parameters()),
                "config_sha256": hashlib.sha256(cfg.encode()).hexdigest()}

    # -- generation -------------------------------------------------------------------------

    def prompt_text(self, messages: Conversation) -> str:
        """The prompt string for ``messages`` (chat template, or ``role: content`` lines)."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                      add_generation_prompt=True)
        return chat_prompt(messages)

    def context_size(self) -> int:
        cfg = self.model.config
        for attr in ("n_positions", "max_position_embeddings"):
            value = getattr(cfg, attr, None)
            if isinstance(value, int) and value > 0:
                return value
        return 2048

    def _generate_sync(self, convs: list[Conversation], sampling: dict[str, Any]) -> list[Generation]:
        import torch

        start = time.perf_counter()
        max_new = max(1, int(sampling.get("max_tokens") or DEFAULTS["max_tokens"]))
        budget = max(1, self.context_size() - max_new)
        templated = bool(getattr(self.tokenizer, "chat_template", None))
        enc = self.tokenizer([self.prompt_text(c) for c in convs], return_tensors="pt",
                             padding=True, truncation=True, max_length=budget,
                             add_special_tokens=not templated)
        with self._lock, torch.no_grad():
            if sampling.get("seed") is not None:
                torch.manual_seed(int(sampling["seed"]))
            out = self.model.generate(**enc, generation_config=self._config(sampling, max_new))
        new = out[:, enc["input_ids"].shape[1]:]
        elapsed = (time.perf_counter() - start) / max(1, len(convs))
        return [self._decode(row, sampling.get("stop") or [], elapsed,
                             int(enc["attention_mask"][i].sum())) for i, row in enumerate(new)]

    def _config(self, sampling: dict[str, Any], max_new: int) -> Any:
        from transformers import GenerationConfig

        tok = self.tokenizer
        kw: dict[str, Any] = {"max_new_tokens": max_new, "pad_token_id": tok.pad_token_id,
                              "eos_token_id": tok.eos_token_id}
        temperature = float(sampling.get("temperature") or 0.0)
        if temperature > 0:
            kw.update(do_sample=True, temperature=temperature, top_k=0,
                      top_p=float(sampling.get("top_p") or 1.0))
        else:
            kw.update(do_sample=False)
        return GenerationConfig(**kw)

    def _decode(self, row: Any, stop: list[str], latency: float, prompt_tokens: int) -> Generation:
        ids = row.tolist()
        eos = self.tokenizer.eos_token_id
        finish = "length"
        if eos in ids:
            ids, finish = ids[: ids.index(eos)], "stop"
        pad = self.tokenizer.pad_token_id
        ids = [i for i in ids if i != pad] if pad != eos else ids
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        for s in stop:
            if s and s in text:
                text, finish = text[: text.index(s)], "stop"
        return Generation(text, finish_reason=finish, latency_s=latency,
                          prompt_tokens=prompt_tokens, completion_tokens=len(ids))


def _split_options(options: dict[str, Any]) -> dict[str, Any]:
    """Constructor keyword arguments from policy options: sampling defaults and ``max_batch``."""
    from rlhub.policy.protocol import sampling_from

    out: dict[str, Any] = {"defaults": sampling_from(options)}
    for key in ("max_batch", "threads"):
        if options.get(key):
            out[key] = int(options[key])
    return out
