"""rlhub's domains as a verifiers (0.4) environment, for ``vf-eval``, prime-rl and verifiers' API.

A verifiers environment is a module exporting a ``Taskset`` (and here an ``Env`` and a
``Harness``) through ``__all__``; this module is one, over any rlhub mixture::

    vf-eval rlhub.integrations.exports.verifiers_env --env.taskset.mixture MIX.yaml -n 20 \\
        --model MODEL --client.base-url http://127.0.0.1:8000/v1

    from rlhub.integrations.exports.verifiers_env import load_environment
    env = load_environment(mixture="MIX.yaml")          # a verifiers.v1.Env

The taskset draws ``n`` tasks split across the mixture's domains in exact proportion to their
weights (``rlhub export``'s rule), deterministically in ``(split, seed)``; a task carries its
coordinates (domain, split, seed, index) and is regenerated from them to be scored.
:class:`RlhubEnv` plays each as an rlhub episode: the policy's reply goes to the domain's
``Episode.step`` through rlhub's episode driver (:class:`rlhub.episodes.EpisodeDriver`, the same
done rule, turn limit and reward as ``rlhub eval``), and the observation (the verifier's feedback
for a repair, a tool's output) comes back as the user's next turn. The reward is rlhub's, from its
verifiers and sandbox, with the repair discount: ``lo + (reward - lo) * repair_discount ** k`` for
a pass at repair ``k``; each reward component is recorded as a metric ``rlhub/<component>``. A
failure that is not the model's (rlhub's failure classes: a sandbox, verifier or judge fault) is
never a reward: the episode fails with verifiers' ``SandboxError`` or ``EnvError`` naming it, so
verifiers retries it or leaves it out of training. The harness is verifiers' ``null`` chat loop:
the model only answers, it never executes anything on the host; code runs in rlhub's sandbox
when a domain's verifier runs it.
"""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Any

import verifiers.v1 as vf
from rlhub.failures import is_trainable
from verifiers.v1.harnesses.null import NullHarness, NullHarnessConfig

if TYPE_CHECKING:
    from rlhub.plugins import Registry

MODULE = "rlhub-env"  # the id verifiers resolves (the rlhub_env module re-exports this one)


def entry_registry() -> Any:
    """The process registry: verifiers builds the taskset and the env itself from their
    configs, so this module is an entry point and looks the registry up here, once."""
    from rlhub.plugins import registry

    return registry()


class RlhubData(vf.TaskData):
    """One rlhub task by its coordinates; the task is regenerated from them to be scored, so
    task data arriving over verifiers' env-server wire cannot choose what the verifier checks."""

    domain: str
    split: str
    seed: int
    index: int
    task_id: str

    def rlhub_task(self, registry: Registry) -> Any:
        return registry.get(self.domain).task(self.split, self.seed, self.index)


class RlhubTask(vf.Task[RlhubData]):
    """Scored by :class:`RlhubEnv` (rlhub's episode), not by per-trace reward functions."""

    @property
    def key(self) -> str:
        return self.data.task_id


class RlhubTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``: the mixture and how many tasks to draw from it."""

    mixture: str = ""
    """An rlhub mixture file (YAML or JSON); its domains and weights."""
    n: int = 100
    """Tasks in all, split across the domains by weight."""
    split: str = "test"
    seed: int = 0


class RlhubTaskset(vf.Taskset[RlhubTask, RlhubTasksetConfig]):
    """The mixture's tasks, as ``rlhub export`` draws them."""

    def load(self) -> list[RlhubTask]:
        from rlhub.integrations.openrlhf.export import largest_remainder
        from rlhub.scheduler import Scheduler, load_mixture
        from rlhub.judges import mixture_judges

        cfg = self.config
        if not cfg.mixture:
            raise ValueError("expected --env.taskset.mixture MIX.yaml (an rlhub mixture), "
                             "found none")
        registry = entry_registry()
        mixture = load_mixture(cfg.mixture, registry)
        # the env scores with the mixture's judges
        registry.services.use_judges(mixture_judges(cfg.mixture, registry))
        counts = largest_remainder(cfg.n, Scheduler.from_config(mixture, registry).weights())
        coords = [(d, i) for d, k in counts.items() for i in range(k)]
        random.Random(f"rlhub-env/{cfg.seed}/{cfg.split}/{cfg.n}").shuffle(coords)
        return [self._task(registry, domain, index) for domain, index in coords]

    def _task(self, registry: Registry, domain: str, index: int) -> RlhubTask:
        data = RlhubData(domain=domain, split=self.config.split, seed=self.config.seed,
                         index=index, task_id="", prompt="")
        task = data.rlhub_task(registry)
        data = data.model_copy(update={"task_id": task.id, "name": task.id,
                                       "prompt": _messages(task.prompt)})
        return RlhubTask(data, self.config.task)


def _messages(prompt: Any) -> list[dict[str, str]] | str:
    if isinstance(prompt, str):
        return prompt
    return [{"role": m.get("role", "user"), "content": str(m.get("content", ""))} for m in prompt]


class RlhubEnvConfig(vf.EnvConfig):
    """The one seat: the policy under evaluation or training."""

    agent: vf.AgentConfig = vf.AgentConfig()


class RlhubEnv(vf.Env[RlhubEnvConfig]):
    """Each task played as an rlhub episode; see the module docstring."""

    async def run(self, task: RlhubTask, agents: Any) -> None:
        from rlhub.episodes import EpisodeDriver

        registry = entry_registry()
        domain = registry.get(task.data.domain)
        rlhub_task = await asyncio.to_thread(task.data.rlhub_task, registry)
        driver = EpisodeDriver(domain, rlhub_task)
        trace = None
        try:
            if await asyncio.to_thread(driver.open):
                async with agents.agent.interaction(task) as interaction:
                    trace = interaction.trace
                    segment = await interaction.turn()
                    while not segment.terminated:
                        await asyncio.to_thread(driver.step, driver.turn(segment.last_reply))
                        if driver.done:
                            break
                        segment = await interaction.turn(driver.result.observation)
        finally:  # an episode may hold a workspace
            await asyncio.to_thread(driver.close)
        traj = driver.finish()
        _raise_fault(traj)
        _record(trace, traj)


def _raise_fault(traj: Any) -> None:
    """A failure that is not the model's is never a reward: verifiers retries the episode or
    leaves it out (:mod:`rlhub.failures`)."""
    if not is_trainable(traj.failure):
        kind = vf.SandboxError if traj.failure == "sandbox" else vf.EnvError
        raise kind(f"rlhub: a {traj.failure} failure, not the model's: {traj.error}")


def _record(trace: Any, traj: Any) -> None:
    trace.record_reward("rlhub", traj.reward, 1.0)
    trace.record_metric("rlhub/passed", float(traj.passed))
    last = next((t for t in reversed(traj.turns) if t.attempt), None)
    for name, value in (last.score.components if last else {}).items():
        trace.record_metric(f"rlhub/{name}", float(value))


class RlhubHarness(NullHarness):
    """verifiers' ``null`` chat loop: the model answers; nothing runs on the host."""


RlhubHarnessConfig = NullHarnessConfig


def load_environment(mixture: str, *, n: int = 100, split: str = "test", seed: int = 0,
                     **env: Any) -> Any:
    """A verifiers ``Env`` over ``mixture`` (extra keyword arguments go to its ``EnvConfig``)."""
    config = vf.resolve_env_config({**env, "taskset": {
        "id": MODULE, "mixture": str(mixture), "n": n, "split": split, "seed": seed}})
    return vf.load_environment(config)


__all__ = ["RlhubEnv", "RlhubHarness", "RlhubTaskset", "load_environment"]
