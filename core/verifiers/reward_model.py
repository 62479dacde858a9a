"""The ``reward-model`` verifier: a transformers sequence-classification model as a reward.

Options (the checkpoint comes from ``path`` in a trusted manifest, else from the user's
``reward-model`` endpoint named by ``endpoint``, else the user's default; see
:mod:`rlhub.verifiers.targets`; the endpoint's settings win over the options)::

    path: /models/my-rm        # trusted only: a local save_pretrained directory (model + tokenizer)
    endpoint: rm               # a reward-model endpoint of the user's config
    device: auto               # auto (cuda when available), cpu, cuda, cuda:1, ...
    dtype: null                # e.g. bfloat16 on GPU; default: the checkpoint's
    batch_size: 16             # most sequences per forward pass
    max_wait_ms: 5             # how long a call waits for company before its batch runs
    max_length: 1024           # tokens per sequence (longer inputs are truncated)
    label: null                # which logit is the reward (default: the only one, or the last)
    mapping: {kind: sigmoid}   # sigmoid (with scale, shift), affine (scale * x + shift, clipped
                               # to [0, 1]) or clip ({lo, hi}: (x - lo) / (hi - lo), clipped)
    chat_template: auto        # auto: use the tokenizer's chat template when it has one
    pass_threshold: 0.5
    component: reward_model

Components: ``<component>`` (the mapped score in [0, 1]) and ``<component>_logit`` (the raw
logit; declare a range for it to log it unclamped). The input is the conversation (the task's
prompt as the user turn, the completion as the assistant turn) rendered with the tokenizer's chat
template, or else the tokenizer's text-pair encoding of (prompt, completion).

One :class:`ScoringService` per (path, device, dtype, max_length) is shared by every verifier in
the process. It micro-batches: concurrent ``check`` calls (the server and the rollout loop verify
from thread pools) are queued, and a worker thread runs them together, up to ``batch_size`` at a
time, sorted by length to limit padding.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from rlhub.domain import Verdict
from rlhub.errors import VerifierError
from rlhub.task import Task

MAPPINGS = ("sigmoid", "affine", "clip")


@dataclass(frozen=True)
class Mapping:
    """How a raw logit becomes a score in [0, 1]."""

    kind: str = "sigmoid"
    scale: float = 1.0
    shift: float = 0.0
    lo: float = -1.0
    hi: float = 1.0

    @classmethod
    def parse(cls, raw: Any) -> Mapping:
        raw = {"kind": raw} if isinstance(raw, str) else dict(raw or {})
        if raw.get("kind", "sigmoid") not in MAPPINGS:
            raise VerifierError(f"reward-model: expected mapping.kind in {'|'.join(MAPPINGS)}, "
                                f"found {raw.get('kind')!r}")
        unknown = sorted(set(raw) - {"kind", "scale", "shift", "lo", "hi"})
        if unknown:
            raise VerifierError(f"reward-model: unknown mapping keys {unknown}; expected kind, "
                                "scale, shift, lo, hi")
        mapping = cls(**{k: (v if k == "kind" else float(v)) for k, v in raw.items()})
        if mapping.kind == "clip" and not mapping.lo < mapping.hi:
            raise VerifierError(f"reward-model: clip mapping needs lo < hi, found "
                                f"{mapping.lo} and {mapping.hi}")
        return mapping

    def __call__(self, x: float) -> float:
        if not math.isfinite(x):
            return 0.0 if math.isnan(x) or x < 0 else 1.0
        if self.kind == "sigmoid":
            z = self.scale * x + self.shift
            return 1.0 / (1.0 + math.exp(-z)) if z >= -700 else 0.0
        if self.kind == "affine":
            y = self.scale * x + self.shift
        else:
            y = (x - self.lo) / (self.hi - self.lo)
        return min(1.0, max(0.0, y))


@dataclass
class _Job:
    prompt: str
    completion: str
    future: Future[float]


class ScoringService:
    """A loaded model and the worker thread that scores queued jobs in batches."""

    def __init__(self, path: str, device: str, dtype: str | None, max_length: int,
                 batch_size: int, max_wait_s: float, label: int | None, chat: str):
        self.model, self.tokenizer, self.device = _load(path, device, dtype)
        self.max_length, self.batch_size, self.max_wait_s = max_length, batch_size, max_wait_s
        n_labels = int(self.model.config.num_labels)
        self.label = n_labels - 1 if label is None else int(label)
        if not 0 <= self.label < n_labels:
            raise VerifierError(f"reward-model {path}: expected label in [0, {n_labels - 1}], "
                                f"found {label}")
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        self.use_chat = has_template if chat == "auto" else chat == "yes"
        self.batches: list[int] = []  # size of every batch run, for inspection
        self._queue: queue.Queue[_Job] = queue.Queue()
        self._worker = threading.Thread(target=self._loop, name=f"rlhub-rm-{path}", daemon=True)
        self._worker.start()

    def score(self, prompt: str, completion: str) -> float:
        """The raw logit for (prompt, completion); blocks until its batch has run."""
        job = _Job(prompt, completion, Future())
        self._queue.put(job)
        return job.future.result()

    def _loop(self) -> None:
        while True:
            jobs = [self._queue.get()]
            deadline = time.monotonic() + self.max_wait_s
            while len(jobs) < self.batch_size:
                try:
                    jobs.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            self._run(jobs)

    def _run(self, jobs: list[_Job]) -> None:
        self.batches.append(len(jobs))
        try:
            logits = self.forward([(j.prompt, j.completion) for j in jobs])
        except Exception as exc:  # noqa: BLE001 - handed to every waiting caller
            for job in jobs:
                job.future.set_exception(exc)
            return
        for job, value in zip(jobs, logits):
            job.future.set_result(value)

    def forward(self, pairs: list[tuple[str, str]]) -> list[float]:
        """Raw logits of the reward label for a batch of (prompt, completion) pairs."""
        import torch

        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out = [0.0] * len(pairs)
        with torch.inference_mode():
            enc = self._encode([pairs[i] for i in order]).to(self.device)
            logits = self.model(**enc).logits.float()[:, self.label].cpu().tolist()
        for i, value in zip(order, logits):
            out[i] = float(value)
        return out

    def _encode(self, pairs: list[tuple[str, str]]) -> Any:
        tok = self.tokenizer
        common = {"padding": True, "truncation": True, "max_length": self.max_length,
                  "return_tensors": "pt"}
        if self.use_chat:
            texts = [tok.apply_chat_template([{"role": "user", "content": p},
                                              {"role": "assistant", "content": c}],
                                             tokenize=False) for p, c in pairs]
            return tok(texts, **common)
        return tok([p for p, _ in pairs], [c for _, c in pairs], **common)


def _load(path: str, device: str, dtype: str | None) -> tuple[Any, Any, str]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    kwargs = {"dtype": getattr(torch, dtype)} if dtype else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSequenceClassification.from_pretrained(path, **kwargs)
    except (OSError, ValueError) as exc:
        raise VerifierError(f"reward-model: expected a local save_pretrained directory with a "
                            f"sequence-classification model and its tokenizer at {path!r}: "
                            f"{exc}") from exc
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    if model.config.pad_token_id is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    return model.to(device).eval(), tokenizer, device


_SERVICES: dict[tuple[Any, ...], ScoringService] = {}
_SERVICES_LOCK = threading.Lock()


def service(path: str, *, device: str = "auto", dtype: str | None = None, max_length: int = 1024,
            batch_size: int = 16, max_wait_s: float = 0.005, label: int | None = None,
            chat: str = "auto") -> ScoringService:
    """The process's scoring service for this model, loaded on first use."""
    key = (path, device, dtype, max_length, batch_size, max_wait_s, label, chat)
    with _SERVICES_LOCK:
        if key not in _SERVICES:
            _SERVICES[key] = ScoringService(path, device, dtype, max_length, batch_size,
                                            max_wait_s, label, chat)
        return _SERVICES[key]


def _chat_choice(value: Any) -> str:
    if value == "auto" or isinstance(value, bool):
        return "auto" if value == "auto" else ("yes" if value else "no")
    raise VerifierError(f"reward-model: expected chat_template auto, true or false, "
                        f"found {value!r}")


class RewardModel:
    """The ``reward-model`` verifier (see the module docstring). The model loads on first check."""

    def __init__(self, options: dict[str, Any]):
        from rlhub.userconfig import ConfigError
        from rlhub.verifiers.targets import reward_model_options

        try:
            options = reward_model_options(options)
        except ConfigError as exc:
            raise VerifierError(str(exc)) from None
        if not isinstance(options.get("path"), str) or not options["path"]:
            raise VerifierError("reward-model: expected options.path, a local model directory, "
                                f"found {options.get('path')!r}")
        self.options = dict(options)
        self.mapping = Mapping.parse(options.get("mapping"))
        self.threshold = float(options.get("pass_threshold", 0.5))
        self.component = str(options.get("component", "reward_model"))

    def service(self) -> ScoringService:
        o = self.options
        return service(o["path"], device=str(o.get("device", "auto")), dtype=o.get("dtype"),
                       max_length=int(o.get("max_length", 1024)),
                       batch_size=int(o.get("batch_size", 16)),
                       max_wait_s=float(o.get("max_wait_ms", 5)) / 1000.0,
                       label=o.get("label"), chat=_chat_choice(o.get("chat_template", "auto")))

    def check(self, task: Task, completion: str) -> Verdict:
        logit = self.service().score(task.prompt_text(), completion)
        value = self.mapping(logit)
        passed = value >= self.threshold
        feedback = "" if passed else (f"A reward model rated this answer {value:.2f} (at least "
                                      f"{self.threshold:g} passes).")
        return Verdict({self.component: value, f"{self.component}_logit": logit}, passed, feedback)
