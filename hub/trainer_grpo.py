"""TRL's GRPOTrainer wired to the hub: the scheduler picks prompts, domains verify, the store records.

:class:`HubGRPOTrainer` subclasses ``trl.GRPOTrainer`` at one seam,
``_generate_and_score_completions``: it ignores the placeholder rows TRL's dataloader hands it and
generates for the tasks :class:`BatchSource` draws from the adaptive scheduler instead, each row
carrying its domain's current temperature (:class:`~rlhub.hub.trainer_text.RowTemperature`, also
applied in the loss through ``_compute_loss``). The reward function is a :class:`Recorder`: it
verifies every completion with its domain (the sandbox for code domains), turns each into a
:class:`~rlhub.rollout.Trajectory` with provenance for the store and the monitor, and keeps the
batch's group rewards for the scheduler.

Zero-variance groups are refilled one step late: ``scheduler.observe`` returns how many groups of
a domain carried no signal, ``scheduler.refill`` draws as many new tasks of that domain, and they
open the next batch (at most ``max_refill_frac`` of it), so informative groups keep the intended
mixture while every batch keeps TRL's fixed size.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

import torch
from rlhub.hub.trainer_eval import ScoreCache
from rlhub.hub.trainer_text import RowTemperature, render_prompt
from rlhub.rollout import Trajectory, Turn, initial_messages
from rlhub.task import Task
from trl import GRPOTrainer


def by_domain(tasks: list[Task], groups: list[list[float]]) -> dict[str, list[list[float]]]:
    """``groups[i]`` (from ``tasks[i]``) collected per domain, in order."""
    out: dict[str, list[list[float]]] = {}
    for task, group in zip(tasks, groups):
        out.setdefault(task.domain, []).append(group)
    return out


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

    def observe(self, tasks: list[Task], groups: list[list[float]]) -> dict[str, int]:
        """Feed one step's groups (``groups[i]`` from ``tasks[i]``) to the scheduler; queue refills.

        :return: The zero-variance group count of each domain, as ``scheduler.observe`` says.
        """
        retry: dict[str, int] = {}
        for task, group in zip(tasks, groups):
            if max(group) == min(group) and task.id not in self._refill_ids:
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
        self.rewards: list[float] = []

    def __call__(self, prompts: list[Any], completions: list[str], task_index: list[int],
                 **_: Any) -> list[float]:
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
        self.rewards = [float(s.reward) for s in scores]
        return self.rewards

    def _trajectory(self, task: Task, sample: int, text: str, score: Any,
                    verify_s: float) -> Trajectory:
        turn = Turn(0, initial_messages(task), text, score.reward,
                    {k: float(v) for k, v in score.components.items()}, score.passed,
                    feedback=score.feedback, error=score.error,
                    exec_status=(score.exec or {}).get("status"), exec=score.exec,
                    gen_s=self.gen_s, verify_s=verify_s, failure=score.failure)
        return Trajectory(task.domain, task, sample, f"{task.id}#step{self.step}/{sample}",
                          turns=[turn], reward=float(score.reward), passed=bool(score.passed),
                          first_pass_attempt=0 if score.passed else None,
                          status="passed" if score.passed else "failed", error=score.error,
                          failure=score.failure, wall_s=self.gen_s + verify_s,
                          provenance=self.provenance[task.domain])


class HubGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose batches come from a :class:`BatchSource` (see the module docstring)."""

    def __init__(self, *args: Any, source: BatchSource, recorder: Recorder,
                 temperatures: Callable[[str], float], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.source = source
        self.recorder = recorder
        self.temperatures = temperatures
        self.row_temperature = RowTemperature(self.model)
        self.last_groups: dict[str, list[list[float]]] = {}
        self.last_zero: dict[str, int] = {}

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        if not self.model.training:
            return super()._generate_and_score_completions(inputs)
        tasks = self.source.next_tasks()
        g = self.num_generations
        rows = [{"prompt": render_prompt(self.processing_class, t), "task_index": i}
                for i, t in enumerate(tasks) for _ in range(g)]
        temps = torch.tensor([self.temperatures(t.domain) for t in tasks for _ in range(g)])
        self.recorder.tasks, self.recorder.step = tasks, self.state.global_step
        with self.row_temperature.using(temps):
            out = super()._generate_and_score_completions(rows)
        out["row_temperature"] = temps
        self._observe(tasks, self.recorder.rewards, g)
        return out

    def _generate(self, prompts: list[Any]) -> Any:
        start = time.perf_counter()
        result = super()._generate(prompts)
        self.recorder.gen_s = (time.perf_counter() - start) / max(1, len(prompts))
        return result

    def _observe(self, tasks: list[Task], rewards: list[float], g: int) -> None:
        groups = [rewards[i * g:(i + 1) * g] for i in range(len(tasks))]
        self.last_groups = by_domain(tasks, groups)
        self.last_zero = self.source.observe(tasks, groups)

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        with self.row_temperature.using(inputs.get("row_temperature")):
            return super()._compute_loss(model, inputs)
