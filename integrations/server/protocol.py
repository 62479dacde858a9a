"""OpenRLHF's remote reward protocol, as 0.11.2 sends it, and the server's fixed answer schema.

OpenRLHF posts one sample per request on a fresh connection::

    {"query": [prompt + response], "prompts": [prompt], "labels": [label]}

``query`` is ``tokenizer.decode(prompt_ids + response_ids, skip_special_tokens=False)``. The
response is what follows ``prompts[i]`` in ``query[i]``: an exact prefix, or else a prefix that
differs only in whitespace (decoding is not the inverse of encoding: a tokenizer may clean up
spaces before punctuation, ``" ,"`` -> ``","``, or add one after a special token,
``"<s> [INST]"``). When the prompt is not a prefix even so (OpenRLHF left-truncates prompts that
do not fit ``--data.max_len``) the sample is *not* verified: it gets the domain's minimum reward
with ``prompt_mismatch = 1``, ``error = 1`` and failure class ``label``, so the problem shows in
the logs instead of as a silently wrong reward. Trailing end-of-turn tokens (``<|im_end|>``,
``</s>``, ...) are then stripped from the response.

A label is a JSON string (what ``rlhub export`` writes) or an object: ``{"domain": ID, "task":
{...}}`` with the task as :meth:`rlhub.Task.to_dict` gives it, plus the coordinates ``at`` or a
signature ``sig`` the server checks (:mod:`rlhub.labels`): the server verifies only tasks it can
re-derive or has signed.

The answer always carries ``rewards`` and ``scores`` of ``len(query)`` floats and ``extra_logs``
with exactly the keys of :data:`LOG_KEYS`, one float per sample, for every domain (OpenRLHF's
replay buffer raises when samples of one micro-batch carry different keys or non-numbers).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from rlhub import errors, labels
from rlhub.failures import FAILURES, is_trainable
from rlhub.task import Score, Task

#: Trailing special tokens removed from a response before verification (``--strip-token``).
DEFAULT_STRIP_TOKENS = ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>", "<|end|>",
                        "<end_of_turn>", "<|end_of_text|>", "<eos>")

#: The ``extra_logs`` keys of every answer, in order, each a float per sample:
#:
#: - ``passed``: 1 when the verifier accepted the completion;
#: - ``format_ok``: the domain's ``format`` (or ``valid_json``/``valid``) component when it declares
#:   one, else equal to ``passed``;
#: - ``repair_turns``: failed attempts before the last one (always 0 for single-turn rewards);
#: - ``verify_ms``: verification wall time in milliseconds;
#: - ``error``: 1 when the label was malformed, the prompt did not match, or verification failed;
#: - ``prompt_mismatch``: 1 when ``prompts[i]`` was not a prefix of ``query[i]``;
#: - ``retries``: attempts repeated for this sample after an infrastructure failure or a dropped
#:   connection (by the server, or by the OpenRLHF agent module);
#: - ``trainable``: 1 when the reward is the model's own outcome (failure class ``none``,
#:   ``answer`` or ``timeout``, see :mod:`rlhub.failures`), 0 when it is a fault of rlhub;
#: - ``failure_<class>``: 1 for the sample's failure class, one key per class of
#:   :data:`rlhub.failures.FAILURES` (exactly one of them is 1).
FAILURE_KEYS = tuple(f"failure_{name}" for name in FAILURES)
LOG_KEYS = ("passed", "format_ok", "repair_turns", "verify_ms", "error", "prompt_mismatch",
            "retries", "trainable", *FAILURE_KEYS)
FORMAT_COMPONENTS = ("format", "valid_json", "valid")
_log_row = operator.itemgetter(*LOG_KEYS)  # one sample's extra_logs values, in LOG_KEYS order


class LabelError(ValueError):
    """A label that does not carry a domain id and a task."""


@dataclass
class Sample:
    """One reward request item, decoded: where it goes and what to verify."""

    domain: str | None
    task: Task | None
    response: str
    problem: str | None = None
    prompt_mismatch: bool = False


@dataclass
class Outcome:
    """The verdict on one sample, ready to be placed into the answer.

    Its fields stay typed (the failure class a string) until :meth:`extra_logs` writes them as
    the floats of :data:`LOG_KEYS`, once, for the answer.
    """

    reward: float
    score: float
    failure_class: str
    error: str | None = None
    passed: bool = False
    format_ok: float = 0.0
    verify_ms: float = 0.0
    retries: int = 0
    prompt_mismatch: bool = False

    @classmethod
    def failure(cls, reward: float, error: str, failure: str, *,
                prompt_mismatch: bool = False) -> Outcome:
        return cls(reward, 0.0, failure, error, prompt_mismatch=prompt_mismatch)

    def extra_logs(self) -> dict[str, float]:
        """This sample's ``extra_logs`` values (:data:`LOG_KEYS`)."""
        return failure_logs(self.failure_class, passed=float(self.passed),
                            format_ok=self.format_ok, verify_ms=self.verify_ms,
                            error=float(self.error is not None),
                            prompt_mismatch=float(self.prompt_mismatch),
                            retries=float(self.retries))


def failure_logs(failure: str, **values: float) -> dict[str, float]:
    """``extra_logs`` values with exactly :data:`LOG_KEYS`: ``values``, 0 elsewhere, and the keys
    of failure class ``failure`` (``trainable`` and its one-hot ``failure_<class>``)."""
    logs = {key: float(values.get(key, 0.0)) for key in LOG_KEYS}
    logs["trainable"] = float(is_trainable(failure))
    logs[f"failure_{failure}"] = 1.0
    return logs


def parse_label(label: Any) -> tuple[str, Task]:
    """``(domain id, task)`` from a label (JSON string or dict); raise :class:`LabelError`.

    This only reads the label; whether the task is genuine is :class:`rlhub.labels.LabelGate`'s
    question.
    """
    try:
        domain, task, _, _ = labels.parse(label)
    except errors.LabelError as exc:
        raise LabelError(str(exc)) from None
    return domain, task


def split_query(query: str, prompt: str) -> str | None:
    """The response part of ``query``, or None when ``prompt`` is not its prefix (exactly, or
    up to whitespace: see the module docstring)."""
    if query.startswith(prompt):
        return query[len(prompt):]
    end = _loose_prefix_end(query, prompt)
    return None if end is None else query[end:]


def _loose_prefix_end(query: str, prompt: str) -> int | None:
    """Where ``prompt`` ends in ``query`` when the two agree on every non-whitespace character.

    The prompt's trailing whitespace (the ``"\n"`` after ``assistant``) is consumed from the
    query only where the query has it, so no character of the response is ever taken.
    """
    body = prompt.rstrip()
    i = 0
    for char in body:
        if char.isspace():
            continue
        while i < len(query) and query[i].isspace():
            i += 1
        if i == len(query) or query[i] != char:
            return None
        i += 1
    for char in prompt[len(body):]:
        if i < len(query) and query[i] == char:
            i += 1
    return i


def strip_trailing_tokens(text: str, tokens: tuple[str, ...] = DEFAULT_STRIP_TOKENS) -> str:
    """``text`` without trailing special tokens (any number, in any order) and whitespace."""
    changed = True
    while changed:
        changed = False
        stripped = text.rstrip()
        for token in tokens:
            if token and stripped.endswith(token):
                text, changed = stripped[: -len(token)], True
    return text


def decode_sample(query: Any, prompt: Any, label: Any,
                  strip_tokens: tuple[str, ...] = DEFAULT_STRIP_TOKENS) -> Sample:
    """Turn one ``(query, prompt, label)`` triple into a :class:`Sample` (never raises)."""
    try:
        domain, task = parse_label(label)
    except LabelError as exc:
        return Sample(None, None, "", str(exc))
    return decode_response(query, prompt, domain, task, strip_tokens)


def decode_response(query: Any, prompt: Any, domain: str | None, task: Task | None,
                    strip_tokens: tuple[str, ...] = DEFAULT_STRIP_TOKENS) -> Sample:
    """The :class:`Sample` of a label already decoded: the response recovered from ``query``."""
    if not isinstance(query, str) or not isinstance(prompt, str):
        return Sample(domain, task, "", "expected 'query' and 'prompts' items to be strings, "
                      f"found {type(query).__name__} and {type(prompt).__name__}")
    response = split_query(query, prompt)
    if response is None:
        return Sample(domain, task, "", "the prompt is not a prefix of the query (left-truncated "
                      "by OpenRLHF, or a different tokenizer); not verified", prompt_mismatch=True)
    return Sample(domain, task, strip_trailing_tokens(response, strip_tokens))


def outcome_from_score(score: Score, reward_range: tuple[float, float],
                       verify_ms: float) -> Outcome:
    """An :class:`Outcome` from a :class:`~rlhub.task.Score` of a domain with that range."""
    lo, hi = reward_range
    reward = float(score.reward)
    passed = bool(score.passed)
    components = score.components or {}
    fmt = next((components[k] for k in FORMAT_COMPONENTS if k in components), float(passed))
    failure = str(score.failure or ("none" if passed else "answer"))
    error = None if score.error is None else str(score.error)
    return Outcome(reward, (reward - lo) / (hi - lo), failure, error, passed, float(fmt),
                   float(verify_ms))


def answer(outcomes: list[Outcome]) -> dict[str, Any]:
    """The JSON answer: ``rewards``, ``scores`` (reward rescaled to [0, 1]), ``extra_logs``
    (where each outcome's failure class becomes its ``trainable`` and ``failure_<class>``)."""
    rows = [_log_row(o.extra_logs()) for o in outcomes]
    columns = zip(*rows) if rows else [()] * len(LOG_KEYS)
    return {
        "rewards": [o.reward for o in outcomes],
        "scores": [o.score for o in outcomes],
        "extra_logs": dict(zip(LOG_KEYS, map(list, columns))),
    }


class ApiError(Exception):
    """A client error on a ``/v1`` endpoint: answered as ``{"error": message}`` with ``status``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
