"""Describe installed verifiers environments as rlhub manifests (run in a child interpreter).

``python -m rlhub_verifiers.describe`` reads a JSON list of sources (see
:class:`rlhub_verifiers.discover.Source`) on stdin and prints one JSON list: for each source
``{"id", "manifest"}`` or ``{"id", "excluded": reason}``. It imports each environment through
verifiers' own loaders and plays one probe episode (an empty reply) to learn the reward names and
weights the task records; a gold completion is offered when the task data has an ``answer`` that
earns the maximum, as is or in ``\\boxed{}``, on the first tasks.

An environment is left out, with the reason, when a text policy cannot play it: several agent
seats, tasks in a container image, tasks without a prompt, rewards that read the agent's runtime
or call an LLM judge, tools that keep state through verifiers' state channel, no positive reward
weight, or a failure to load or to score.
"""

from __future__ import annotations

import inspect
import json
import sys
from typing import Any

from rlhub_verifiers.naming import component, domain_id, summary, version
from rlhub_verifiers.source import Source, episode_rewards

PROBE_TIMEOUT_S = 120.0
GOLD_PROBES = 3
MULTI_TURN_DEFAULT = 10


class Excluded(Exception):
    """The environment cannot be offered; the message says why."""


def main() -> None:
    sources = json.loads(sys.stdin.read())
    print(json.dumps([describe(src) for src in sources]))


def describe(src: dict[str, Any]) -> dict[str, Any]:
    did = domain_id(src["taskset"])
    try:
        return {"id": did, "manifest": manifest(src, did)}
    except Excluded as exc:
        return {"id": did, "excluded": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a broken environment is reported, never fatal
        return {"id": did, "excluded": f"loading it failed: {type(exc).__name__}: {exc}"[:500]}


def manifest(src: dict[str, Any], did: str) -> dict[str, Any]:
    source = Source(src["taskset"])
    first = _first_task(source)
    _check_playable(source, first)
    weights = _probe_rewards(source, first)
    lo = sum(min(0.0, w) for w in weights.values())
    hi = sum(max(0.0, w) for w in weights.values())
    if hi <= lo:
        raise Excluded("none of its rewards has a weight other than 0")
    multi = source.env_class.__name__ != "SingleAgentEnv" or bool(_toolsets(first))
    gold = _gold_mode(source, hi)
    return {
        "id": did, "version": version(src["version"]),
        "summary": summary(src["summary"], src["taskset"]),
        "license": src["license"],
        "tags": ["verifiers", "bridged", "multi-turn" if multi else "single-turn"]
        + (["tools"] if _toolsets(first) else []),
        "determinism": "seeded", "gold": gold is not None, "size": source.size,
        "reward": {"range": [lo, hi], "components": {
            component(name): {"weight": w, "description": f"verifiers reward {name!r}"}
            for name, w in weights.items()}},
        "turns": {"max_turns": _max_turns(source) if multi else 1, "repair_discount": 1.0},
        "verify_timeout_s": 60, "factory": "rlhub_verifiers.domain:make",
        "params": {"taskset": src["taskset"], "gold": gold,
                   "components": {name: component(name) for name in weights},
                   "bridge": {"plugin": "rlhub-verifiers", "source": src["distribution"],
                              "source_version": src["version"]}},
    }


def _first_task(source: Source) -> Any:
    try:
        return source.task_at(0)
    except IndexError:
        raise Excluded("its taskset yields no tasks") from None


def _check_playable(source: Source, task: Any) -> None:
    seats = source.agent_names()
    if len(seats) != 1:
        raise Excluded(f"its env has {len(seats)} agent seats ({', '.join(seats)}); an rlhub "
                       "domain plays one policy")
    if getattr(type(task), "NEEDS_CONTAINER", False) or task.data.image:
        raise Excluded("its tasks run in a container image that a text policy cannot act in")
    if task.data.prompt is None:
        raise Excluded("its tasks have no prompt (the env opens the conversation)")
    if task.config.judges:
        raise Excluded("it is scored by an LLM judge (verifiers judges are not bridged)")
    for fn in task.hooks("reward"):
        param = inspect.signature(fn).parameters.get("runtime")
        if param is not None and param.default is inspect.Parameter.empty:
            raise Excluded(f"its reward {fn.__name__!r} reads the agent's runtime (files a "
                           "harness leaves), which a text policy does not produce")
    for toolset in _toolsets(task):
        if getattr(toolset, "_state_cls", None) is not None and \
                toolset._state_cls.__name__ != "State":
            raise Excluded(f"its tool server {type(toolset).__name__} keeps state through "
                           "verifiers' state channel")


def _toolsets(task: Any) -> list[Any]:
    return list(type(task).toolsets(task.config))


def _play(source: Source, task: Any, completion: str) -> dict[str, tuple[float, float]]:
    channel, future = source.start(task)
    channel.give(completion, final=True)
    channel.next_event(PROBE_TIMEOUT_S)
    return episode_rewards(future)


def _probe_rewards(source: Source, task: Any) -> dict[str, float]:
    try:
        rewards = _play(source, task, "")
    except (RuntimeError, TimeoutError) as exc:
        raise Excluded(f"a probe episode failed: {exc}") from None
    if not rewards:
        raise Excluded("a probe episode recorded no reward")
    names = {component(n) for n in rewards}
    if len(names) != len(rewards):
        raise Excluded(f"its reward names {sorted(rewards)} collide as rlhub components")
    return {name: weight for name, (_, weight) in sorted(rewards.items())}


def _gold_mode(source: Source, hi: float) -> str | None:
    tasks = [source.task_at(p) for p in range(min(GOLD_PROBES, source.size or GOLD_PROBES))]
    answers = [getattr(t.data, "answer", None) for t in tasks]
    if not all(isinstance(a, str) and a for a in answers):
        return None
    for mode, form in (("answer", "{}"), ("boxed", "\\boxed{{{}}}")):
        if all(_total(_play(source, t, form.format(a))) >= hi - 1e-9
               for t, a in zip(tasks, answers)):
            return mode
    return None


def _total(rewards: dict[str, tuple[float, float]]) -> float:
    return sum(min(max(score, 0.0), 1.0) * weight for score, weight in rewards.values())


def _max_turns(source: Source) -> int:
    for spec in _agent_specs(source).values():
        if getattr(spec, "max_turns", None):
            return int(spec.max_turns)
    return MULTI_TURN_DEFAULT


def _agent_specs(source: Source) -> dict[str, Any]:
    from verifiers.v1.configs.agent import agent_config_fields

    return agent_config_fields(source.config)


if __name__ == "__main__":
    main()
