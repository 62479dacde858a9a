"""Prompt groups of OpenRLHF's rollout, as the agent module sees them inside one vLLM actor.

OpenRLHF 0.11.2 plays the ``n_samples_per_prompt`` samples of one dataset row as ``n``
concurrent ``execute`` calls made by one ``RolloutRayActor.generate_responses`` call, on that
actor's event loop, all handed the same ``sampling_params`` object (Ray deserialises a call's
arguments once, so another call, even for a row with the same label, gets objects of its own).
That call is the group: :meth:`GroupBook.join` keys it by the identity of that object (held alive
by the group) together with the prompt and the label. The group's size is how many samples
OpenRLHF really started, not a setting that can drift from ``rollout.n_samples_per_prompt``.

All members of a group play one task (resolved once, :meth:`Group.once`) and wait for each other
at the end (:meth:`Group.finish`), where the group is settled as a whole (:func:`settle`):

* if any member met a failure that is not the model's (after retries), every member gets the
  domain's minimum reward and score 0: equal rewards give every member an advantage of exactly 0
  under OpenRLHF's group estimators (``group_norm``, ``dr_grpo``, ``rloo``), and a group whose mean
  score is 0 is dropped by dynamic filtering (its band is open: ``low < mean < high``);
* a group whose returns are all equal has no learning signal: mid-range ones (all repaired at 0.8)
  get score 0 so that dynamic filtering drops them as it drops all-wrong groups;
* otherwise each member's score is its return rescaled to [0, 1].

:class:`Breaker` stops the job when no group has settled cleanly for ``budget_s`` seconds: a
transient outage is retried and counted, a lasting one must not quietly burn the dataset.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rlhub.failures import is_trainable
from rlhub.integrations.openrlhf.client import ServerError, Tally


class ServerOutage(ServerError):
    """No prompt group has settled without an infrastructure failure for too long."""


@dataclass
class Member:
    """One sample of a group: its episode's outcome, filled in as it plays."""

    index: int
    key: str
    failure: str = "answer"  # the class of its last scored attempt
    fault: str | None = None  # the first failure that is not the model's, after retries
    error: str | None = None
    reward: float = 0.0  # the episode's return: the sum of the step rewards given to OpenRLHF
    logs: dict[str, float] = field(default_factory=dict)
    tally: Tally = field(default_factory=Tally)
    episode: Any = None  # its rlhub.integrations.openrlhf.episode.Episode, once opened

    def hit(self, failure: str, error: str | None) -> None:
        """Record a failure class; the first one that is not the model's sticks."""
        if is_trainable(failure):
            self.failure = failure
        elif self.fault is None:
            self.fault, self.error = failure, error

    @property
    def outcome(self) -> str:
        return self.fault or self.failure


@dataclass
class Settled:
    """A group's verdict: each member's reward and score, and the fault that voided it."""

    rewards: list[float]
    scores: list[float]
    fault: str | None = None


def settle(members: list[Member], lo: float, hi: float) -> Settled:
    """The group's rewards and scores (see the module docstring)."""
    n = len(members)
    fault = next((m.fault for m in members if m.fault), None)
    if fault is not None:
        return Settled([lo] * n, [0.0] * n, fault)
    returns = [m.reward for m in members]
    scores = [(r - lo) / (hi - lo) for r in returns]
    if n >= 2 and max(returns) - min(returns) <= 1e-9 and returns[0] < hi:
        scores = [0.0] * n
    return Settled(returns, scores)


class Group:
    """The samples of one rollout call (see the module docstring)."""

    def __init__(self, anchor: Any, book_key: tuple[Any, ...]):
        self.anchor = anchor  # keeps id(sampling_params) unique while the group lives
        self.book_key = book_key
        self.key = uuid.uuid4().hex
        self.members: list[Member] = []
        self.sealed = False
        self.crashed = False  # a member's execute raised (the job is stopping)
        self.role = "eval"
        self.domain: str | None = None
        self.reward_range: tuple[float, float] | None = None
        self.settled: Settled | None = None
        self._once: asyncio.Future[Any] | None = None
        self._done = asyncio.Event()
        self._finished = 0
        self._error: BaseException | None = None

    def join(self) -> Member:
        member = Member(len(self.members), f"{self.key}/{len(self.members)}")
        self.members.append(member)
        return member

    async def once(self, resolve: Callable[[], Awaitable[Any]]) -> Any:
        """``resolve()``'s result (or exception) for every member; it runs once per group."""
        if self._once is None:
            self._once = asyncio.ensure_future(resolve())
        return await asyncio.shield(self._once)

    async def finish(self, settle_group: Callable[[Group], Awaitable[Settled]]) -> Settled:
        """Wait for every member; the last to arrive settles the group for all."""
        self._finished += 1
        if self._finished == len(self.members):
            try:
                self.settled = await settle_group(self)
            except BaseException as exc:
                self._error = exc
            finally:
                self._done.set()
        else:
            await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self.settled is not None
        return self.settled


class GroupBook:
    """Groups still gathering members, by rollout call (see the module docstring)."""

    def __init__(self) -> None:
        self.open: dict[tuple[Any, ...], Group] = {}

    def join(self, sampling_params: Any, prompt: Any, label: Any) -> tuple[Group, Member]:
        key = (id(sampling_params), _digest(prompt), _digest(label))
        group = self.open.get(key)
        if group is None:
            group = self.open[key] = Group(sampling_params, key)
        return group, group.join()

    def seal(self, group: Group) -> None:
        """No more members: every sample of the call has started by now."""
        if not group.sealed:
            group.sealed = True
            self.open.pop(group.book_key, None)


def _digest(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class Breaker:
    """Stops the job once no group has settled cleanly for ``budget_s`` seconds."""

    def __init__(self, budget_s: float):
        self.budget_s = budget_s
        self.last_ok = time.monotonic()
        self.voided = 0
        self.faults: Counter[str] = Counter()

    def record(self, settled: Settled, error: str | None) -> None:
        if settled.fault is None:
            self.last_ok, self.voided = time.monotonic(), 0
            return
        self.voided += 1
        self.faults[settled.fault] += 1
        quiet = time.monotonic() - self.last_ok
        if quiet >= self.budget_s:
            raise ServerOutage(
                f"rlhub agent: {self.voided} prompt groups in a row were voided by failures that "
                f"are not the model's ({dict(self.faults)}) and none settled for {quiet:.0f} s "
                f"(RLHUB_OUTAGE_BUDGET_S={self.budget_s:g}); last: {error}. Stopping rather than "
                "training on or filtering away the dataset: check `rlhub serve` (/health, "
                "/metrics) and its sandbox and judge")
