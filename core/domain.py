"""Domains: a task source plus a verifier, built lazily from a manifest.

Plugin authors subclass :class:`Domain` and override :meth:`Domain.generate` (make one task from a
seeded ``random.Random``) and, unless the manifest names a reusable verifier, :meth:`Domain.check`
(judge one completion). The base class turns those into the safe public surface: deterministic
:meth:`sample`, and :meth:`verify`, which never raises and always returns a reward inside the
declared range computed as the declared weighted sum of components.

Multi-turn domains override :meth:`Domain.start` to return their own :class:`Episode`; the default
episode verifies each turn and sends the verifier's feedback back for a repair.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlhub import failures
from rlhub.errors import VerifierError
from rlhub.manifest import Manifest
from rlhub.task import Score, Task, clamp_reward, task_id, task_rng

if TYPE_CHECKING:
    from rlhub.protocols import RegistryLike, ServicesLike


@dataclass
class Verdict:
    """What a check found, before weighting: component values, pass flag, feedback, exec result.

    ``error`` records a failure the check recovered from (e.g. a judge that was down and a
    configured fallback value used instead); it lands in ``Score.error``. ``failure`` names the
    failure class when the check knows it (``"judge"`` for that fallback); left None, it follows
    from ``passed`` and the sandbox status in ``exec`` (:func:`rlhub.failures.of_verdict`).
    """

    components: dict[str, float]
    passed: bool
    feedback: str = ""
    exec: dict[str, Any] | None = None
    error: str | None = None
    failure: str | None = None

    def __post_init__(self) -> None:
        if self.failure is not None:
            failures.check_failure(self.failure)


@dataclass
class StepResult:
    """One environment step: the next observation (None when done), the turn's score, done flag.

    ``truncated`` is set by the driver's turn limit (:class:`rlhub.episodes.TimeLimit`) on the
    step that ran out of turns; an episode leaves it False.
    ``messages`` is set on a turn that called tools (:mod:`rlhub.tools`): the assistant's message
    as the episode read it (its ``tool_calls``, ids ``call_<turn>_<k>``), then one ``tool``
    message per call with its result. Chat consumers append these instead of the observation,
    which holds the same results as text for consumers that only speak text."""

    observation: str | None
    score: Score
    done: bool
    info: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False


class Episode:
    """A multi-turn interaction with one task; the default repairs on verifier feedback.

    ``step(completion)`` scores the completion; the episode is done after a pass or after a
    failure that is not the model's (a repair cannot fix a crashed sandbox). Otherwise the
    observation is the feedback, sent to the policy as a user message. The turn limit
    (``turns.max_turns``) is not the episode's to count: every driver plays it inside
    :class:`rlhub.episodes.TimeLimit` (:func:`rlhub.episodes.open_episode`).
    Subclasses (tool use, dialogue) return tool output as observations and score only the answer.
    """

    def __init__(self, domain: Domain, task: Task):
        self.domain = domain
        self.task = task
        self.turn = 0

    def step(self, completion: str) -> StepResult:
        self.turn += 1
        score = self.domain.verify(self.task, completion)
        done = score.passed or not score.trainable
        observation = None if done else repair_message(score)
        return StepResult(observation, score, done)

    def close(self) -> None:
        """Release what the episode holds (a workspace, say); called once its driver is done
        with it, finished or not (Gymnasium's ``env.close``). Closing twice is harmless."""


def close_episode(episode: Any) -> None:
    """``episode.close()`` when it has one (an episode that does not subclass :class:`Episode`
    may not); a failure to release is swallowed: it never changes what the episode scored."""
    close = getattr(episode, "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # noqa: BLE001 - a failed release does not change a score
            pass


def repair_message(score: Score) -> str:
    """The user message that asks for a repair after a failed attempt."""
    detail = score.feedback or score.error or "The answer was not accepted."
    return f"Your answer did not pass.\n{detail}\nPlease fix it and answer again."


class Domain:
    """Base class of every domain; see the module docstring for what to override.

    ``registry`` is the registry that built the domain (set by :meth:`rlhub.Registry.get`): its
    catalog of domains and manifests. ``services`` are that registry's services (or services set
    directly, :class:`rlhub.services.Services`): reach named verifiers
    (``services.verifier(name, options)``), sandbox backends (``services.sandbox().run(request)``),
    workspaces and languages through them.
    """

    _registry: RegistryLike | None = None
    _services: ServicesLike | None = None

    def __init__(self, manifest: Manifest):
        self.manifest = manifest
        self.params: dict[str, Any] = manifest.data.get("params", {})
        self._verifier: Any = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}>"

    @property
    def id(self) -> str:
        return self.manifest.id

    # -- task source -------------------------------------------------------------------------

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        """Return ``{prompt, answer, gold?, meta?}`` for one task, using only ``rng`` for chance."""
        raise NotImplementedError(f"{type(self).__name__} must implement generate() or task()")

    def task(self, split: str, seed: int, index: int) -> Task:
        """The task at (split, seed, index): the same in every process for a given domain version."""
        self._check_split(split)
        rng = task_rng(self.id, self.manifest.version, split, seed, index)
        made = self.generate(rng, split, index)
        return Task(
            id=made.get("id") or task_id(self.id, split, seed, index),
            domain=self.id,
            prompt=made["prompt"],
            answer=made.get("answer"),
            gold=made.get("gold"),
            meta=made.get("meta", {}),
        )

    def sample(self, n: int, *, split: str = "train", seed: int = 0, start: int = 0) -> list[Task]:
        """``n`` consecutive tasks starting at ``start``."""
        return [self.task(split, seed, i) for i in range(start, start + n)]

    def _check_split(self, split: str) -> None:
        splits = self.manifest.data["splits"]
        if split not in splits:
            raise ValueError(f"domain {self.id!r}: expected a split in {splits}, found {split!r}")

    # -- verification ------------------------------------------------------------------------

    @property
    def verifier(self) -> Any:
        """The named verifier from the manifest, built on first use."""
        if self._verifier is None:
            spec = self.manifest.data.get("verifier")
            if not spec:
                raise VerifierError(f"domain {self.id!r} names no verifier and overrides no check()")
            self._verifier = self.services.verifier(spec["name"], spec.get("options", {}))
        return self._verifier

    @property
    def registry(self) -> RegistryLike:
        """The registry that built this domain; one made outside a registry has none to use."""
        if self._registry is None:
            raise VerifierError(f"domain {self.id!r} was not built by a registry, so it has no "
                                "verifiers or sandboxes to use; get it with registry.get(id)")
        return self._registry

    @registry.setter
    def registry(self, registry: RegistryLike) -> None:
        self._registry = registry

    @property
    def services(self) -> ServicesLike:
        """The services of the registry that built this domain (or was set as its
        ``registry``)."""
        return self._services if self._services is not None else self.registry.services

    @services.setter
    def services(self, services: ServicesLike) -> None:
        self._services = services

    def check(self, task: Task, completion: str) -> Verdict:
        """Judge one completion. Override, or name a reusable verifier in the manifest."""
        return self.verifier.check(task, completion)

    def verify(self, task: Task, completion: str) -> Score:
        """Score a completion. Never raises: a crash becomes ``reward = min`` with ``error`` set
        and the failure class the exception names (``verifier`` unless it says otherwise)."""
        lo, _ = self.manifest.reward_range
        try:
            if not isinstance(completion, str):
                raise TypeError(f"expected the completion as str, found {type(completion).__name__}")
            verdict = self.check(task, completion)
        except Exception as exc:  # noqa: BLE001 - a verifier crash is data, not a crash of rlhub
            components = {name: 0.0 for name in self.manifest.components}
            return Score(lo, components, False, "", f"{type(exc).__name__}: {exc}",
                         failure=failures.of_exception(exc))
        return self.finalize(verdict)

    def finalize(self, verdict: Verdict) -> Score:
        """Weight and clamp a verdict's components into the declared reward."""
        lo, hi = self.manifest.reward_range
        components: dict[str, float] = {}
        total = 0.0
        for name, spec in self.manifest.components.items():
            clo, chi = spec.get("range", [0, 1])
            value = clamp_reward(verdict.components.get(name, clo), clo, chi)
            components[name] = value
            total += spec["weight"] * value
        failure = verdict.failure or failures.of_verdict(bool(verdict.passed), verdict.exec)
        passed = bool(verdict.passed) and failures.is_trainable(failure)
        return Score(clamp_reward(total, lo, hi), components, passed, verdict.feedback,
                     verdict.error, verdict.exec, failure)

    # -- multi-turn --------------------------------------------------------------------------

    def tool_specs(self) -> list[dict[str, Any]]:
        """The tools this domain's episodes accept, in OpenAI's ``tools`` form (none here);
        policies with a tools API receive them with every turn (:mod:`rlhub.tools`)."""
        return []

    def start(self, task: Task) -> Episode:
        """Begin an episode on ``task``; multi-turn domains return their own Episode subclass."""
        return Episode(self, task)
