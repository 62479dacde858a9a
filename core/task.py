"""Tasks and scores: the JSON-serialisable values that cross every boundary."""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from rlhub.failures import is_trainable

Prompt = str | list[dict[str, str]]


@dataclass
class Task:
    """One task of a domain.

    ``prompt`` is a string or a list of chat messages; ``answer`` is whatever the verifier needs;
    ``gold`` is a reference completion that earns the maximum reward, or None when the domain has
    none; ``meta`` carries anything else (generator parameters, tests, entry point, ...).
    """

    id: str
    domain: str
    prompt: Prompt
    answer: Any = None
    gold: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        missing = [k for k in ("id", "domain", "prompt") if k not in data]
        if missing:
            raise ValueError(f"task: expected keys id, domain, prompt; missing {missing}")
        known = {k: data[k] for k in ("id", "domain", "prompt", "answer", "gold", "meta") if k in data}
        return cls(**known)

    def prompt_text(self) -> str:
        """The prompt as plain text (chat prompts are joined by role)."""
        if isinstance(self.prompt, str):
            return self.prompt
        return "\n".join(str(m.get("content", "")) for m in self.prompt)


@dataclass
class Score:
    """The verdict on one completion.

    ``reward`` is finite and inside the domain's declared range; ``components`` holds every named
    reward component; ``error`` is set when verification itself failed (the reward is then the
    range minimum); ``exec`` holds the sandbox result when code ran; ``failure`` is the failure
    class (:mod:`rlhub.failures`): ``none`` for a pass, ``answer``/``timeout`` for the model's own
    failures, anything else for a fault that no trainer may learn from.
    """

    reward: float
    components: dict[str, float] = field(default_factory=dict)
    passed: bool = False
    feedback: str = ""
    error: str | None = None
    exec: dict[str, Any] | None = None
    failure: str = "none"

    @property
    def trainable(self) -> bool:
        """True when the score describes the model's answer, not a fault of rlhub."""
        return is_trainable(self.failure)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Score:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def task_rng(domain_id: str, version: str, split: str, seed: int, index: int) -> random.Random:
    """A ``random.Random`` determined only by (domain id, version, split, seed, index).

    The state is derived with sha256, so it is the same in every process and Python version
    (unlike ``hash()``), and neighbouring indices give unrelated streams.
    """
    key = f"{domain_id}\x00{version}\x00{split}\x00{seed}\x00{index}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:16], "big"))


def task_id(domain_id: str, split: str, seed: int, index: int) -> str:
    """A readable, unique id for a sampled task."""
    return f"{domain_id}:{split}:{seed}:{index}"


def clamp_reward(value: Any, lo: float, hi: float) -> float:
    """Clamp to [lo, hi]; non-numbers and NaN map to ``lo``, infinities to the nearest bound."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return lo
    if math.isnan(x):
        return lo
    return min(max(x, lo), hi)
