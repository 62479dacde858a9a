"""The episode driver: turn -> score -> done -> trajectory, once, for every caller.

A domain's :class:`~rlhub.domain.Episode` says what one completion earns
(:class:`~rlhub.domain.StepResult`). Everything around that is kept here, and every driver of
episodes uses it: the rollout loop (:mod:`rlhub.rollout`), the server's ``/v1/episodes``
(``EpisodeRunner``), the embedded trainer's reward recorder and the verifiers bridge.

* :func:`open_episode` starts a domain's episode inside :class:`TimeLimit`, the one place the
  manifest's ``turns.max_turns`` is enforced (Gymnasium's ``TimeLimit``).
* :func:`ended` is the one done rule: a step is the last when it says ``done`` or has no
  observation to send back.
* :class:`EpisodeDriver` plays those steps: it keeps each :class:`Turn`, ends the episode on
  the last step, on a step that raises (the exception names the failure class) or on a turn
  that could not be scored (a dead policy, an overrun deadline), and makes the
  :class:`Trajectory` with its reward, status and failure class.
* :class:`StepRewards` turns the return after each step into that step's reward (the change of
  the return), so a trainer that sums step rewards gets the trajectory's reward.

The reward comes from the last *attempt* (a turn whose ``StepResult.info`` does not say
``"attempt": False``; tool calls of agentic episodes say so). When that attempt is repair ``k``
(``k`` earlier attempts failed) it is discounted toward the range minimum ``lo``::

    reward = lo + (attempt_reward - lo) * repair_discount ** k

The trajectory's failure class is the first non-trainable class of any turn (``policy`` for a
dead endpoint, ``verifier`` for a crashed or overrunning episode, ``sandbox`` or ``judge`` from
the score), else the last attempt's.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from rlhub.domain import StepResult, close_episode
from rlhub.failures import is_trainable, of_exception
from rlhub.policy.protocol import Conversation
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
    """A whole episode of one task: its turns, final reward, status and provenance."""

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
                   feedback=clean_text(score.feedback or ""), exec=jsonable(score.exec),
                   error=None if score.error is None else clean_text(str(score.error)),
                   failure=str(score.failure))


def jsonable(value: Any) -> Any:
    """``value`` as JSON would give it back (``{"repr": ...}`` when it cannot be written)."""
    if value is None:
        return None
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return {"repr": repr(value)}


class StepRewards:
    """Each step's reward as the change of the episode's return, so that the step rewards
    always sum to the return (what OpenRLHF's multi-turn executor adds up, even for an episode
    it cuts short)."""

    def __init__(self) -> None:
        self.returned = 0.0

    def reward(self, value: float) -> float:
        """The reward of the step after which the return is ``value``."""
        reward, self.returned = value - self.returned, value
        return reward


# -- the turn limit --------------------------------------------------------------------------


def ended(result: Any) -> bool:
    """Whether a step ended its episode: it says ``done``, or has no observation to send back."""
    return bool(result.done) or result.observation is None


class TimeLimit:
    """An episode that ends after ``max_turns`` steps, in the manner of Gymnasium's
    ``TimeLimit``: the step that reaches the limit of an episode still going on comes back with
    ``done`` and ``truncated`` set and no observation (nothing is sent back), and keeps its own
    score. Truncation is the budget running out, not a fault: the last attempt's score and
    failure class stand. Unlike Gymnasium's, an episode that ends by itself on the last turn is
    not called truncated. Every other attribute is the wrapped episode's."""

    def __init__(self, episode: Any, max_turns: int):
        if max_turns < 1:
            raise ValueError(f"expected max_turns >= 1, found {max_turns}")
        self.episode = episode
        self.max_turns = max_turns
        self.elapsed = 0

    def step(self, completion: str | None) -> Any:
        result = self.episode.step(completion)
        self.elapsed += 1
        if self.elapsed < self.max_turns or ended(result):
            return result
        return StepResult(None, result.score, True, dict(getattr(result, "info", None) or {}),
                          list(getattr(result, "messages", None) or []), truncated=True)

    def close(self) -> None:
        close_episode(self.episode)

    def __getattr__(self, name: str) -> Any:
        if name == "episode":  # not set yet (a copy being made)
            raise AttributeError(name)
        return getattr(self.episode, name)


def open_episode(domain: Any, task: Task) -> TimeLimit:
    """``domain.start(task)`` under the domain's turn limit (at least one turn)."""
    return TimeLimit(domain.start(task), max(1, domain.manifest.max_turns))


# -- the driver ------------------------------------------------------------------------------


class EpisodeDriver:
    """One task's episode, turn by turn, kept as a :class:`Trajectory` (module docstring).

    :meth:`open` starts the episode; for each completion make a :meth:`turn` and :meth:`step`
    it (or :meth:`record` a step run elsewhere, or :meth:`end` a turn that could not be
    scored) until :attr:`done`; :meth:`finish` makes the trajectory. The caller calls
    :meth:`close` once it is done with the episode, finished or not, in a thread where a slow
    release (a workspace, say) blocks nothing; calling it again does nothing.
    """

    def __init__(self, domain: Any, task: Task, *, sample_index: int = 0, job_key: str = "",
                 provenance: dict[str, Any] | None = None):
        manifest = domain.manifest
        self.domain = domain
        self.task = task
        self.lo, self.hi = manifest.reward_range
        self.discount = manifest.repair_discount
        self.sample_index, self.job_key = sample_index, job_key
        self.provenance = dict(provenance or {})
        self.started_at = time.time()
        self.turns: list[Turn] = []
        self.status: str | None = None  # set when the episode ended in error (ERROR_STATUSES)
        self.error: str | None = None
        self.failure = "answer"  # a start's failure; the turns' otherwise
        self.episode: Any = None
        self.start_error: Exception | None = None
        self.result: Any = None  # the last step's StepResult, as the episode gave it
        self.done = False
        self.closed = False

    @property
    def truncated(self) -> bool:
        """Whether the turn limit, not the episode, ended it."""
        return bool(getattr(self.result, "truncated", False))

    def open(self) -> bool:
        """Start the episode; a start that raises ends the trajectory as ``env_error`` with the
        class the exception names (kept in :attr:`start_error`) and returns False."""
        try:
            self.episode = open_episode(self.domain, self.task)
        except Exception as exc:  # noqa: BLE001 - a broken episode is data
            self.start_error, self.done = exc, True
            self.status, self.error = "env_error", f"start() raised {type(exc).__name__}: {exc}"
            self.failure = of_exception(exc)
            return False
        return True

    def turn(self, completion: str | None, messages: Conversation | None = None,
             **generation: Any) -> Turn:
        """The next turn, unscored (the range minimum until :meth:`step`)."""
        return Turn(len(self.turns), messages or [], completion, Score(self.lo), **generation)

    def step(self, turn: Turn) -> None:
        """Score ``turn`` with the episode (in this thread) and keep it."""
        start = time.perf_counter()
        try:
            result = self.episode.step(turn.completion)
        except Exception as exc:  # noqa: BLE001 - an episode crash is data
            turn.verify_s = time.perf_counter() - start
            self.crash(turn, exc)
            return
        turn.verify_s = time.perf_counter() - start
        self.record(turn, result)

    def record(self, turn: Turn, result: Any) -> None:
        """Keep ``turn`` scored by an episode step's ``result``; a score that cannot be kept
        (a component that is no number) is the episode's crash."""
        try:
            apply_step(turn, result.score, getattr(result, "info", None) or {},
                       result.observation)
        except Exception as exc:  # noqa: BLE001 - a plugin episode's malformed Score
            self.crash(turn, exc)
            return
        self.result = result
        self.turns.append(turn)
        self.done = ended(result)

    def crash(self, turn: Turn, exc: Exception) -> None:
        """End the episode on a step that raised ``exc`` (its class is the failure's)."""
        self.end(turn, "env_error", f"step() raised {type(exc).__name__}: {exc}",
                 of_exception(exc))

    def end(self, turn: Turn, status: str, error: str, failure: str) -> None:
        """End the episode on ``turn``, which could not be scored (see :meth:`Turn.end`)."""
        turn.end(status, error, failure)
        self.turns.append(turn)
        self.status = status if status in ERROR_STATUSES else "env_error"
        self.error = turn.score.error
        self.done = True

    @property
    def messages(self) -> Conversation:
        """The last step's messages (a tool turn's call and results); none once done."""
        if self.done or self.result is None:
            return []
        return jsonable([dict(m) for m in getattr(self.result, "messages", None) or []]) or []

    def value(self) -> float:
        """The return so far: what the trajectory would earn if it ended now."""
        return final_reward(self.turns, self.lo, self.discount)[0]

    def finish(self, wall_s: float = 0.0) -> Trajectory:
        """The trajectory, with its reward, status and failure class settled; ``wall_s`` is
        the time it took, as its caller counts it."""
        reward, passed, first = final_reward(self.turns, self.lo, self.discount)
        status, error = self.status, self.error
        if status is None:
            status = "passed" if passed else "failed"
            error = next((t.score.error for t in reversed(self.turns) if t.score.error), None)
        failure = self.failure if not is_trainable(self.failure) else \
            trajectory_failure(self.turns)
        return Trajectory(self.domain.id, self.task, self.sample_index, self.job_key,
                          turns=self.turns, reward=reward,
                          passed=passed and is_trainable(failure), first_pass_attempt=first,
                          status=status, error=error, failure=failure,
                          started_at=self.started_at, wall_s=wall_s,
                          provenance=self.provenance)

    def close(self) -> None:
        """Release the episode's resources; once, however it ended."""
        if not self.closed and self.episode is not None:
            self.closed = True
            close_episode(self.episode)
