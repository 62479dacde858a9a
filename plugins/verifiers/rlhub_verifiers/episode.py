"""A verifiers episode played by an rlhub policy: the env's own ``run()``, our agents.

verifiers runs an episode as ``Env.run(task, agents)``: the env's code drives its agents
(``agents.agent.run(task)``, or ``agents.player.interaction(task)`` and ``turn(message)`` for a
game or a simulated user), and each agent asks a model through a harness program. The bridge
keeps the env's code and replaces the agents: a :class:`BridgedAgent` records the same
``Trace`` (messages, rewards, stop condition) but takes each reply from a :class:`TurnChannel`,
which the rlhub side feeds one completion per ``Episode.step``. The episode runs on the bridge loop
(:mod:`rlhub_verifiers.aio`); scoring is the task's own ``@vf.reward`` functions
(``Task.score``) and the env's ``finalize``, exactly as verifiers runs them.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.agent import Segment
from verifiers.v1.graph import MessageNode
from verifiers.v1.trace import AgentInfo, TraceTask
from verifiers.v1.types import content_text

from rlhub_verifiers import tools

IDLE_TIMEOUT_S = 600.0


class TurnChannel:
    """Completions from the rlhub side in, observations out; one per episode.

    The env side calls :meth:`reply`; the first call takes the reply to the task's prompt, each
    later call first hands its observation (a user turn, tool results) to the rlhub side. Once
    the rlhub side has marked its last completion ``final``, later calls return None: the
    policy will not speak again and the env's loop ends (a ``terminated`` segment).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.completions: asyncio.Queue[str] = asyncio.Queue()
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.final = False
        self.asked = False

    # -- rlhub side (any thread) ---------------------------------------------------------

    def give(self, completion: str, *, final: bool) -> None:
        self.final = self.final or final
        self.loop.call_soon_threadsafe(self.completions.put_nowait, completion)

    def next_event(self, timeout: float) -> tuple[str, Any]:
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"the verifiers environment did not answer within {timeout:g} s") \
                from None

    # -- env side (bridge loop) ----------------------------------------------------------

    async def reply(self, observation: str | None) -> str | None:
        if self.asked:
            if self.final:
                return None
            self.events.put(("ask", observation or ""))
        self.asked = True
        try:
            return await asyncio.wait_for(self.completions.get(), IDLE_TIMEOUT_S)
        except asyncio.TimeoutError:
            return None  # the rlhub side walked away: end the env's loop


def new_trace(task: Any, name: str) -> Any:
    """A trace of ``task`` holding its system prompt and prompt, as a harness would record."""
    trace = vf.Trace(task=TraceTask(type=type(task).__name__, data=task.data, key=task.key,
                                    hash=task.hash),
                     agent=AgentInfo(config=vf.AgentConfig(), name=name))
    data = task.data
    opening = [vf.SystemMessage(content=data.system_prompt)] if data.system_prompt else []
    prompt = data.prompt
    opening += [vf.UserMessage(content=prompt)] if isinstance(prompt, str) else list(prompt or [])
    for message in opening:
        trace.nodes.append(MessageNode(message=message, parent=_head(trace)))
    return trace


def _head(trace: Any) -> int | None:
    return len(trace.nodes) - 1 if trace.nodes else None


def _append(trace: Any, message: Any, *, sampled: bool = False) -> None:
    trace.nodes.append(MessageNode(message=message, parent=_head(trace), sampled=sampled))


class BridgedAgent:
    """Stands in for a verifiers ``Agent``: same ``run``/``interaction`` surface, replies from
    the channel, tool calls run in-process (:mod:`rlhub_verifiers.tools`)."""

    def __init__(self, name: str, channel: TurnChannel, completed: list[Any]):
        self.name = name
        self.channel = channel
        self.completed = completed

    async def run(self, task: Any, **_: Any) -> Any:
        trace = new_trace(task, self.name)
        specs = _task_tools(task)
        if await self.reply(trace, specs, None) is None:
            trace.stop("max_turns")
        await self.finish(task, trace)
        return trace

    @asynccontextmanager
    async def interaction(self, task: Any, **_: Any) -> AsyncIterator[Interaction]:
        trace = new_trace(task, self.name)
        try:
            yield Interaction(self, trace, _task_tools(task))
        finally:
            await self.finish(task, trace)

    async def reply(self, trace: Any, specs: dict[str, tools.ToolSpec],
                    observation: str | None) -> str | None:
        """The policy's next answer; tool calls are run and answered until one comes."""
        while True:
            completion = await self.channel.reply(observation)
            if completion is None:
                return None
            _append(trace, vf.AssistantMessage(content=completion), sampled=True)
            calls = tools.parse_calls(completion) if specs else []
            if not calls:
                return completion
            observation = await tools.run_calls(specs, calls)
            _append(trace, vf.UserMessage(content=observation))

    async def finish(self, task: Any, trace: Any) -> None:
        """Score the trace with the task's own rewards and hand it to the episode."""
        if trace.stop_condition is None:
            trace.stop("agent_completed")
        trace.is_completed = True
        trace.ok = True
        await task.score(trace, None)
        self.completed.append(trace)


class Interaction:
    """Stands in for ``verifiers.v1.agent.Interaction``: the env is the user, turn by turn."""

    def __init__(self, agent: BridgedAgent, trace: Any, specs: dict[str, tools.ToolSpec]):
        self.agent = agent
        self.trace = trace
        self.specs = specs
        self.over = False

    async def turn(self, message: Any = None) -> Any:
        if self.over:
            raise RuntimeError("the exchange is over (the run ended); read interaction.trace")
        observation = None if message is None else text_of(message)
        if message is not None:
            _append(self.trace, vf.UserMessage(content=observation))
        reply = await self.agent.reply(self.trace, self.specs, observation)
        if reply is None:
            self.over = True
            self.trace.stop("max_turns")
            return Segment(messages=[], terminated=True)
        return Segment(messages=[vf.AssistantMessage(content=reply)])

    async def close(self) -> Any:
        self.over = True
        return self.trace


def text_of(message: Any) -> str:
    """A user turn (a string, or messages typed or as dicts) as text."""
    if isinstance(message, str):
        return message
    parts = [m.get("content", "") if isinstance(m, dict) else content_text(m.content)
             for m in message]
    return "\n".join(str(p) for p in parts if p)


def _task_tools(task: Any) -> dict[str, tools.ToolSpec]:
    toolsets = type(task).toolsets(task.config)
    return tools.tool_specs(toolsets) if toolsets else {}


def bridged_env_class(env_cls: type) -> type:
    """``env_cls`` whose episodes get :class:`BridgedAgent` seats fed by the ``ctx`` channel."""

    def _episode_agents(self: Any, ctx: TurnChannel, completed: list[Any], on_trace: Any,
                        on_discard: Any) -> Any:
        return vf.Agents(self.config, lambda name, _spec: BridgedAgent(name, ctx, completed))

    return type(f"Bridged{env_cls.__name__}", (env_cls,), {"_episode_agents": _episode_agents})


def rewards(episode: Any) -> dict[str, tuple[float, float]]:
    """``{name: (score, weight)}`` summed over the episode's traces."""
    total: dict[str, tuple[float, float]] = {}
    for trace in episode.traces:
        for name, reward in trace.rewards.items():
            if reward is not None:
                score, _ = total.get(name, (0.0, reward.weight))
                total[name] = (score + reward.score, reward.weight)
    return total
