"""The single-machine trainer (``rlhub train CONFIG --backend local``): warm-up, GRPO, evaluation.

One process, CPU only, the built-in tiny model:

1. **Warm-up** (:mod:`.sft`): ``train.warmup.steps`` AdamW steps on gold completions.
2. **Held-out before**: sampled reward at the base training temperature on fixed test-split
   items (:mod:`.heldout`); the scores also go to ``scheduler.observe_eval``.
3. **GRPO** (:mod:`.grpo`): ``train.grpo.steps`` steps of TRL's GRPOTrainer; the adaptive
   scheduler picks each batch, domains verify (the local sandbox runs code), trajectories go to
   the store, rewards to TensorBoard and the shift detector, and the controls
   (:mod:`.controls`) adjust temperatures and the learning rate. A small held-out pass
   every ``heldout.every_steps`` steps feeds ``observe_eval``. Faults that are not the model's
   are retried, then left out of the loss, the scheduler and the held-out scores.
4. **Held-out after**, on the same items with the same sampling seed, and paired bootstrap CIs.

Everything runs by steps and seeds, so the same config and seed give the same summary (within
float noise) on a quiet or a busy machine of the same kind; wall time only matters when a phase
hits its ``max_seconds`` guard, which the summary then reports under ``guards``.

Outputs under ``RUN_DIR``: ``summary.json``, ``events.jsonl`` (phases, adjustments, alarms),
``scheduler.jsonl`` (weights over time), ``heldout.json`` (per-item held-out rewards before and
after), ``heldout_curve.jsonl`` (per-item held-out rewards of every evaluation, in-run included),
``trajectories/`` (Parquet, the trajectory store),
``tb/`` (TensorBoard) and ``model/`` (``--policy hf:RUN_DIR/model`` serves it).
"""

from __future__ import annotations

import json
import os
import time
import uuid
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.errors import TrainerError
from rlhub.integrations.trainer.config import TrainConfig, load_train_config
from rlhub.integrations.trainer.runfolder import SUMMARY

if TYPE_CHECKING:
    from rlhub.plugins import Registry


class LocalTrainer:
    """``run()`` trains and returns the summary (also written to ``RUN_DIR/summary.json``)."""

    def __init__(self, config: str | os.PathLike[str] | dict[str, Any], out: str | os.PathLike[str],
                 *, registry: Registry, progress: Any = None, lock_hash: str | None = None,
                 origin: str | None = None):
        from rlhub.judges import mixture_judges

        self.mixture, self.cfg = load_train_config(config)
        self.out = Path(out)
        self.registry = registry
        # config is a mixture: its judges serve this run
        registry.services.use_judges(mixture_judges(config, registry, origin=origin))
        self.lock_hash = lock_hash  # `rlhub train --locked`: every trajectory carries it
        self.progress = progress or (lambda message: None)
        self.run_id = uuid.uuid4().hex
        self.timings: dict[str, float] = {}

    def run(self) -> dict[str, Any]:
        if (self.out / SUMMARY).exists():
            raise TrainerError(f"{self.out} already holds a finished run ({SUMMARY}); choose "
                               "another --out")
        with warnings.catch_warnings():
            _quiet_known_warnings()
            from rlhub.integrations.trainer.session import TrainingRun
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()

            session = TrainingRun(self, self.cfg)
            try:
                return session.run()
            finally:
                session.close()

    # helpers the session reports through
    def timed(self, name: str, start: float) -> None:
        self.timings[name] = round(time.perf_counter() - start, 2)

    def write_summary(self, summary: dict[str, Any]) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = self.out / f".{SUMMARY}.tmp"
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=True))
        os.replace(tmp, self.out / SUMMARY)


def _quiet_known_warnings() -> None:
    """Silence warnings of transformers/TRL that the research note found harmless on CPU."""
    for category in (FutureWarning, UserWarning, DeprecationWarning):
        warnings.filterwarnings("ignore", category=category, module=r"(transformers|trl|torch"
                                r"|accelerate|datasets)(\.|$)")
    warnings.filterwarnings("ignore", message=".*TRL_EXPERIMENTAL_SILENCE.*")


# Keys ``rlhub train`` adds to the config mapping; everything else is the mixture + ``train``.
CLI_KEYS = ("out", "config_path", "base_dir", "submit", "locked", "lock_hash", "backend")


def make_local_trainer(config: dict[str, Any], registry: Registry, **options: Any
                       ) -> LocalTrainer:
    """What ``rlhub_make_trainer(backend="local", config, registry)`` returns.

    ``config`` is the training config mapping plus the keys ``rlhub train`` adds (``out`` is
    required: the run folder).
    """
    data = {k: v for k, v in config.items() if k not in CLI_KEYS}
    out = config.get("out")
    if not out:
        raise TrainerError("local trainer: expected a run folder (--out RUN_DIR, or `out:` in "
                           "the config), found none")
    return LocalTrainer(data, out, registry=registry, lock_hash=config.get("lock_hash"),
                        origin=config.get("config_path"), **options)
