"""The server's bounded state: live episodes, and the scheduler with its task leases and groups.

Everything here is bounded in memory. Episodes expire after ``ttl_s`` without a step and the
oldest is evicted when ``max_episodes`` are open. The scheduler's per-slot leases and the reward
groups being collected are capped the same way (oldest first).

Task leases keep GRPO groups intact. OpenRLHF runs ``n_samples_per_prompt`` independent agent
instances per dataset prompt; when the agent replaces that prompt with a scheduler-chosen task,
all n instances must get the *same* task. They ask ``/v1/sample`` with the same ``slot`` (derived
from the dataset label) and ``group_size`` n: the first request draws a task from the scheduler
and opens a lease; the next n - 1 requests with that slot get the same task; the request after
that opens a new lease (the same dataset row seen again, next epoch).

Group rewards reach the scheduler either whole (``observe(domain, [[r, ...], ...])``) or one
sample at a time tagged with a group key (the lease id) and the group size: the server collects
them and observes the group when it is complete. A group left incomplete for ``ttl_s`` is observed
with the rewards it has when it has at least two, else dropped (a 1-sample group has no variance).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from rlhub.task import Task


@dataclass
class EpisodeEntry:
    """A live episode: its pool reference, domain, and a lock serialising its steps."""

    id: str
    domain: str
    ref: Any
    created: float
    last_used: float
    lock: Any = None


class EpisodeTable:
    """Open episodes by id, with idle expiry and LRU eviction (all calls on the event loop)."""

    def __init__(self, ttl_s: float = 900.0, max_episodes: int = 10_000):
        self.ttl_s = ttl_s
        self.max_episodes = max_episodes
        self.entries: OrderedDict[str, EpisodeEntry] = OrderedDict()

    def add(self, domain: str, ref: Any) -> EpisodeEntry:
        import asyncio

        now = time.monotonic()
        entry = EpisodeEntry(new_id(), domain, ref, now, now, asyncio.Lock())
        self.entries[entry.id] = entry
        return entry

    def get(self, episode_id: str) -> EpisodeEntry | None:
        entry = self.entries.get(episode_id)
        if entry is not None:
            entry.last_used = time.monotonic()
            self.entries.move_to_end(episode_id)
        return entry

    def pop(self, episode_id: str) -> EpisodeEntry | None:
        return self.entries.pop(episode_id, None)

    def sweep(self) -> list[EpisodeEntry]:
        """Remove and return expired episodes, then the oldest beyond ``max_episodes``."""
        now = time.monotonic()
        gone = [e for e in self.entries.values() if now - e.last_used > self.ttl_s]
        for entry in gone:
            del self.entries[entry.id]
        while len(self.entries) > self.max_episodes:
            gone.append(self.entries.popitem(last=False)[1])
        return gone


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass
class Lease:
    """A task handed to the ``group_size`` agent instances of one dataset slot."""

    id: str
    task: Task
    remaining: int
    created: float = field(default_factory=time.monotonic)


@dataclass
class Group:
    """Rewards of one prompt group being collected sample by sample."""

    domain: str
    size: int
    rewards: list[float] = field(default_factory=list)
    created: float = field(default_factory=time.monotonic)


class SchedulerHub:
    """The server's scheduler (optional), made thread-safe, with leases and group collection."""

    def __init__(self, scheduler: Any | None, ttl_s: float = 900.0, max_open: int = 100_000):
        self.scheduler = scheduler
        self.lock = threading.Lock()
        self.ttl_s = ttl_s
        self.max_open = max_open
        self.leases: OrderedDict[str, Lease] = OrderedDict()
        self.groups: OrderedDict[str, Group] = OrderedDict()
        self.observed_groups = 0
        self.dropped_groups = 0

    @property
    def enabled(self) -> bool:
        return self.scheduler is not None

    def weights(self) -> dict[str, float]:
        with self.lock:
            return self.scheduler.weights() if self.scheduler else {}

    def sample(self, n: int) -> list[Task]:
        with self.lock:
            return self.scheduler.sample(n)

    def lease(self, slot: str, group_size: int) -> Lease:
        """The task for the next agent instance of ``slot`` (see the module docstring)."""
        with self.lock:
            self._expire_leases()
            lease = self.leases.get(slot)
            if lease is None or lease.remaining <= 0:
                lease = Lease(new_id(), self.scheduler.sample(1)[0], max(1, group_size))
                self.leases[slot] = lease
                self.leases.move_to_end(slot)
            lease.remaining -= 1
            return lease

    def _expire_leases(self) -> None:
        now = time.monotonic()
        while self.leases:
            slot, lease = next(iter(self.leases.items()))
            if now - lease.created <= self.ttl_s and len(self.leases) < self.max_open:
                break
            del self.leases[slot]

    def observe(self, domain: str, group_rewards: list[list[float]]) -> int:
        """Record whole groups; returns the zero-variance count (see ``Scheduler.observe``)."""
        with self.lock:
            zero = self.scheduler.observe(domain, group_rewards)
            self.observed_groups += len(group_rewards)
            return int(zero or 0)

    def record(self, domain: str, group: str, reward: float, size: int) -> bool:
        """Add one sample's reward to group ``group``; True when that completed the group."""
        with self.lock:
            self._expire_groups()
            entry = self.groups.get(group)
            if entry is None:
                entry = self.groups[group] = Group(domain, max(1, size))
            entry.rewards.append(float(reward))
            if len(entry.rewards) < entry.size:
                return False
            del self.groups[group]
            self.scheduler.observe(entry.domain, [entry.rewards])
            self.observed_groups += 1
            return True

    def _expire_groups(self) -> None:
        now = time.monotonic()
        while self.groups:
            key, entry = next(iter(self.groups.items()))
            if now - entry.created <= self.ttl_s and len(self.groups) < self.max_open:
                break
            del self.groups[key]
            if len(entry.rewards) >= 2:
                self.scheduler.observe(entry.domain, [entry.rewards])
                self.observed_groups += 1
            else:
                self.dropped_groups += 1

    def state(self) -> dict[str, Any]:
        with self.lock:
            return {"enabled": self.enabled, "open_leases": len(self.leases),
                    "open_groups": len(self.groups), "observed_groups": self.observed_groups,
                    "dropped_groups": self.dropped_groups}
