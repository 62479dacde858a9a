"""One run of the local trainer: the objects a run holds and the order of its phases.

See :mod:`rlhub.integrations.trainer.local` for the phases and outputs. :class:`TrainingRun` builds the
registry, scheduler, store, monitor, event log, model and held-out set; :class:`StepHooks` is the
``TrainerCallback`` that runs rlhub's side of every GRPO step (controls, logs, store, in-run
evaluation, the time guard).
"""

from __future__ import annotations

import copy
import json
import random
import time
from typing import Any

import torch
from rlhub.integrations.trainer.config import TrainConfig, config_signature
from rlhub.integrations.trainer.controls import EventLog, make_controls, set_learning_rate
from rlhub.integrations.trainer.heldout import HeldOut, HeldOutResult, ScoreCache, compare
from rlhub.integrations.trainer.grpo import BatchSource, HubGRPOTrainer, Recorder
from rlhub.integrations.trainer.runfolder import CURVE, HELDOUT
from rlhub.integrations.trainer.sft import gold_stream, warm_up
from rlhub.integrations.trainer.text import attach_mask_positions, load_saved
from rlhub.rollout import Trajectory
from transformers import PrinterCallback, TrainerCallback

POLICY = "builtin:tiny"


class TrainingRun:
    """Everything one run holds; :meth:`run` executes the phases and returns the summary."""

    def __init__(self, owner: Any, cfg: TrainConfig):
        from rlhub.monitor import Monitor
        from rlhub.policy.tiny import load_tiny
        from rlhub.scheduler import Scheduler
        from rlhub.store import TrajectoryStore

        self.owner, self.cfg, self.out = owner, cfg, owner.out
        torch.set_num_threads(max(1, cfg.threads))
        random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.registry = owner.registry
        self.scheduler = Scheduler.from_config(owner.mixture, self.registry)
        self.ids = list(self.scheduler.weights())
        self.domains = {d: self.registry.get(d) for d in self.ids}
        watched = {d: self.registry.get(d) for d in cfg.heldout.watch if d not in self.domains}
        self.store = TrajectoryStore(str(self.out))
        self.store.check_writable()
        self.monitor = Monitor(str(self.out / "tb"), window=cfg.controls.learning_rate.window,
                               alpha=cfg.controls.learning_rate.alpha, shift_unit="group")
        self.events = EventLog(self.out, self.monitor.writer)
        self.model, self.tokenizer = (load_saved(cfg.init_model) if cfg.init_model
                                      else load_tiny(None, seed=cfg.policy_seed))
        self.temps, self.lr = make_controls(self.ids, cfg.grpo, cfg.controls)
        attach_mask_positions(self.model)
        self.cache = ScoreCache({**self.domains, **watched}, retries=cfg.grpo.infra_retries,
                                backoff_s=cfg.grpo.retry_backoff_s)
        self.heldout = HeldOut({**self.domains, **watched}, cfg.heldout.items, cfg.heldout.seed,
                               self.cache, cfg.grpo.max_completion_tokens)
        self.pending: list[Trajectory] = []
        self.stored = 0
        self.guards: dict[str, dict[str, Any]] = {}
        self._write_run_json()

    def _write_run_json(self) -> None:
        from rlhub import __version__

        self.store.write_json("run.json", {
            "run_id": self.owner.run_id, "kind": "train", "backend": "local",
            "policy": POLICY, "domains": self.ids, "mixture": self.owner.mixture,
            "train": config_signature(self.cfg), "rlhub_version": __version__,
            "created": time.time()})

    # -- phases ------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        warm = self.phase("warmup", self._warm_up)
        before = self.phase("heldout_before", lambda: self._score("before"))
        steps = self.phase("grpo", self._grpo)
        after = (self.phase("heldout_after", lambda: self._score("after", steps)) if steps
                 else before)
        self.phase("save", self._save_model)
        summary = self._summary(warm, before, after, steps)
        self.store.write_json(HELDOUT, {"before": before[0].as_dict(), "after": after[0].as_dict()})
        self.owner.write_summary(summary)
        self.events.event("done", steps, mean_before=before[0].mean(), mean_after=after[0].mean())
        return summary

    def phase(self, name: str, fn: Any) -> Any:
        self.owner.progress(f"{name}: started")
        self.events.event("phase_start", 0, phase=name)
        start = time.perf_counter()
        result = fn()
        self.owner.timed(name, start)
        self.events.event("phase_end", 0, phase=name, seconds=self.owner.timings[name])
        self.owner.progress(f"{name}: done in {self.owner.timings[name]:.1f} s")
        return result

    def _warm_up(self) -> Any:
        w = self.cfg.warmup
        prior = {d: spec["weight"] for d, spec in self.scheduler.config["domains"].items()}
        writer = self.monitor.writer
        result = warm_up(self.model, self.tokenizer, gold_stream(self.domains, self.cfg.seed,
                                                                prior),
                         steps=w.steps, lr=w.lr, batch_size=w.batch_size,
                         max_seconds=w.max_seconds,
                         log=lambda step, loss: writer.add_scalar("warmup/loss", loss, step))
        self.events.event("warmup", result.steps, loss=result.loss, examples=result.examples)
        if result.guard_hit:
            self.guard("warmup", result.steps, w.steps, w.max_seconds)
        return result

    def guard(self, phase: str, steps: int, planned: int, max_seconds: float) -> None:
        """Record that ``phase`` hit its time guard after ``steps`` of ``planned`` steps."""
        self.guards[phase] = {"steps": steps, "planned": planned, "max_seconds": max_seconds}
        self.events.event("guard", steps, phase=phase, planned=planned, max_seconds=max_seconds)
        self.owner.progress(f"{phase}: stopped by its {max_seconds:g} s guard after {steps} of "
                            f"{planned} steps; this run is not comparable with a full one")

    def _score(self, label: str, step: int = 0) -> tuple[HeldOutResult, HeldOutResult | None]:
        h = self.cfg.heldout
        sampled = self.heldout.evaluate(self.model, self.tokenizer,
                                        temperature=self.cfg.grpo.temperature, samples=h.samples)
        greedy = (self.heldout.evaluate(self.model, self.tokenizer, temperature=0.0, samples=1)
                  if h.greedy else None)
        observe_heldout(self, sampled, label, step)
        self.owner.progress(f"held-out {label}: mean reward {_mean(sampled.mean())}")
        self.events.event("heldout", 0, label=label, scores=sampled.scores(),
                          mean=sampled.mean(), greedy=greedy.scores() if greedy else None,
                          failures=sampled.failures)
        return sampled, greedy

    def _grpo(self) -> int:
        if self.cfg.grpo.steps <= 0:  # a warm-up-only run
            return 0
        trainer, hooks = self._build_grpo()
        trainer.train()
        self.flush_store()
        self.monitor.flush()
        return hooks.steps

    def _build_grpo(self) -> tuple[HubGRPOTrainer, StepHooks]:
        from datasets import Dataset
        from rlhub.store import trajectory_provenance
        from trl import GRPOConfig

        g = self.cfg.grpo
        provenance = {d: {**trajectory_provenance(self.registry, dom), "policy": POLICY,
                          "policy_info": {"model": "tiny", "seed": self.cfg.policy_seed},
                          "seed": self.scheduler.config["seed"],
                          "split": self.scheduler.config["split"], "run_id": self.owner.run_id,
                          "lock_hash": self.owner.lock_hash}
                      for d, dom in self.domains.items()}
        recorder = Recorder(self.domains, self.cache, provenance, self.record)
        source = BatchSource(self.scheduler, g.prompts_per_step, g.max_refill_frac)
        args = GRPOConfig(
            output_dir=str(self.out / "trl"), use_cpu=True, bf16=False,
            activation_checkpointing=False, per_device_train_batch_size=g.prompts_per_step
            * g.generations, num_generations=g.generations,
            max_completion_length=g.max_completion_tokens, temperature=1.0, top_k=0, top_p=1.0,
            learning_rate=g.lr, lr_scheduler_type="constant", warmup_steps=0,
            max_steps=g.steps, logging_steps=g.log_every, save_strategy="no",
            report_to="none", seed=self.cfg.seed, dataloader_num_workers=0,
            disable_dropout=True, disable_tqdm=True, beta=0.0)
        placeholder = Dataset.from_dict({"prompt": ["<bos>"] * g.prompts_per_step * 8})
        hooks = StepHooks(self)
        trainer = HubGRPOTrainer(model=self.model, reward_funcs=recorder, args=args,
                                 train_dataset=placeholder, processing_class=self.tokenizer,
                                 callbacks=[hooks], source=source, recorder=recorder,
                                 temperatures=self.temps.values.__getitem__)
        trainer.remove_callback(PrinterCallback)  # logs go to TensorBoard, not stdout
        hooks.trainer = trainer
        return trainer, hooks

    # -- store -------------------------------------------------------------------------------

    def record(self, trajectories: list[Trajectory]) -> None:
        for traj in trajectories:
            self.monitor.observe(traj)
        self.pending += trajectories

    def flush_store(self) -> None:
        if self.pending:
            self.store.write(self.pending)
            self.stored += len(self.pending)
            self.pending = []

    # -- end ---------------------------------------------------------------------------------

    def _save_model(self) -> None:
        target = self.out / "model"
        self.model.save_pretrained(target)
        self.tokenizer.save_pretrained(target)

    def _summary(self, warm: Any, before: tuple[HeldOutResult, Any],
                 after: tuple[HeldOutResult, Any], steps: int) -> dict[str, Any]:
        h = self.cfg.heldout
        stats = compare(before[0], after[0], seed=h.seed)
        summary = {
            "before": before[0].scores(), "after": after[0].scores(),
            "mean": {"before": before[0].mean(), "after": after[0].mean()},
            "delta": stats, "metric": (
                f"sampled reward at the training temperature T={self.cfg.grpo.temperature:g}: "
                f"mean over {h.samples} samples per item, {h.items} test-split items per domain; "
                "deltas are paired bootstrap 95% CIs over items"),
            "greedy": ({"before": before[1].scores(), "after": after[1].scores()}
                       if before[1] and after[1] else None),
            "steps": steps, "warmup": {"steps": warm.steps, "examples": warm.examples,
                                       "loss": warm.loss},
            "guards": dict(self.guards),
            "trajectories": self.stored, "timings_s": dict(self.owner.timings),
            "failures": {**self.failures(), "heldout": {"before": before[0].failures,
                                                        "after": after[0].failures}},
            "adjustments": self.adjustments_summary(),
            "final": {"temperature": dict(self.temps.values), "lr": self.lr.lr},
            "scheduler": {"weights": self.scheduler.weights(), "counts": self.scheduler.counts()},
            "run_id": self.owner.run_id, "domains": self.ids, "policy": POLICY,
        }
        summary["timings_s"]["total"] = round(sum(self.owner.timings.values()), 2)
        return summary

    def failures(self) -> dict[str, Any]:
        """Faults that were not the model's, per domain: ``{"counts": {domain: {class: n}},
        "retries": {domain: n}}`` (the counts are of samples still failing after the retries)."""
        return {"counts": copy.deepcopy(self.monitor.failures),
                "retries": dict(self.cache.retried)}

    def adjustments_summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for line in self.events.path.read_text(encoding="utf-8").splitlines():
            if '"adjustment"' in line:
                kind = json.loads(line)["control"]
                counts[kind] = counts.get(kind, 0) + 1
        return counts

    def close(self) -> None:
        self.flush_store()
        self.monitor.close()


def observe_heldout(s: TrainingRun, result: HeldOutResult, label: str, step: int) -> None:
    """Held-out scores to the scheduler, TensorBoard and ``heldout_curve.jsonl``, over the
    samples the model earned.

    Each line of the curve holds the step, the rollouts generated so far and the per-item means
    of every domain, so a benchmark can bootstrap any statistic of the curve over items.
    """
    g = s.cfg.grpo
    line = {"step": step, "label": label, "rollouts": step * g.prompts_per_step * g.generations,
            **result.as_dict()}
    with (s.out / CURVE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")
    for domain, score in result.scores().items():
        if result.scored(domain) > 0 and domain in s.domains:  # not a watched domain
            s.scheduler.observe_eval(domain, score, result.scored(domain))
            s.monitor.writer.add_scalar(f"heldout/{domain}/{label}", score, step)


def _mean(value: float | None) -> str:
    return "n/a (no sample scored)" if value is None else f"{value:.3f}"


class StepHooks(TrainerCallback):
    """rlhub's side of every GRPO step (see the module docstring)."""

    def __init__(self, session: TrainingRun):
        self.s = session
        self.trainer: HubGRPOTrainer | None = None
        self.steps = 0
        self.shifts_seen = 0
        self.faults_logged = session.failures()
        self.start = time.perf_counter()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.start = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        s, step = self.s, state.global_step
        self.steps = step
        assert self.trainer is not None
        for domain, groups in self.trainer.last_groups.items():
            s.temps.observe(domain, groups)
            for group in groups:
                s.monitor.observe_group(domain, group)
        for adj in s.temps.update(step):
            s.events.adjustment(adj)
        self._shifts(step, kw.get("optimizer"), kw.get("lr_scheduler"))
        if step % s.cfg.grpo.log_every == 0:
            self._log(step)
            s.owner.progress(f"grpo: step {step} of {s.cfg.grpo.steps}")
        if step % s.cfg.grpo.store_every == 0:
            s.flush_store()
        g = s.cfg.grpo
        if step % s.cfg.heldout.every_steps == 0 and step < g.steps:
            self._inrun_eval(step)
        if step < g.steps and time.perf_counter() - self.start >= g.max_seconds:
            control.should_training_stop = True
            s.guard("grpo", step, g.steps, g.max_seconds)

    def _shifts(self, step: int, optimizer: Any, lr_scheduler: Any) -> None:
        s = self.s
        for shift in s.monitor.shifts[self.shifts_seen:]:
            s.events.event("shift", step, domain=shift.domain, statistic=shift.statistic,
                           pvalue=shift.pvalue, reference_mean=shift.reference_mean,
                           current_mean=shift.current_mean)
            adj = s.lr.on_shift(step, shift)
            if adj is not None and optimizer is not None:
                set_learning_rate(optimizer, lr_scheduler, adj.new)
                s.events.adjustment(adj)
        self.shifts_seen = len(s.monitor.shifts)

    def _log(self, step: int) -> None:
        s = self.s
        s.monitor.flush()
        writer = s.monitor.writer
        weights = s.scheduler.weights()
        for domain, w in weights.items():
            writer.add_scalar(f"scheduler/weight/{domain}", w, step)
            writer.add_scalar(f"temperature/{domain}", s.temps.values[domain], step)
        writer.add_scalar("train/lr", s.lr.lr, step)
        for domain, n in s.cache.retried.items():
            writer.add_scalar(f"retries/{domain}", n, step)
        s.scheduler.log(s.out, step, counts=s.scheduler.counts(),
                        zero_variance=self.trainer.last_zero if self.trainer else {})
        faults = s.failures()
        if faults != self.faults_logged:
            s.events.event("failures", step, **faults)
            self.faults_logged = faults

    def _inrun_eval(self, step: int) -> None:
        s, h = self.s, self.s.cfg.heldout
        result = s.heldout.evaluate(s.model, s.tokenizer, temperature=s.cfg.grpo.temperature,
                                    samples=h.inrun_samples, items=h.inrun_items)
        observe_heldout(s, result, "inrun", step)
        s.owner.progress(f"held-out check at step {step}: mean reward {_mean(result.mean())}")
        s.events.event("heldout", step, label="inrun", scores=result.scores(), mean=result.mean(),
                       failures=result.failures)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kw: Any) -> None:
        for key, value in (logs or {}).items():
            if isinstance(value, (int, float)):
                self.s.monitor.writer.add_scalar(f"trl/{key}", value, state.global_step)
