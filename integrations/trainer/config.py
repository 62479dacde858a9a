"""The local trainer's config: a mixture file with a ``train:`` section.

The top level is an ordinary mixture (what ``rlhub eval --mixture`` reads); ``train`` holds
everything the trainer adds, and ``train.scheduler`` overrides the mixture's ``strategy`` and
``params`` for training (the mixture's static weights become the adaptive scheduler's prior)::

    strategy: static
    domains: {math/tiny-succ-v1: 1.0, math/tiny-count-v1: 1.0}
    train:
      scheduler: {strategy: adaptive, params: {floor: 0.3}}
      warmup: {steps: 300}
      grpo: {steps: 180, lr: 1.0e-5}

Phases run for a number of **steps**, so a seed gives the same run on a quiet or a busy machine;
each phase's ``max_seconds`` is only a guard against a stuck run, and a run that hits it says so
in its summary (``guards``). Unknown keys are errors naming the section and the keys it accepts.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlhub.errors import TrainerError


@dataclass
class Warmup:
    """Supervised warm-up on gold completions (train split): ``steps`` optimizer steps."""

    steps: int = 300
    max_seconds: float = 900.0
    lr: float = 1e-3
    batch_size: int = 64


@dataclass
class Grpo:
    """TRL GRPO settings; the research note's CPU settings are the defaults."""

    steps: int = 200
    max_seconds: float = 1800.0
    lr: float = 1e-5
    prompts_per_step: int = 8
    generations: int = 8
    max_completion_tokens: int = 20
    temperature: float = 1.0
    max_refill_frac: float = 0.5
    log_every: int = 10
    store_every: int = 25
    infra_retries: int = 2
    retry_backoff_s: float = 0.2


@dataclass
class HeldOutConfig:
    """Held-out scoring: sampled reward at ``temperature`` over test-split items.

    ``watch`` lists domains scored like the mixture's but never trained on (their scores do
    not reach the scheduler): what training on the mixture does to them, e.g. forgetting.
    """

    items: int = 128
    samples: int = 16
    seed: int = 0
    every_steps: int = 60
    inrun_items: int = 32
    inrun_samples: int = 4
    greedy: bool = True
    watch: list[str] = field(default_factory=list)


@dataclass
class TemperatureControls:
    """Bounds and rule of :class:`~rlhub.integrations.trainer.controls.TemperatureControl`
    (``enabled: false`` keeps every domain at the base temperature, for ablations)."""

    enabled: bool = True
    max: float = 1.5
    step: float = 0.1
    window: int = 32
    collapse_frac: float = 0.9
    release_frac: float = 0.5
    cooldown_steps: int = 10


@dataclass
class LearningRateControls:
    """Rule of :class:`~rlhub.integrations.trainer.controls.LearningRateControl` and its shift test
    (``window`` prompt groups per side, each group one value: its mean reward;
    ``enabled: false`` keeps the learning rate fixed, for ablations)."""

    enabled: bool = True
    factor: float = 0.5
    min: float = 1e-7
    cooldown_steps: int = 20
    window: int = 64
    alpha: float = 0.01


@dataclass
class Controls:
    """The monitoring-driven controls: per-domain temperature and learning-rate back-off."""

    temperature: TemperatureControls = field(default_factory=TemperatureControls)
    learning_rate: LearningRateControls = field(default_factory=LearningRateControls)


@dataclass
class TrainConfig:
    """The whole ``train:`` section (see the module docstring)."""

    seed: int = 0
    threads: int = 1
    policy_seed: int = 0
    init_model: str | None = None  # start from RUN_DIR/model of an earlier run, not a new model
    scheduler: dict[str, Any] = field(default_factory=lambda: {"strategy": "adaptive"})
    warmup: Warmup = field(default_factory=Warmup)
    grpo: Grpo = field(default_factory=Grpo)
    heldout: HeldOutConfig = field(default_factory=HeldOutConfig)
    controls: Controls = field(default_factory=Controls)


# Keys of earlier versions whose meaning changed: (section class, key) -> what to write now.
RETIRED = {
    ("Warmup", "seconds"): "warmup.steps (with warmup.max_seconds as a guard)",
    ("Grpo", "seconds"): "grpo.steps (with grpo.max_seconds as a guard)",
    ("Grpo", "max_steps"): "grpo.steps",
    ("HeldOutConfig", "every_s"): "heldout.every_steps",
}


def _build(cls: type, data: Any, where: str) -> Any:
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise TrainerError(f"{where}: expected a mapping, found {type(data).__name__} {data!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if (cls.__name__, key) in RETIRED:
            raise TrainerError(f"{where}.{key}: expected {RETIRED[cls.__name__, key]} instead; "
                               "phases run by steps, so that a seed gives the same run on a "
                               "busy machine as on a quiet one")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        hints = [k + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(
            k, fields, n=1)) else "") for k in unknown]
        raise TrainerError(f"{where}: expected only the keys {', '.join(sorted(fields))}, "
                           f"found unknown {', '.join(hints)}")
    values = {}
    for name, value in data.items():
        kind = fields[name].type
        nested = globals().get(kind) if isinstance(kind, str) else None
        values[name] = (_build(nested, value, f"{where}.{name}")
                        if dataclasses.is_dataclass(nested) else value)
    return cls(**values)


def load_train_config(source: str | os.PathLike[str] | dict[str, Any]
                      ) -> tuple[dict[str, Any], TrainConfig]:
    """``(mixture for the scheduler, train config)`` from a config file or dict."""
    raw = _read(source)
    train = _build(TrainConfig, raw.pop("train", None), "train")
    watch = train.heldout.watch
    if not isinstance(watch, list) or not all(isinstance(d, str) for d in watch):
        raise TrainerError(f"train.heldout.watch: expected a list of domain ids, found {watch!r}")
    mixture = {**raw, **copy.deepcopy(train.scheduler)}
    if mixture.get("strategy", "adaptive") in ("static", "uniform"):
        mixture.pop("params", None)
    return mixture, train


def _read(source: str | os.PathLike[str] | dict[str, Any]) -> dict[str, Any]:
    if isinstance(source, dict):
        return copy.deepcopy(source)
    import yaml

    path = Path(source)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TrainerError(f"training config {path}: expected a readable YAML file: {exc}"
                           ) from exc
    if not isinstance(data, dict) or "domains" not in data:
        raise TrainerError(f"training config {path}: expected a mixture mapping with "
                           f"'domains' (and an optional 'train' section), found "
                           f"{type(data).__name__}")
    return data


def config_signature(cfg: TrainConfig) -> dict[str, Any]:
    """The train config as plain data, for summary.json."""
    return dataclasses.asdict(cfg)
