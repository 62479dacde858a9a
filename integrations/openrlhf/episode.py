"""One sample's episode on ``rlhub serve``, as the OpenRLHF agent module plays it.

:func:`resolve_play` decides what a group plays: the row's own task, or (for a training row with
``RLHUB_SCHEDULE=1``) the task the server's scheduler leases to the group. :class:`Episode` opens
it, steps it and closes it, every call under a request key so that retries are safe.

A step can be retried only by replaying: the episode the first try ran on is either gone (a
server restart answers 404) or finished by the failure (a repair cannot fix a crashed sandbox).
So a lost episode, or a step whose failure class is not the model's, is played again on a new
episode: the earlier completions are replayed and must give back the very observations the model
saw (else the replay is refused as diverged), then the step is sent again. The server's episode
driver (:mod:`rlhub.episodes`) decides when an episode is done, its failure class and its
return; the step rewards given to OpenRLHF are the changes of that return
(:class:`~rlhub.episodes.StepRewards`, as the server computes them), kept across replays, so a
replay never counts a reward twice.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from rlhub.episodes import StepRewards
from rlhub.failures import is_trainable
from rlhub.integrations.openrlhf.export import role_of
from rlhub.integrations.openrlhf.client import (
    ServerClient,
    ServerMisconfigured,
    ServerRefused,
    ServerUnavailable,
)
from rlhub.integrations.openrlhf.group import Group, Member
from rlhub.integrations.server.protocol import FORMAT_COMPONENTS, LabelError, parse_label

log = logging.getLogger("rlhub.openrlhf_agent")


class EpisodeFailed(Exception):
    """The episode could not go on; ``failure`` is the class to record (never the model's)."""

    def __init__(self, failure: str, message: str):
        super().__init__(message)
        self.failure = failure


class _Lost(Exception):
    """The server no longer holds the episode (404 on a step)."""


@dataclass
class Play:
    """What a group plays: the label the server opens it from (the row's, or the one the server
    signed for its lease: the server verifies only tasks it re-derives or signed) and the prompt
    text the model sees."""

    label: Any
    observation: str


async def resolve_play(client: ServerClient, schedule: bool, group: Group, label: Any,
                       observation: str, fmt: Any) -> Play:
    """The group's task: the label's, or the scheduler's lease for a training row."""
    try:
        domain, task = parse_label(label)
        decoded = json.loads(label) if isinstance(label, str) else label
    except LabelError as exc:
        raise EpisodeFailed("label", str(exc)) from None
    group.role, group.domain = role_of(decoded), domain
    if group.role != "train" or not schedule:
        return Play(decoded, observation)
    try:
        leased = await client.call("POST", "/v1/sample", {"lease": group.key},
                                   key=f"{group.key}:lease")
    except ServerUnavailable as exc:
        raise EpisodeFailed("verifier", str(exc)) from None
    except ServerRefused as exc:
        raise ServerMisconfigured(f"rlhub agent: the server refused a task lease ({exc}); "
                                  "RLHUB_SCHEDULE=1 needs `rlhub serve --mixture MIX.yaml`") from None
    leased_task = leased["tasks"][0]
    group.domain = leased_task["domain"]
    return Play(leased["labels"][0], fmt.prompt(leased_task["prompt"]))


class Episode:
    """An episode on the server, replayed when lost or hit by an infrastructure failure."""

    def __init__(self, client: ServerClient, member: Member, label: Any, retries: int):
        self.client = client
        self.member = member
        self.label = label
        self.retries = max(0, retries)
        self.id: str | None = None
        self.generation = 0
        self.history: list[tuple[str, str | None]] = []  # (completion, observation it got)
        self.rewards = StepRewards()  # the server's rule: a step's reward is the return's change
        self.done = False

    async def open(self) -> tuple[float, float]:
        """Open the episode; its domain's reward range."""
        opened = await self._call("POST", "/v1/episodes", {"label": self.label}, "open")
        self.id = str(opened["episode_id"])
        lo, hi = opened["reward_range"]
        return float(lo), float(hi)

    async def step(self, completion: str) -> dict[str, Any]:
        """Step with ``completion``: ``{reward (this step's), observation, info}``."""
        for attempt in range(self.retries + 1):
            try:
                result = await self._step_once(completion, len(self.history))
            except _Lost as exc:
                if attempt == self.retries:
                    raise EpisodeFailed("verifier", f"episode lost: {exc}") from None
            else:
                if is_trainable(failure_of(result)) or attempt == self.retries:
                    return self._accept(completion, result)
            self.member.tally.retries += 1
            await self._replay()
        raise AssertionError("unreachable")

    async def close(self) -> None:
        """Close an episode OpenRLHF stopped before it was done (its length limit)."""
        if self.id is not None and not self.done:
            self.done = True
            await self._discard(self.id)

    async def _discard(self, episode_id: str) -> None:
        try:
            await self.client.call("DELETE", f"/v1/episodes/{episode_id}")
        except (ServerUnavailable, ServerRefused) as exc:
            log.info("rlhub agent: could not close episode %s: %s", episode_id, exc)

    async def _step_once(self, completion: str, turn: int) -> dict[str, Any]:
        return dict(await self._call("POST", f"/v1/episodes/{self.id}/step",
                                     {"completion": completion}, f"step:{turn}"))

    async def _replay(self) -> None:
        """Play the history again on a new episode (see the module docstring)."""
        old, self.generation = self.id, self.generation + 1
        await self.open()
        for turn, (completion, seen) in enumerate(self.history):
            try:
                result = await self._step_once(completion, turn)
            except _Lost as exc:
                raise EpisodeFailed("verifier", f"episode lost in replay: {exc}") from None
            if result["done"] or result["observation"] != seen:
                raise EpisodeFailed("verifier", "replay diverged: the new episode did not give "
                                                "back the observations the model saw")
        if old is not None:
            await self._discard(old)

    def _accept(self, completion: str, result: dict[str, Any]) -> dict[str, Any]:
        info = result["info"]
        reward = self.rewards.reward(float(info["return"]))
        self.history.append((completion, result["observation"]))
        self.done = bool(result["done"])
        self.member.hit(failure_of(result), info.get("error"))
        self.member.logs = step_logs(info)
        return {"reward": reward, "observation": result["observation"], "info": info}

    async def _call(self, method: str, path: str, body: Any, what: str) -> Any:
        key = f"{self.member.key}:{self.generation}:{what}"
        try:
            return await self.client.call(method, path, body, key=key, tally=self.member.tally)
        except ServerUnavailable as exc:
            raise EpisodeFailed("verifier", str(exc)) from None
        except ServerRefused as exc:
            if exc.status == 404 and what.startswith("step"):
                raise _Lost(str(exc)) from None
            failure = "label" if what == "open" and exc.status in (400, 403, 404) else "verifier"
            raise EpisodeFailed(failure, str(exc)) from None


def failure_of(result: dict[str, Any]) -> str:
    """The failure class of a step's answer."""
    info = result.get("info") or {}
    failure = (info.get("score") or {}).get("failure")
    return str(failure or ("none" if info.get("passed") else "answer"))


def step_logs(info: dict[str, Any]) -> dict[str, float]:
    """The ``extra_logs`` values a step's ``info`` gives (see ``rlhub.integrations.server.protocol.LOG_KEYS``)."""
    components = (info.get("score") or {}).get("components") or {}
    passed = float(bool(info.get("passed")))
    fmt = next((components[k] for k in FORMAT_COMPONENTS if k in components), passed)
    return {"passed": passed, "format_ok": float(fmt),
            "repair_turns": float(info.get("repair_turns", 0)),
            "verify_ms": float(info.get("verify_ms", 0.0))}
