"""The server's bounded state: live episodes, and the scheduler with its task leases.

Everything here is bounded in memory. Episodes expire after ``ttl_s`` without a step and the
oldest is evicted when ``max_episodes`` are open; task leases expire after ``ttl_s`` and the
oldest goes when ``max_open`` are held.

Task leases keep GRPO groups intact. OpenRLHF runs ``n_samples_per_prompt`` agent instances per
dataset prompt; when the agent replaces that prompt with a scheduler-chosen task, all n must play
the *same* task. The agent names each prompt group with a fresh lease key (one per OpenRLHF
rollout call, never derived from the label, so two rows with the same label get two leases) and
asks ``/v1/sample`` for ``{"lease": KEY}``: the first request with a key draws a task from the
scheduler, every later one with that key gets the same task. A lease is never used up, so a
retried request cannot push a group member onto another task.

Group rewards reach the scheduler whole (``observe(domain, [[r, ...], ...])``): the agent collects
a group's rewards itself and reports it once, under an ``Idempotency-Key``, so a retried report
is not counted twice.
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
    """The task handed to every request with one lease key."""

    key: str
    task: Task
    created: float = field(default_factory=time.monotonic)


class SharedScheduler:
    """The server's scheduler (optional), made thread-safe, with its task leases."""

    def __init__(self, scheduler: Any | None, ttl_s: float = 900.0, max_open: int = 100_000):
        self.scheduler = scheduler
        self.lock = threading.Lock()
        self.ttl_s = ttl_s
        self.max_open = max_open
        self.leases: OrderedDict[str, Lease] = OrderedDict()
        self.observed_groups = 0

    @property
    def enabled(self) -> bool:
        return self.scheduler is not None

    def weights(self) -> dict[str, float]:
        with self.lock:
            return self.scheduler.weights() if self.scheduler else {}

    def sample(self, n: int) -> list[Task]:
        with self.lock:
            return self.scheduler.sample(n)

    def lease(self, key: str) -> Task:
        """The task of lease ``key``: drawn from the scheduler on first sight, then the same."""
        with self.lock:
            self._expire_leases()
            lease = self.leases.get(key)
            if lease is None:
                lease = self.leases[key] = Lease(key, self.scheduler.sample(1)[0])
            return lease.task

    def _expire_leases(self) -> None:
        now = time.monotonic()
        while self.leases:
            key, lease = next(iter(self.leases.items()))
            if now - lease.created <= self.ttl_s and len(self.leases) < self.max_open:
                break
            del self.leases[key]

    def observe(self, domain: str, group_rewards: list[list[float]]) -> int:
        """Record whole groups; returns the zero-variance count (see ``Scheduler.observe``)."""
        with self.lock:
            zero = self.scheduler.observe(domain, group_rewards)
            self.observed_groups += len(group_rewards)
            return int(zero or 0)

    def state(self) -> dict[str, Any]:
        with self.lock:
            return {"enabled": self.enabled, "open_leases": len(self.leases),
                    "observed_groups": self.observed_groups}
