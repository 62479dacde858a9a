"""The rollout loop: generate, verify, feed back, repair, for many tasks at once.

One rollout plays one :class:`~rlhub.domain.Episode` through the episode driver
(:class:`~rlhub.episodes.EpisodeDriver`): the policy answers the conversation, the episode scores
the answer, and while it is not done its observation (the verifier's feedback, or a tool's
output) goes back to the policy as a user message; the driver's turn limit ends it at the
domain's ``max_turns``. A domain with tools (:meth:`~rlhub.domain.Domain.tool_specs`) offers them
to the policy each turn; a turn that calls them continues the conversation with the step's
``messages`` instead (the assistant's ``tool_calls`` and one ``tool`` result per call,
:mod:`rlhub.tools`), and the turn's completion is kept in the canonical text form of its content
and calls. The reward, status and failure class of the trajectory follow
:mod:`rlhub.episodes`.

Nothing a policy or a domain does stops the loop: a dead endpoint, a malformed response, an
episode that raises or a verification that overruns its time all end that one trajectory with a
``status`` saying why (``policy_error``, ``env_error``, ``verify_timeout``) and the failure
class of the fault (``policy`` for a dead endpoint, ``verifier`` for a crashed or overrunning
episode). :func:`run_rollouts` keeps ``concurrency`` rollouts in flight; verification runs in a
thread pool, so sandbox jobs of concurrent rollouts execute side by side.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from rlhub.episodes import (
    EpisodeDriver,
    Trajectory,
    Turn,
    apply_step,  # noqa: F401 - the trajectory rules, importable from here as before the driver
    clean_text,
    ended,
    final_reward,  # noqa: F401
    initial_messages,
    open_episode,
)
from rlhub.policy.protocol import Conversation, Generation, generate_detailed
from rlhub.task import Task


@dataclass
class RolloutJob:
    """What to roll out: a domain object, one of its tasks, and which sample of that task."""

    domain: Any
    task: Task
    sample_index: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return job_key(self.task.id, self.sample_index)


def job_key(task_id: str, sample_index: int) -> str:
    """The resume key of a rollout: the same task and sample are never rolled out twice."""
    return f"{task_id}#{sample_index}"


# -- one rollout -----------------------------------------------------------------------------


class Rollout:
    """Plays one job against a policy; see :func:`run_rollouts` for many."""

    def __init__(self, policy: Any, job: RolloutJob, sampling: dict[str, Any],
                 executor: ThreadPoolExecutor | None = None):
        self.policy = policy
        self.job = job
        self.sampling = sampling
        self.executor = executor
        self.verify_timeout_s = job.domain.manifest.verify_deadline_s
        self.tools = _tool_specs(job.domain)

    async def run(self) -> Trajectory:
        job = self.job
        driver = EpisodeDriver(job.domain, job.task, sample_index=job.sample_index,
                               job_key=job.key, provenance=job.provenance)
        start = time.perf_counter()
        try:
            if driver.open():
                await self._play(driver)
        finally:
            await asyncio.get_running_loop().run_in_executor(self.executor, driver.close)
        return driver.finish(wall_s=time.perf_counter() - start)

    async def _play(self, driver: EpisodeDriver) -> None:
        history: Conversation = []
        new = initial_messages(self.job.task)
        while not driver.done:
            history += new
            turn = await self._turn(driver, new, history)
            if turn.completion is None:
                continue
            await self._step(driver, turn)
            if driver.done:
                return
            messages = driver.messages
            if messages:  # a tool turn: the assistant's calls, then their results
                history.append(messages[0])
                new = messages[1:]
            else:
                history.append({"role": "assistant", "content": turn.completion or ""})
                new = [{"role": "user", "content": turn.observation or ""}]

    async def _turn(self, driver: EpisodeDriver, new: Conversation,
                    history: Conversation) -> Turn:
        """The policy's next turn; one it could not produce ends the episode."""
        gen: Generation = (await generate_detailed(self.policy, [list(history)], tools=self.tools,
                                                   **self.sampling))[0]
        turn = driver.turn(None, [dict(m) for m in new], gen_s=gen.latency_s,
                           finish_reason=gen.finish_reason, prompt_tokens=gen.prompt_tokens,
                           completion_tokens=gen.completion_tokens, gen_attempts=gen.attempts)
        if gen.error is not None or gen.text is None:
            driver.end(turn, "policy_error", gen.error or "policy returned no text", "policy")
        else:
            turn.completion = clean_text(gen.completion() or "")
        return turn

    async def _step(self, driver: EpisodeDriver, turn: Turn) -> None:
        """Score ``turn`` with the episode in the executor, within the verification deadline."""
        loop = asyncio.get_running_loop()
        start = time.perf_counter()
        try:
            call = loop.run_in_executor(self.executor, _timed_step, driver.episode,
                                        turn.completion)
            result, turn.verify_s = await asyncio.wait_for(call, self.verify_timeout_s)
        except asyncio.TimeoutError:
            turn.verify_s = time.perf_counter() - start
            driver.end(turn, "verify_timeout",
                       f"episode.step did not return within {self.verify_timeout_s:g} s",
                       "verifier")
        except Exception as exc:  # noqa: BLE001 - an episode crash is data
            turn.verify_s = time.perf_counter() - start
            driver.crash(turn, exc)
        else:
            driver.record(turn, result)


def _tool_specs(domain: Any) -> list[dict[str, Any]] | None:
    """The domain's tools for the policy, or None (a domain that cannot say offers none)."""
    try:
        return list(domain.tool_specs()) or None
    except Exception:  # noqa: BLE001 - a broken tools declaration must not stop the run
        return None


def _timed_step(episode: Any, completion: str | None) -> tuple[Any, float]:
    """``episode.step(completion)`` and the seconds it took (excluding time queued for a thread)."""
    start = time.perf_counter()
    result = episode.step(completion)
    return result, time.perf_counter() - start


# -- many rollouts ---------------------------------------------------------------------------


async def run_rollouts(policy: Any, jobs: Iterable[RolloutJob], *, sampling: dict[str, Any],
                       concurrency: int = 32, verify_workers: int = 8,
                       on_result: Callable[[Trajectory], Awaitable[None] | None] | None = None,
                       ) -> list[Trajectory]:
    """Roll out every job with at most ``concurrency`` in flight; results in completion order.

    ``on_result`` is called (and awaited if it returns an awaitable) as each trajectory finishes,
    e.g. to append it to a store; an exception from it propagates and stops the run.
    """
    queue: asyncio.Queue[RolloutJob] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    results: list[Trajectory] = []
    with ThreadPoolExecutor(max_workers=max(1, verify_workers),
                            thread_name_prefix="rlhub-verify") as executor:
        async def worker() -> None:
            while not queue.empty():
                job = queue.get_nowait()
                traj = await Rollout(policy, job, sampling, executor).run()
                results.append(traj)
                if on_result is not None:
                    maybe = on_result(traj)
                    if maybe is not None:
                        await maybe

        workers = [asyncio.create_task(worker()) for _ in range(max(1, concurrency))]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
    return results


async def rollout(policy: Any, domain: Any, task: Task, *, sampling: dict[str, Any] | None = None,
                  sample_index: int = 0) -> Trajectory:
    """Roll out one task of ``domain`` with ``policy`` (verification in the default executor)."""
    return await Rollout(policy, RolloutJob(domain, task, sample_index), sampling or {}).run()


def replay(domain: Any, task: Task, completions: list[str]) -> list[Any]:
    """The episode's step results for stored ``completions``, in order (used by ``reverify``),
    under the same turn limit the episode was played with."""
    episode = open_episode(domain, task)
    results = []
    try:
        for completion in completions:
            result = episode.step(completion)
            results.append(result)
            if ended(result):
                break
    finally:
        episode.close()
    return results
