"""``vf/<name>-v1``: one installed verifiers environment as an rlhub domain.

Tasks are the taskset's own, by position. A finite taskset is split once by its tasks' content
keys (about one in five goes to ``test``; both splits hold every task when it has fewer than
five, or when a split would be empty); within a split, ``(seed, index)`` picks from a
permutation seeded by ``seed``. An infinite taskset (verifiers seeds each of its tasks by
position) gives ``train`` the even positions and ``test`` the odd ones, and ignores ``seed``.

``verify(task, completion)`` plays the episode with ``completion`` as the policy's only reply;
``start(task)`` plays it turn by turn. Both run the env's own code and the task's own rewards
(:mod:`rlhub_verifiers.episode`). The verifiers task is always regenerated from the rlhub task's
id, never read from the task's ``meta``, so a forged label cannot change what is scored (a task
id of another domain is a ``LabelError``: failure class ``label``).
"""

from __future__ import annotations

import functools
import hashlib
import random
from typing import Any

from rlhub import (
    Domain,
    Episode,
    LabelError,
    Manifest,
    Score,
    StepResult,
    Task,
    Verdict,
    VerifierError,
    task_id,
)

from rlhub_verifiers import tools
from rlhub_verifiers.episode import text_of
from rlhub_verifiers.source import Source, episode_rewards

STEP_TIMEOUT_S = 300.0


def make(manifest: Manifest) -> VfDomain:
    return VfDomain(manifest)


class VfDomain(Domain):
    """A verifiers environment; see the module docstring."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.source = Source(self.params["taskset"])
        self.names: dict[str, str] = self.params["components"]

    # -- tasks ---------------------------------------------------------------------------------

    def position(self, split: str, seed: int, index: int) -> int:
        self._check_split(split)
        if index < 0:
            raise ValueError(f"domain {self.id!r}: expected a task index >= 0, found {index}")
        if self.source.infinite:
            return 2 * index + (split == "test")
        order = self._order(split, seed)
        return order[index % len(order)]

    @functools.lru_cache(maxsize=64)  # noqa: B019 - one domain object per process
    def _order(self, split: str, seed: int) -> list[int]:
        positions = [p for p in range(self.source.size or 0) if self._split_of(p) == split]
        if not positions or len(positions) == self.source.size:
            positions = list(range(self.source.size or 0))
        random.Random(f"{self.id}\0{split}\0{seed}").shuffle(positions)
        return positions

    def _split_of(self, position: int) -> str:
        if (self.source.size or 0) < 5:
            return "both"
        key = self.source.task_at(position).key
        return "test" if hashlib.sha256(key.encode()).digest()[0] % 5 == 0 else "train"

    def task(self, split: str, seed: int, index: int) -> Task:
        position = self.position(split, seed, index)
        source_task = self.source.task_at(position)
        return Task(id=task_id(self.id, split, seed, index), domain=self.id,
                    prompt=self._prompt(source_task), answer=None, gold=self._gold(source_task),
                    meta={"vf_position": position, "vf_key": source_task.key})

    def _prompt(self, source_task: Any) -> list[dict[str, str]]:
        data = source_task.data
        messages = [{"role": "system", "content": data.system_prompt}] if data.system_prompt else []
        if isinstance(data.prompt, str):
            messages.append({"role": "user", "content": data.prompt})
        else:
            messages += [{"role": m.role, "content": text_of([m])} for m in data.prompt or []]
        specs = tools.tool_specs(type(source_task).toolsets(source_task.config))
        if specs:
            messages[-1] = {**messages[-1], "content": messages[-1]["content"]
                            + tools.prompt_note(specs)}
        return messages

    def _gold(self, source_task: Any) -> str | None:
        answer = getattr(source_task.data, "answer", None)
        mode = self.params.get("gold")
        if not mode or not isinstance(answer, str):
            return None
        return f"\\boxed{{{answer}}}" if mode == "boxed" else answer

    def source_task(self, task: Task) -> Any:
        """The verifiers task behind ``task``, regenerated from its id."""
        prefix = f"{self.id}:"
        parts = task.id[len(prefix):].split(":") if task.id.startswith(prefix) else []
        if task.domain != self.id or len(parts) != 3 or not all(p.isdigit() for p in parts[1:]):
            raise LabelError(f"expected a task id '{self.id}:SPLIT:SEED:INDEX' of this domain, "
                                f"found {task.id!r}; tasks come from `rlhub sample {self.id}`")
        return self.source.task_at(self.position(parts[0], int(parts[1]), int(parts[2])))

    # -- scoring -------------------------------------------------------------------------------

    def check(self, task: Task, completion: str) -> Verdict:
        channel, future = self.source.start(self.source_task(task))
        channel.give(completion, final=True)
        channel.next_event(STEP_TIMEOUT_S)  # only "done": a final reply is never asked again
        return self.verdict(future)

    def verdict(self, future: Any) -> Verdict:
        """The finished episode's rewards as a verdict (an env failure raises)."""
        try:
            raw = episode_rewards(future)
        except RuntimeError as exc:
            raise VerifierError(str(exc)) from exc
        components = {self.names[n]: score for n, (score, _) in raw.items() if n in self.names}
        total = sum(self.manifest.components[c]["weight"] * v for c, v in components.items())
        passed = total >= self.manifest.reward_range[1] - 1e-9
        feedback = "; ".join(f"{name}: {score:g}" for name, (score, _) in sorted(raw.items()))
        return Verdict(components, passed, f"verifiers rewards: {feedback}" if raw else "")

    def start(self, task: Task) -> VfEpisode:
        return VfEpisode(self, task)


class VfEpisode(Episode):
    """A verifiers episode turn by turn: each ``step`` gives the env the policy's next reply."""

    domain: VfDomain

    def __init__(self, domain: VfDomain, task: Task):
        super().__init__(domain, task)
        self.channel, self.future = domain.source.start(domain.source_task(task))
        self.final: StepResult | None = None

    def step(self, completion: str) -> StepResult:
        if self.final is not None:
            return self.final
        self.turn += 1
        self.channel.give(completion, final=self.turn >= self.domain.manifest.max_turns)
        kind, payload = self.channel.next_event(STEP_TIMEOUT_S)
        if kind == "ask":
            idle = self.domain.finalize(Verdict({}, False))
            return StepResult(payload, idle, False, {"attempt": False, "turn": self.turn})
        self.final = StepResult(None, self._score(), True, {"attempt": True, "turn": self.turn})
        return self.final

    def _score(self) -> Score:
        lo, _ = self.domain.manifest.reward_range
        try:
            return self.domain.finalize(self.domain.verdict(self.future))
        except VerifierError as exc:
            components = {name: 0.0 for name in self.domain.manifest.components}
            return Score(lo, components, False, "", f"VerifierError: {exc}", failure="verifier")
