"""``openenv/<name>-v1``: an OpenEnv environment server as a multi-turn rlhub domain.

A task is a seeded reset: ``(split, seed, index)`` gives the reset seed, and the prompt is the
reset observation (its text field, or its JSON) with how to answer. An episode keeps one
WebSocket session: each completion is sent as the action ``{<action field>: completion}``, the
next observation comes back as the user's turn, and the domain's reward is the sum of the
server's step rewards (intermediate steps are not scored attempts). ``verify(task, completion)``
plays one step from a fresh reset; the episode ends there.

OpenEnv servers give no reference answers, so ``gold`` is false; an unreachable server raises
:class:`rlhub.SandboxError` from the check (an infrastructure failure, never a wrong answer),
and an action the server's schema rejects is a wrong answer with the server's message as feedback.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from rlhub import Domain, Episode, LabelError, Manifest, StepResult, Task, Verdict, task_id

from rlhub_openenv.client import ActionRejected, OpenEnvClient, Result


def make(manifest: Manifest) -> OpenEnvDomain:
    return OpenEnvDomain(manifest)


def reset_seed(split: str, seed: int, index: int) -> int:
    digest = hashlib.sha256(f"{split}\0{seed}\0{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def observation_text(observation: dict[str, Any]) -> str:
    """An observation as text: its only string field, or its JSON."""
    texts = [v for k, v in observation.items() if isinstance(v, str) and k != "metadata"]
    if len(texts) == 1:
        return texts[0]
    return json.dumps({k: v for k, v in observation.items() if k != "metadata"}, default=str)


class OpenEnvDomain(Domain):
    """See the module docstring."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.action = str(self.params["action"])
        self._url: str | None = self.params.get("url")

    @property
    def url(self) -> str:
        if self._url is None:
            from rlhub_openenv.containers import start_image

            self._url = start_image(self.params["image"])
        return self._url

    def session(self) -> OpenEnvClient:
        return OpenEnvClient(self.url)

    def task(self, split: str, seed: int, index: int) -> Task:
        self._check_split(split)
        reset = reset_seed(split, seed, index)
        with self.session() as session:
            first = session.reset(seed=reset, **self.params["reset"])
        prompt = (f"{observation_text(first.observation)}\n\nEach reply you send is the "
                  f"environment's action field {self.action!r}.")
        return Task(id=task_id(self.id, split, seed, index), domain=self.id, prompt=prompt,
                    meta={"reset_seed": reset})

    def seed_of(self, task: Task) -> int:
        """The reset seed, re-derived from the task id (a forged ``meta`` changes nothing)."""
        parts = task.id.removeprefix(f"{self.id}:").split(":")
        if not task.id.startswith(f"{self.id}:") or len(parts) != 3 or \
                not all(p.lstrip("-").isdigit() for p in parts[1:]):
            raise LabelError(f"expected a task id '{self.id}:SPLIT:SEED:INDEX', found {task.id!r}")
        return reset_seed(parts[0], int(parts[1]), int(parts[2]))

    def check(self, task: Task, completion: str) -> Verdict:
        with self.session() as session:
            session.reset(seed=self.seed_of(task), **self.params["reset"])
            try:
                result = session.step({self.action: completion})
            except ActionRejected as exc:
                return Verdict({"reward": self.manifest.reward_range[0]}, False,
                               f"The environment rejected the action: {exc}")
        return self.verdict(result.reward, result)

    def verdict(self, total: float, last: Result) -> Verdict:
        passed = total >= self.manifest.reward_range[1]
        return Verdict({"reward": total}, passed, observation_text(last.observation))

    def start(self, task: Task) -> OpenEnvEpisode:
        return OpenEnvEpisode(self, task)


class OpenEnvEpisode(Episode):
    """One session; see the module docstring. The connection closes when the episode ends."""

    domain: OpenEnvDomain

    def __init__(self, domain: OpenEnvDomain, task: Task):
        super().__init__(domain, task)
        self.session = domain.session()
        self.session.reset(seed=domain.seed_of(task), **domain.params["reset"])
        self.total = 0.0
        self.final: StepResult | None = None

    def step(self, completion: str) -> StepResult:
        if self.final is not None:
            return self.final
        self.turn += 1
        try:
            result = self.session.step({self.domain.action: completion})
        except ActionRejected as exc:
            result = Result({"error": f"The environment rejected the action: {exc}"}, 0.0, False)
        except Exception:
            self.session.close()
            raise
        self.total += result.reward
        if result.done or self.turn >= self.domain.manifest.max_turns:
            return self._end(result)
        idle = self.domain.finalize(Verdict({}, False))
        return StepResult(observation_text(result.observation), idle, False,
                          {"attempt": False, "turn": self.turn, "step_reward": result.reward})

    def _end(self, result: Result) -> StepResult:
        self.session.close()
        score = self.domain.finalize(self.domain.verdict(self.total, result))
        self.final = StepResult(None, score, True, {"attempt": True, "turn": self.turn,
                                                    "step_reward": result.reward})
        return self.final
