"""The rollout loop: generate, verify, feed back, repair, for many tasks at once.

One rollout plays one :class:`~rlhub.domain.Episode`: the policy answers the conversation, the
episode scores the answer, and while it is not done its observation (the verifier's feedback, or a
tool's output) goes back to the policy as a user message, up to the domain's ``max_turns``. A
domain with tools (:meth:`~rlhub.domain.Domain.tool_specs`) offers them to the policy each turn;
a turn that calls them continues the conversation with the step's ``messages`` instead (the
assistant's ``tool_calls`` and one ``tool`` result per call, :mod:`rlhub.tools`), and the turn's
completion is kept in the canonical text form of its content and calls.

The trajectory's reward comes from its last *attempt* (a turn whose ``StepResult.info`` does not
say ``"attempt": False``; tool calls of agentic episodes say so). When that attempt is repair
``k`` (``k`` earlier attempts failed) the reward is discounted toward the range minimum ``lo``::

    reward = lo + (attempt_reward - lo) * repair_discount ** k

which is ``attempt_reward * repair_discount ** k`` for the usual range starting at 0. Every
component of every turn is kept.

Nothing a policy or a domain does stops the loop: a dead endpoint, a malformed response, an
episode that raises or a verification that overruns its time all end that one trajectory with a
``status`` saying why (``policy_error``, ``env_error``, ``verify_timeout``) and the range minimum.
Every turn and trajectory also carries a failure class (:mod:`rlhub.failures`): the trajectory's
is the first non-trainable class of any turn (``policy`` for a dead endpoint, ``verifier`` for a
crashed or overrunning episode, ``sandbox`` or ``judge`` from the score), else the last attempt's.
:func:`run_rollouts` keeps ``concurrency`` rollouts in flight; verification runs in a thread pool,
so sandbox jobs of concurrent rollouts execute side by side.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from rlhub.domain import close_episode
from rlhub.failures import is_trainable, of_exception
from rlhub.policy.protocol import Conversation, Generation, generate_detailed
from rlhub.task import Score, Task

ERROR_STATUSES = ("policy_error", "env_error", "verify_timeout")
STATUSES = ("passed", "failed", *ERROR_STATUSES)


@dataclass
class Turn:
    """One turn: the messages added before it, the completion, and its ``score`` (the range
    minimum until the turn is scored; a turn that ends unscored says why in the score's
    ``error`` and whose fault it was in its ``failure``)."""

    index: int
    messages: Conversation
    completion: str | None
    score: Score = field(default_factory=lambda: Score(0.0))
    attempt: bool = True
    status: str = "ok"
    observation: str | None = None
    gen_s: float = 0.0
    verify_s: float = 0.0
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    gen_attempts: int = 1

    @property
    def exec_status(self) -> str | None:
        """The sandbox status of the code the score ran, if any."""
        return self.score.exec.get("status") if isinstance(self.score.exec, dict) else None

    def end(self, status: str, error: str, failure: str) -> None:
        """End the turn unscored: ``status`` says how, ``error`` why and ``failure`` whose fault
        it was (the reward stays what it was, the range minimum)."""
        self.status = status
        self.score = replace(self.score, error=error, failure=failure)


@dataclass
class Trajectory:
    """A whole rollout of one task: its turns, final reward, status and provenance."""

    domain: str
    task: Task
    sample_index: int = 0
    job_key: str = ""
    trajectory_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    turns: list[Turn] = field(default_factory=list)
    reward: float = 0.0
    passed: bool = False
    first_pass_attempt: int | None = None
    status: str = "failed"
    error: str | None = None
    failure: str = "answer"
    started_at: float = field(default_factory=time.time)
    wall_s: float = 0.0
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def initial_messages(task: Task) -> Conversation:
    """The conversation a task opens with."""
    if isinstance(task.prompt, str):
        return [{"role": "user", "content": task.prompt}]
    return [{"role": str(m.get("role", "user")), "content": str(m.get("content", ""))}
            for m in task.prompt]


def clean_text(text: str) -> str:
    """``text`` with lone surrogates replaced, so it can be stored as UTF-8."""
    return text.encode("utf-8", "replace").decode("utf-8")


# -- rewards ---------------------------------------------------------------------------------


def scored_attempts(turns: list[Turn]) -> list[Turn]:
    """The turns that were attempts at the task and were scored."""
    return [t for t in turns if t.attempt and t.completion is not None and t.status == "ok"]


def final_reward(turns: list[Turn], lo: float, discount: float) -> tuple[float, bool, int | None]:
    """``(reward, passed, first_pass_attempt)`` of a trajectory (see the module docstring)."""
    attempts = scored_attempts(turns)
    first = next((i for i, t in enumerate(attempts) if t.score.passed), None)
    if not attempts:
        return lo, False, None
    last, k = attempts[-1].score, len(attempts) - 1
    return lo + (last.reward - lo) * discount ** k, last.passed, first


def trajectory_failure(turns: list[Turn]) -> str:
    """The trajectory's failure class: any turn's fault that is not the model's, else the last
    attempt's class (``answer`` when the model never made a scored attempt)."""
    fault = next((t.score.failure for t in turns if not t.score.trainable), None)
    if fault is not None:
        return fault
    attempts = scored_attempts(turns)
    return attempts[-1].score.failure if attempts else "answer"


def apply_step(turn: Turn, score: Score, info: dict[str, Any], observation: str | None) -> None:
    """Record an episode step's judgement on ``turn`` (see :func:`kept_score`)."""
    turn.score = kept_score(score)
    turn.attempt = info.get("attempt", True) is not False
    turn.observation = None if observation is None else clean_text(observation)


def kept_score(score: Score) -> Score:
    """A copy of ``score`` as a turn keeps it: plain numbers, storable feedback and error text
    (a sandbox's output keeps the policy's undecodable bytes as lone surrogates), string
    component names and class, and a JSON-able ``exec`` (every other field as it is)."""
    return replace(score, reward=float(score.reward), passed=bool(score.passed),
                   components={str(k): float(v) for k, v in score.components.items()},
                   feedback=clean_text(score.feedback or ""), exec=_jsonable(score.exec),
                   error=None if score.error is None else clean_text(str(score.error)),
                   failure=str(score.failure))


def _jsonable(value: Any) -> Any:
    if value is None:
        return None
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return {"repr": repr(value)}


# -- one rollout -----------------------------------------------------------------------------


class Rollout:
    """Plays one job against a policy; see :func:`run_rollouts` for many."""

    def __init__(self, policy: Any, job: RolloutJob, sampling: dict[str, Any],
                 executor: ThreadPoolExecutor | None = None):
        self.policy = policy
        self.job = job
        self.sampling = sampling
        self.executor = executor
        manifest = job.domain.manifest
        self.lo = manifest.reward_range[0]
        self.discount = manifest.repair_discount
        self.max_turns = max(1, manifest.max_turns)
        self.verify_timeout_s = manifest.verify_deadline_s
        self.tools = _tool_specs(job.domain)

    async def run(self) -> Trajectory:
        job = self.job
        traj = Trajectory(job.domain.id, job.task, job.sample_index, job.key,
                          provenance=dict(job.provenance))
        start = time.perf_counter()
        try:
            await self._play(traj)
        finally:
            traj.wall_s = time.perf_counter() - start
            self._finish(traj)
        return traj

    async def _play(self, traj: Trajectory) -> None:
        try:
            episode = self.job.domain.start(self.job.task)
        except Exception as exc:  # noqa: BLE001 - a broken episode is data
            traj.status, traj.error = "env_error", f"start() raised {type(exc).__name__}: {exc}"
            traj.failure = of_exception(exc)
            return
        try:
            await self._turns(traj, episode)
        finally:
            await asyncio.get_running_loop().run_in_executor(self.executor, close_episode, episode)

    async def _turns(self, traj: Trajectory, episode: Any) -> None:
        history: Conversation = []
        new = initial_messages(self.job.task)
        for index in range(self.max_turns):
            history += new
            turn = await self._turn(index, new, history)
            traj.turns.append(turn)
            if turn.status != "ok":
                traj.status, traj.error = _trajectory_status(turn), turn.score.error
                return
            done, messages = await self._step(episode, turn)
            if turn.status != "ok":
                traj.status, traj.error = turn.status, turn.score.error
                return
            if done:
                return
            if messages:  # a tool turn: the assistant's calls, then their results
                history.append(messages[0])
                new = messages[1:]
            else:
                history.append({"role": "assistant", "content": turn.completion or ""})
                new = [{"role": "user", "content": turn.observation or ""}]

    async def _turn(self, index: int, new: Conversation, history: Conversation) -> Turn:
        gen: Generation = (await generate_detailed(self.policy, [list(history)], tools=self.tools,
                                                   **self.sampling))[0]
        turn = Turn(index, [dict(m) for m in new], None, Score(self.lo), gen_s=gen.latency_s,
                    finish_reason=gen.finish_reason, prompt_tokens=gen.prompt_tokens,
                    completion_tokens=gen.completion_tokens, gen_attempts=gen.attempts)
        if gen.error is not None or gen.text is None:
            turn.end("policy_error", gen.error or "policy returned no text", "policy")
        else:
            turn.completion = clean_text(gen.completion() or "")
        return turn

    async def _step(self, episode: Any, turn: Turn) -> tuple[bool, Conversation]:
        """Score ``turn`` with the episode: whether the episode is done, and the messages the
        step adds to the conversation when the turn called tools."""
        loop = asyncio.get_running_loop()
        start = time.perf_counter()
        try:
            call = loop.run_in_executor(self.executor, _timed_step, episode, turn.completion)
            result, turn.verify_s = await asyncio.wait_for(call, self.verify_timeout_s)
            # a plugin episode's own Score that cannot be kept (a component that is no number)
            apply_step(turn, result.score, getattr(result, "info", None) or {}, result.observation)
        except asyncio.TimeoutError:
            turn.verify_s = time.perf_counter() - start
            turn.end("verify_timeout",
                     f"episode.step did not return within {self.verify_timeout_s:g} s", "verifier")
            return True, []
        except Exception as exc:  # noqa: BLE001 - an episode crash is data
            turn.verify_s = time.perf_counter() - start
            turn.end("env_error", f"step() raised {type(exc).__name__}: {exc}", of_exception(exc))
            return True, []
        messages = [dict(m) for m in getattr(result, "messages", None) or []]
        return bool(result.done) or result.observation is None, _jsonable(messages) or []

    def _finish(self, traj: Trajectory) -> None:
        reward, passed, first = final_reward(traj.turns, self.lo, self.discount)
        if traj.status not in ERROR_STATUSES:
            traj.status = "passed" if passed else "failed"
            traj.error = next((t.score.error for t in reversed(traj.turns) if t.score.error), None)
        traj.reward, traj.passed, traj.first_pass_attempt = reward, passed, first
        if is_trainable(traj.failure):
            traj.failure = trajectory_failure(traj.turns)
        if not is_trainable(traj.failure):
            traj.passed = False


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


def _trajectory_status(turn: Turn) -> str:
    return turn.status if turn.status in STATUSES else "env_error"


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
    """The episode's step results for stored ``completions``, in order (used by ``reverify``)."""
    episode = domain.start(task)
    results = []
    try:
        for completion in completions:
            result = episode.step(completion)
            results.append(result)
            if result.done:
                break
    finally:
        close_episode(episode)
    return results
