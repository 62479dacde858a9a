"""TRL's GRPOTrainer wired to rlhub: the scheduler picks prompts, domains verify, the store records.

:class:`HubGRPOTrainer` subclasses ``trl.GRPOTrainer`` at one seam,
``_generate_and_score_completions``: it ignores the placeholder rows TRL's dataloader hands it and
generates for the tasks :class:`BatchSource` draws from the adaptive scheduler instead, each row
carrying its domain's current temperature (:class:`~rlhub.integrations.trainer.text.RowTemperature`, also
applied in the loss through ``_compute_loss``). The reward function is a :class:`Recorder`: it
verifies every completion with its domain (the sandbox for code domains), turns each into a
:class:`~rlhub.rollout.Trajectory` with provenance for the store and the monitor, and keeps the
batch's group rewards for the scheduler.

Faults that are not the model's (:mod:`rlhub.failures`: a sandbox down, a crashed verifier, an
unreachable judge) never reach the loss. The :class:`~rlhub.integrations.trainer.heldout.ScoreCache` retries
them a bounded number of times; a sample whose fault persists gets the reward ``None``, and
:func:`group_advantages` takes each group's mean and standard deviation over its trainable
samples only, gives the faulty ones advantage 0, and their completion tokens leave the loss mask
(and the token count that normalises the loss). The scheduler and the temperature control see
the same groups without them.

Zero-variance groups are refilled one step late: ``scheduler.observe`` returns how many groups of
a domain carried no signal, ``scheduler.refill`` draws as many new tasks of that domain, and they
open the next batch (at most ``max_refill_frac`` of it), so informative groups keep the intended
mixture while every batch keeps TRL's fixed size.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import torch
from rlhub.integrations.trainer.heldout import ScoreCache
from rlhub.integrations.trainer.runfolder import job_key
from rlhub.integrations.trainer.text import RowTemperature, prompt_budget, render_prompt
from rlhub.domain import StepResult
from rlhub.episodes import EpisodeDriver, Trajectory, initial_messages
from rlhub.task import Task
from trl import GRPOTrainer


Group = list[float | None]  # one reward per completion; None: a fault that is not the model's


def by_domain(tasks: list[Task], groups: list[Group]) -> dict[str, list[Group]]:
    """``groups[i]`` (from ``tasks[i]``) collected per domain, in order."""
    out: dict[str, list[Group]] = {}
    for task, group in zip(tasks, groups):
        out.setdefault(task.domain, []).append(group)
    return out


def scored(group: Group) -> list[float]:
    """The rewards of a group that are the model's own outcomes."""
    return [r for r in group if r is not None]


def group_advantages(rewards: Sequence[float | None], generations: int, *,
                     scale: bool = True) -> torch.Tensor:
    """GRPO advantages over each group's trainable samples; 0 for a fault and a lone sample.

    ``(r - mean) / (std + 1e-4)`` (``r - mean`` unless ``scale``), with the mean and the unbiased
    standard deviation of the group's non-None rewards, exactly TRL's ``scale_rewards="group"``
    over the samples that remain.
    """
    r = torch.tensor([float("nan") if x is None else float(x) for x in rewards]).view(
        -1, generations)
    keep = ~torch.isnan(r)
    n = keep.sum(dim=1, keepdim=True)
    values = torch.where(keep, r, torch.zeros_like(r))
    mean = values.sum(dim=1, keepdim=True) / n.clamp(min=1)
    var = (torch.where(keep, r - mean, torch.zeros_like(r)) ** 2).sum(dim=1, keepdim=True)
    std = (var / (n - 1).clamp(min=1)).sqrt()
    adv = (values - mean) / (std + 1e-4) if scale else values - mean
    return torch.where(keep & (n > 1), adv, torch.zeros_like(adv)).view(-1)


class BatchSource:
    """Each step's tasks: refills owed from the last step first, then a fresh scheduler sample.

    A zero-variance group of a fresh task is retried once with a new task of its domain (a
    refill); a refill's own zero-variance group is not retried again (DAPO's bounded rounds), so
    a domain the policy cannot yet solve keeps its scheduled share instead of flooding batches.
    """

    def __init__(self, scheduler: Any, prompts_per_step: int, max_refill_frac: float = 0.5):
        self.scheduler = scheduler
        self.prompts = prompts_per_step
        self.max_refill = int(prompts_per_step * max_refill_frac)
        self.refills: deque[Task] = deque()
        self._refill_ids: set[str] = set()
        self.refilled = 0

    def next_tasks(self) -> list[Task]:
        take = [self.refills.popleft() for _ in range(min(len(self.refills), self.max_refill))]
        return take + self.scheduler.sample(self.prompts - len(take))

    def observe(self, tasks: list[Task], groups: list[Group]) -> dict[str, int]:
        """Feed one step's groups (``groups[i]`` from ``tasks[i]``) to the scheduler; queue refills.

        A ``None`` reward (a fault) is passed on for the scheduler to leave out; a group with no
        trainable reward is not refilled.

        :return: The zero-variance group count of each domain, as ``scheduler.observe`` says.
        """
        retry: dict[str, int] = {}
        for task, group in zip(tasks, groups):
            values = scored(group)
            if values and max(values) == min(values) and task.id not in self._refill_ids:
                retry[task.domain] = retry.get(task.domain, 0) + 1
        self._refill_ids.difference_update(t.id for t in tasks)
        zero = {d: self.scheduler.observe(d, g) for d, g in by_domain(tasks, groups).items()}
        room = self.max_refill - len(self.refills)
        for domain, n in retry.items():
            n = min(n, room)
            if n > 0:
                fresh = self.scheduler.refill(domain, n)
                self.refills.extend(fresh)
                self._refill_ids.update(t.id for t in fresh)
                self.refilled += n
                room -= n
        return zero


class Recorder:
    """TRL reward function: verifies, records trajectories, collects the step's group rewards."""

    __name__ = "rlhub_domain_reward"  # TRL names the reward column after the function

    def __init__(self, domains: dict[str, Any], cache: ScoreCache, provenance: dict[str, dict],
                 sink: Callable[[list[Trajectory]], None]):
        self.domains = domains
        self.cache = cache
        self.provenance = provenance
        self.sink = sink
        self.tasks: list[Task] = []
        self.step = 0
        self.gen_s = 0.0
        self.rewards: list[float | None] = []

    def __call__(self, prompts: list[Any], completions: list[str], task_index: list[int],
                 **_: Any) -> list[float | None]:
        """The reward of each completion; None where verification failed through no fault of
        the model's (after the cache's retries), which TRL and :func:`group_advantages` skip."""
        tasks = [self.tasks[i] for i in task_index]
        start = time.perf_counter()
        scores = self.cache.scores(tasks, completions)
        verify_s = (time.perf_counter() - start) / max(1, len(tasks))
        seen: dict[int, int] = {}
        trajectories = []
        for task, index, text, score in zip(tasks, task_index, completions, scores):
            sample = seen[index] = seen.get(index, -1) + 1
            trajectories.append(self._trajectory(task, sample, text, score, verify_s))
        self.sink(trajectories)
        self.rewards = [float(s.reward) if s.trainable else None for s in scores]
        return self.rewards

    def _trajectory(self, task: Task, sample: int, text: str, score: Any,
                    verify_s: float) -> Trajectory:
        """The one-turn episode of ``text``, kept by the episode driver from the cache's
        ``score`` (the turn already verified, with its retries)."""
        driver = EpisodeDriver(self.domains[task.domain], task, sample_index=sample,
                               job_key=job_key(task.id, self.step, sample),
                               provenance=self.provenance[task.domain])
        turn = driver.turn(text, initial_messages(task), gen_s=self.gen_s)
        driver.record(turn, StepResult(None, score, True))
        turn.verify_s = verify_s
        return driver.finish(wall_s=self.gen_s + verify_s)


def _quiet_none_rewards(record: logging.LogRecord) -> bool:
    """Drop TRL's warning about None rewards: rlhub returns None on purpose for a fault, and
    counts faults itself (``failures/<domain>/<class>`` in TensorBoard, the run's summary)."""
    return not record.getMessage().startswith("All reward functions returned None")


class HubGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose batches come from a :class:`BatchSource` (see the module docstring)."""

    def __init__(self, *args: Any, source: BatchSource, recorder: Recorder,
                 temperatures: Callable[[str], float], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.source = source
        self.recorder = recorder
        self.temperatures = temperatures
        scale = getattr(self.args, "scale_rewards", "group")
        if scale not in ("group", "none", True, False):
            raise ValueError(f"rlhub's GRPO trainer: expected scale_rewards 'group' or 'none' "
                             f"(advantages are taken per group, over trainable samples), found "
                             f"{scale!r}")
        self.scale_by_std = scale in ("group", True)
        logging.getLogger("trl.trainer.grpo_trainer").addFilter(_quiet_none_rewards)
        self.row_temperature = RowTemperature(self.model)
        self.last_groups: dict[str, list[list[float]]] = {}
        self.last_zero: dict[str, int] = {}

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        if not self.model.training:
            return super()._generate_and_score_completions(inputs)
        tasks = self.source.next_tasks()
        g = self.num_generations
        budget = prompt_budget(self.model, self.max_completion_length)
        rows = [{"prompt": render_prompt(self.processing_class, t, budget), "task_index": i}
                for i, t in enumerate(tasks) for _ in range(g)]
        temps = torch.tensor([self.temperatures(t.domain) for t in tasks for _ in range(g)])
        self.recorder.tasks, self.recorder.step = tasks, self.state.global_step
        with self.row_temperature.using(temps):
            out = super()._generate_and_score_completions(rows)
        out["row_temperature"] = temps
        self._mask_faults(out, self.recorder.rewards, g)
        self._observe(tasks, self.recorder.rewards, g)
        return out

    def _mask_faults(self, out: dict[str, Any], rewards: list[float | None], g: int) -> None:
        """Advantages over trainable samples only; faulty completions leave the loss mask."""
        out["advantages"] = group_advantages(rewards, g, scale=self.scale_by_std).to(
            out["advantages"].device, out["advantages"].dtype)
        keep = torch.tensor([r is not None for r in rewards], device=out["completion_mask"].device)
        out["completion_mask"] = out["completion_mask"] * keep.unsqueeze(1).to(
            out["completion_mask"].dtype)
        if "num_items_in_batch" in out:
            out["num_items_in_batch"] = out["completion_mask"].sum()

    def _generate(self, prompts: list[Any]) -> Any:
        start = time.perf_counter()
        result = super()._generate(prompts)
        self.recorder.gen_s = (time.perf_counter() - start) / max(1, len(prompts))
        return result

    def _observe(self, tasks: list[Task], rewards: list[float | None], g: int) -> None:
        groups = [rewards[i * g:(i + 1) * g] for i in range(len(tasks))]
        self.last_groups = {d: [v for v in map(scored, gs) if v]
                            for d, gs in by_domain(tasks, groups).items()}
        self.last_zero = self.source.observe(tasks, groups)

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        with self.row_temperature.using(inputs.get("row_temperature")):
            return super()._compute_loss(model, inputs)
