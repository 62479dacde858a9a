"""The policy protocol: what ``--policy`` specs build and what the rollout loop calls.

A policy turns a batch of chat conversations into one completion each::

    texts = await policy.generate([[{"role": "user", "content": "2+2?"}]], temperature=0.0)

``generate`` is the contract of the ``rlhub_make_policy`` hook. Built-in policies also offer
``generate_detailed``, which never raises and reports per-item failures, latency and token counts
as :class:`Generation` values; :func:`generate_detailed` gives every policy that richer form, so a
third-party policy only has to implement ``generate``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol, TypedDict, runtime_checkable

Message = dict[str, Any]  # role and content, plus tool_calls or tool_call_id in tool turns
Conversation = list[Message]


class Sampling(TypedDict, total=False):
    """Sampling parameters every policy understands (others are passed through or ignored)."""

    temperature: float
    top_p: float
    max_tokens: int
    stop: list[str]
    seed: int


SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "stop", "seed")


@dataclass
class Generation:
    """One completion, or why there is none.

    ``text`` is None exactly when ``error`` is set (dead endpoint, timeout, malformed response).
    ``latency_s`` is the wall time spent on this item, retries included. ``tool_calls`` holds the
    OpenAI tool calls of a policy with a tools API; :meth:`completion` is the text form of both.
    """

    text: str | None
    error: str | None = None
    finish_reason: str | None = None
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    attempts: int = 1
    tool_calls: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def completion(self) -> str | None:
        """The completion as one text: the content, then each tool call in the canonical
        (Hermes) form (:func:`rlhub.tools.completion_text`)."""
        if self.text is None or not self.tool_calls:
            return self.text
        from rlhub.tools import completion_text

        return completion_text({"content": self.text, "tool_calls": self.tool_calls})


@runtime_checkable
class Policy(Protocol):
    """What the ``rlhub_make_policy`` hook returns."""

    async def generate(self, messages_batch: list[Conversation], **sampling: Any) -> list[str]:
        """One completion per conversation, in order; raise :class:`rlhub.PolicyError` on failure."""
        ...


def sampling_from(options: dict[str, Any]) -> Sampling:
    """The sampling keys of an option dict, dropping everything else."""
    return {k: options[k] for k in SAMPLING_KEYS if options.get(k) is not None}  # type: ignore[return-value]


def policy_info(policy: Any) -> dict[str, Any]:
    """What a policy says about itself (spec, model, config hash), for provenance."""
    info = getattr(policy, "info", None)
    if callable(info):
        try:
            return dict(info())
        except Exception as exc:  # noqa: BLE001 - provenance must not stop a run
            return {"info_error": f"{type(exc).__name__}: {exc}"}
    return {"class": f"{type(policy).__module__}.{type(policy).__qualname__}"}


async def generate_detailed(policy: Any, messages_batch: list[Conversation],
                            tools: list[dict[str, Any]] | None = None,
                            **sampling: Any) -> list[Generation]:
    """``policy.generate_detailed`` when it exists, else ``generate`` with failures caught.

    ``tools`` (OpenAI specs) reach a policy that says ``accepts_tools = True`` (an OpenAI
    endpoint) with the conversations as they are; every other policy gets the conversations in
    text form (:func:`rlhub.tools.text_messages`: tool calls rendered into the assistant's text,
    results as ``tool`` turns), which is what it was trained on. Never raises: a failing batch
    comes back as one error :class:`Generation` per conversation.
    """
    if tools and getattr(policy, "accepts_tools", False):
        sampling["tools"] = tools
    elif any(_has_tool_turns(m) for m in messages_batch):
        from rlhub.tools import text_messages

        messages_batch = [text_messages(m) for m in messages_batch]
    detailed = getattr(policy, "generate_detailed", None)
    start = time.perf_counter()
    try:
        if detailed is not None:
            return list(await detailed(messages_batch, **sampling))
        texts = await policy.generate(messages_batch, **sampling)
    except Exception as exc:  # noqa: BLE001 - a failing policy is data for the loop
        elapsed = time.perf_counter() - start
        return [Generation(None, f"{type(exc).__name__}: {exc}", latency_s=elapsed)
                for _ in messages_batch]
    elapsed = time.perf_counter() - start
    return [_checked(text, elapsed) for text in _padded(texts, len(messages_batch))]


def _has_tool_turns(messages: Conversation) -> bool:
    return any(m.get("tool_calls") or m.get("role") == "tool" for m in messages)


def _padded(texts: Any, n: int) -> list[Any]:
    items = list(texts) if isinstance(texts, (list, tuple)) else [texts]
    if len(items) != n:
        return [_Mismatch(len(items), n)] * n
    return items


@dataclass
class _Mismatch:
    found: int
    expected: int


def _checked(text: Any, elapsed: float) -> Generation:
    if isinstance(text, _Mismatch):
        return Generation(None, f"malformed policy output: expected {text.expected} completions, "
                          f"found {text.found}", latency_s=elapsed)
    if not isinstance(text, str):
        return Generation(None, "malformed policy output: expected a str completion, found "
                          f"{type(text).__name__}", latency_s=elapsed)
    return Generation(text, latency_s=elapsed)
