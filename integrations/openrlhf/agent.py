"""The rlhub agent module for OpenRLHF 0.11.2: ``--train.agent_func_path /path/to/rlhub/integrations/openrlhf/agent.py``.

OpenRLHF loads this file by path inside every vLLM engine actor (``_load_agent_executor``) and
builds ``AgentExecutor()``, a :class:`openrlhf.utils.agent.MultiTurnAgentExecutor` over
:class:`AgentInstance`. Building it checks the server
(:func:`rlhub.integrations.openrlhf.client.check_health`): a server that does not answer, or runs without
``--mixture`` while ``RLHUB_SCHEDULE=1``, stops the job at start with a message saying what to
fix. Each sample is an episode of ``rlhub serve``:

* The ``n`` samples of one dataset row form a group (:mod:`rlhub.integrations.openrlhf.group`). A row
  whose label has role ``train`` is replaced, with ``RLHUB_SCHEDULE=1``, by one task that the
  server's scheduler leases to the whole group (one lease key per group, never the label); a row
  of role ``eval`` (OpenRLHF's eval dataset) is always played as written and never reported.
* ``step`` sends the turn's text to ``/v1/episodes/{id}/step`` and returns the change of the
  episode's return, so the step rewards sum to the rlhub trajectory reward (repair discount
  included). The next user turn is built from the action's token ids
  (:meth:`rlhub.integrations.openrlhf.chat.ChatFormat.reply`): vLLM keeps the stop token in the ids only.
* Every call carries a request key and is retried within one deadline; a lost episode (a server
  restart) or a step that met an infrastructure failure is replayed on a new episode up to
  ``RLHUB_INFRA_RETRIES`` times. A failure that persists voids the sample's whole group (every
  member gets the domain's minimum and score 0; see :func:`rlhub.integrations.openrlhf.group.settle`), and
  when no group settles for ``RLHUB_OUTAGE_BUDGET_S`` seconds the job stops.
* When the group is done (episodes that OpenRLHF cut at its length limit are closed then), a
  training group that was not voided goes to the server's scheduler in one idempotent report;
  ``scores`` and the fixed ``extra_logs`` keys of :data:`rlhub.integrations.server.protocol.LOG_KEYS`
  (``trainable``, ``failure_<class>``, ``retries``, ...) are filled in for every member.
* In repair turns the temperature may rise by ``RLHUB_REPAIR_TEMPERATURE_STEP`` per failed attempt,
  up to ``RLHUB_MAX_TEMPERATURE`` (off by default: it makes repair turns off-policy).

Environment: ``RLHUB_SERVER_URL`` (required), ``RLHUB_SCHEDULE``, ``RLHUB_HTTP_DEADLINE_S``
(180), ``RLHUB_STARTUP_TIMEOUT_S`` (60), ``RLHUB_INFRA_RETRIES`` (1), ``RLHUB_OUTAGE_BUDGET_S``
(600), ``RLHUB_REPAIR_TEMPERATURE_STEP``, ``RLHUB_MAX_TEMPERATURE``. TRAINING.md says what a user
can rely on.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import logging
import os
from typing import Any, NamedTuple

from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor
from rlhub.failures import is_trainable
from rlhub.integrations.openrlhf.client import ServerClient, ServerRefused, ServerUnavailable, check_health
from rlhub.integrations.openrlhf.episode import Episode, EpisodeFailed, Play, resolve_play
from rlhub.integrations.openrlhf.chat import chat_format
from rlhub.integrations.openrlhf.group import Breaker, Group, GroupBook, Member, Settled, settle
from rlhub.integrations.server.protocol import DEFAULT_STRIP_TOKENS, failure_logs, strip_trailing_tokens

log = logging.getLogger("rlhub.openrlhf_agent")


class AgentSettings(NamedTuple):
    """The module's options, read from the environment (see the module docstring).

    A NamedTuple rather than a dataclass: OpenRLHF executes this file as a module that is not in
    ``sys.modules``, where ``@dataclass`` cannot resolve its annotations.
    """

    server_url: str
    schedule: bool = False
    deadline_s: float = 180.0
    startup_timeout_s: float = 60.0
    infra_retries: int = 1
    outage_budget_s: float = 600.0
    temperature_step: float = 0.0
    max_temperature: float = 1.2

    @classmethod
    def from_env(cls, env: Any = None) -> AgentSettings:
        env = os.environ if env is None else env
        url = env.get("RLHUB_SERVER_URL", "").rstrip("/")
        if not url:
            raise RuntimeError("rlhub agent: expected RLHUB_SERVER_URL (e.g. http://host:8000, "
                               "the address of `rlhub serve`) in the environment, found none")
        return cls(url, env.get("RLHUB_SCHEDULE", "0") in ("1", "true", "yes"),
                   float(env.get("RLHUB_HTTP_DEADLINE_S", "180")),
                   float(env.get("RLHUB_STARTUP_TIMEOUT_S", "60")),
                   int(env.get("RLHUB_INFRA_RETRIES", "1")),
                   float(env.get("RLHUB_OUTAGE_BUDGET_S", "600")),
                   float(env.get("RLHUB_REPAIR_TEMPERATURE_STEP", "0")),
                   float(env.get("RLHUB_MAX_TEMPERATURE", "1.2")))


class Runtime:
    """What the agents of one engine actor share: settings, client, groups, the breaker."""

    def __init__(self, settings: AgentSettings, health: dict[str, Any]):
        self.settings = settings
        self.client = ServerClient(settings.server_url, settings.deadline_s)
        self.groups = GroupBook()
        self.breaker = Breaker(settings.outage_budget_s)
        self.scheduler = bool((health.get("scheduler") or {}).get("enabled"))

    async def settle(self, group: Group) -> Settled:
        """Settle a finished group, feed the scheduler, and count it for the breaker."""
        lo, hi = group.reward_range or (0.0, 1.0)
        settled = settle(group.members, lo, hi)
        if group.crashed:  # its own exception stops the job; nothing to report or count
            return settled
        if settled.fault is None and group.role == "train" and len(group.members) >= 2 \
                and self.scheduler:
            await self._report(group, settled)
        error = next((m.error for m in group.members if m.error), None)
        if settled.fault is not None:
            log.warning("rlhub agent: group %s voided (%s): %s", group.key, settled.fault, error)
        self.breaker.record(settled, error)
        return settled

    async def _report(self, group: Group, settled: Settled) -> None:
        body = {"domain": group.domain, "group_rewards": [settled.rewards]}
        try:
            await self.client.call("POST", "/v1/scheduler/observe", body,
                                   key=f"{group.key}:observe")
        except (ServerUnavailable, ServerRefused) as exc:
            log.warning("rlhub agent: the scheduler did not get group %s: %s", group.key, exc)


_runtime: Runtime | None = None


def runtime() -> Runtime:
    """This process's :class:`Runtime`, built (and the server checked) on first use."""
    global _runtime
    if _runtime is None:
        settings = AgentSettings.from_env()
        health = check_health(settings.server_url, settings.schedule, settings.startup_timeout_s)
        _runtime = Runtime(settings, health)
    return _runtime


class Sample(NamedTuple):
    """One ``execute`` call: its group and member, OpenRLHF's tokenizer, the recording engine."""

    runtime: Runtime
    group: Group
    member: Member
    tokenizer: Any
    engine: RecordingEngine


class RecordingEngine:
    """The vLLM engine as the executor sees it, keeping the last output (for its token ids)."""

    def __init__(self, engine: Any):
        self.engine = engine
        self.last: Any = None

    async def generate(self, *args: Any, **kwargs: Any) -> Any:
        self.last = await self.engine.generate(*args, **kwargs)
        return self.last


_current: contextvars.ContextVar[Sample] = contextvars.ContextVar("rlhub_sample")


class AgentInstance(AgentInstanceBase):
    """One sample's episode on ``rlhub serve``; see the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.sample = _current.get()
        self.format = chat_format(self.sample.tokenizer)
        self.strip = tuple(dict.fromkeys(DEFAULT_STRIP_TOKENS + self.format.stop_texts))

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        s, settings = self.sample, self.sample.runtime.settings
        try:
            play: Play = await s.group.once(lambda: resolve_play(
                s.runtime.client, settings.schedule, s.group, states["label"],
                states["observation"], self.format))
        except EpisodeFailed as exc:
            s.member.hit(exc.failure, str(exc))
            return {"observation": states["observation"]}
        episode = Episode(s.runtime.client, s.member, play.label, settings.infra_retries)
        try:
            s.group.reward_range = await episode.open()
            s.member.episode = episode
        except EpisodeFailed as exc:
            s.member.hit(exc.failure, str(exc))
        return {"observation": play.observation}

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        import torch

        member = self.sample.member
        episode: Episode | None = member.episode
        if episode is None or episode.done:
            return {"rewards": torch.tensor(0.0), "environment_feedback": "", "done": True}
        completion = strip_trailing_tokens(states["action_text"], self.strip)
        try:
            result = await episode.step(completion)
        except EpisodeFailed as exc:
            member.hit(exc.failure, str(exc))
            return {"rewards": torch.tensor(0.0), "environment_feedback": "", "done": True}
        action_ids = list(self.sample.engine.last.outputs[0].token_ids)
        done = episode.done
        return {"rewards": torch.tensor(float(result["reward"])),
                "environment_feedback": "" if done else self.format.reply(
                    action_ids, result["observation"] or ""),
                "done": done,
                "sampling_params": None if done else self._repair_params(states, result["info"])}

    def _repair_params(self, states: dict[str, Any], info: dict[str, Any]) -> Any:
        """Hotter sampling params for the next turn after a failed attempt, or None."""
        settings = self.sample.runtime.settings
        step, params = settings.temperature_step, states.get("sampling_params")
        if step <= 0 or params is None or not info.get("attempt") or info.get("passed"):
            return None
        hotter = copy.deepcopy(params)
        hotter.temperature = min(settings.max_temperature,
                                 float(getattr(params, "temperature", 1.0)) + step)
        return hotter


class AgentExecutor(MultiTurnAgentExecutor):
    """What OpenRLHF's ``_load_agent_executor`` builds (no arguments); checks the server."""

    def __init__(self) -> None:
        super().__init__(AgentInstance)
        self.runtime = runtime()

    async def execute(self, prompt: Any, label: Any, sampling_params: Any, max_length: int,
                      hf_tokenizer: Any, llm_engine: Any, images: Any = None) -> dict[str, Any]:
        group, member = self.runtime.groups.join(sampling_params, prompt, label)
        await asyncio.sleep(0)  # every execute of this rollout call has joined by now
        self.runtime.groups.seal(group)
        sample = Sample(self.runtime, group, member, hf_tokenizer, RecordingEngine(llm_engine))
        token = _current.set(sample)
        try:
            out = await super().execute(prompt, label, sampling_params, max_length, hf_tokenizer,
                                        sample.engine, images)
        except BaseException:
            member.hit("verifier", "the agent raised")
            group.crashed = True
            await group.finish(self.runtime.settle)
            raise
        finally:
            _current.reset(token)
        return await self._finish(sample, out)

    async def _finish(self, sample: Sample, out: dict[str, Any]) -> dict[str, Any]:
        """Close a cut episode, wait for the group, and write the group's verdict into ``out``."""
        if sample.member.episode is not None:
            await sample.member.episode.close()
        sample.member.reward = float(out["reward"])
        settled = await sample.group.finish(self.runtime.settle)
        index = sample.member.index
        out["reward"], out["scores"] = settled.rewards[index], settled.scores[index]
        out["extra_logs"] = _logs(sample.member, settled.fault is None)
        return out


def _logs(member: Member, trainable: bool) -> dict[str, float]:
    logs = failure_logs(member.outcome, **member.logs, retries=float(member.tally.retries),
                        error=float(member.error is not None))
    logs["trainable"] = float(trainable and is_trainable(member.outcome))
    return logs
