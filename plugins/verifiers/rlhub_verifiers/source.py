"""A loaded verifiers environment: its env object, its tasks by position, and playing them.

Positions are the order of ``Taskset.load()`` (verifiers' own ``idx``). A finite taskset is
materialised once (at most :data:`MAX_TASKS`); an infinite one is read lazily and kept as far as
it was read, so position ``k`` is always the same task, in every process.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from typing import Any

from rlhub_verifiers import aio
from rlhub_verifiers.episode import TurnChannel, bridged_env_class, rewards

MAX_TASKS = 100_000


class Source:
    """The env and tasks of one verifiers taskset id, loaded through verifiers' own loaders."""

    def __init__(self, taskset_id: str):
        import verifiers.v1 as vf
        from verifiers.v1.utils.loaders import environment_class

        self.taskset_id = taskset_id
        self.config = vf.resolve_env_config({"taskset": {"id": taskset_id}})
        self.env_class = environment_class(taskset_id, self.config.id)
        self.env = bridged_env_class(self.env_class)(self.config)
        self.infinite = not self.env.taskset.bounded
        self._iter: Iterator[Any] = iter(self.env.taskset)
        self._tasks: list[Any] = []
        self._lock = threading.Lock()
        if not self.infinite:
            self._tasks = list(itertools.islice(self._iter, MAX_TASKS))

    @property
    def size(self) -> int | None:
        return None if self.infinite else len(self._tasks)

    def task_at(self, position: int) -> Any:
        """The task at ``position`` of ``load()``."""
        with self._lock:
            if self.infinite:
                self._tasks += itertools.islice(self._iter, max(0, position + 1 - len(self._tasks)))
            if position >= len(self._tasks):
                raise IndexError(f"taskset {self.taskset_id!r} has no task at position {position}")
            return self._tasks[position]

    def agent_names(self) -> list[str]:
        from verifiers.v1.configs.agent import agent_config_fields

        return sorted(agent_config_fields(self.config))

    def start(self, task: Any) -> tuple[TurnChannel, Any]:
        """Begin an episode of ``task``: its channel and the future of its verifiers Episode."""
        channel = TurnChannel(aio.loop())  # its asyncio queue binds to the loop on first use
        future = aio.submit(self._play(task, channel))
        future.add_done_callback(lambda f: channel.events.put(("done", f)))
        return channel, future

    async def _play(self, task: Any, channel: TurnChannel) -> Any:
        return await self.env.run_episode(task, channel)


def episode_rewards(future: Any) -> dict[str, tuple[float, float]]:
    """The rewards of a finished episode; an env failure raises, naming its error."""
    episode = future.result()
    if episode.errors:
        err = episode.errors[-1]
        raise RuntimeError(f"the verifiers environment failed: {err.type}: {err.message}")
    return rewards(episode)
