"""The single-machine trainer: its parts, and a short real GRPO run with forced control events."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("trl", reason="the local trainer needs the train extra (trl) installed")
import rlhub
import torch
from rlhub.errors import TrainerError
from rlhub.integrations.trainer.config import load_train_config
from rlhub.integrations.trainer.controls import LearningRateControl, TemperatureControl
from rlhub.integrations.trainer.heldout import paired_bootstrap
from rlhub.integrations.trainer.text import RowTemperature, attach_mask_positions, left_pad
from rlhub.monitor import Shift

TINY = ["math/tiny-count-v1", "math/tiny-lambda-v1"]
WATCHED = "math/tiny-succ-v1"  # scored on held-out items, never trained on


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from rlhub.policy.tiny import load_tiny

    model, tokenizer = load_tiny(tmp_path_factory.mktemp("tiny") / "m", seed=0)
    return model, tokenizer


# -- text plumbing ---------------------------------------------------------------------------


def test_left_padding_does_not_change_log_probs_once_positions_follow_the_mask(tiny):
    model, tok = tiny
    ids = tok("<bos>user: rev 123\nassistant: 321", add_special_tokens=False)["input_ids"]
    padded, mask = left_pad([ids, [5] * (len(ids) + 6)], tok.pad_token_id)
    with torch.no_grad():
        alone = model(input_ids=torch.tensor([ids])).logits[0]
        naive = model(input_ids=padded, attention_mask=mask).logits[0, -len(ids):]
        attach_mask_positions(model)
        fixed = model(input_ids=padded, attention_mask=mask).logits[0, -len(ids):]
    assert not torch.allclose(naive, alone, atol=1e-3)  # the pitfall: pads counted as positions
    assert torch.allclose(fixed, alone, atol=1e-4)


def test_a_prompt_longer_than_the_context_keeps_its_opening_and_its_end_within_the_budget(tiny):
    from rlhub.integrations.trainer.text import encode, fit_prompt

    _, tok = tiny
    text = "<bos>user: START " + "x = 1; " * 2000 + "END\nassistant:"
    fitted = fit_prompt(tok, text, 300)
    assert len(encode(tok, [fitted])[0]) <= 300 < len(encode(tok, [text])[0])
    assert fitted.startswith("<bos>user: START") and fitted.endswith("END\nassistant:")
    assert fit_prompt(tok, "<bos>user: short", 300) == "<bos>user: short"


def test_the_trainer_plays_a_repository_domain_whose_prompts_exceed_the_tiny_models_context(
        tmp_path):
    """The tiny model will not solve a swe task; the path must work: warm-up, GRPO and held-out
    fit the prompts to its 1,024 positions, and each completion is graded (a wrong answer)."""
    from rlhub.integrations.trainer.local import LocalTrainer
    from rlhub.store import TrajectoryStore

    domain = "swe/syn-fix-test-s-v1"
    config = {"strategy": "static", "domains": {domain: 1.0}, "train": {
        "warmup": {"steps": 1, "batch_size": 2},
        "grpo": {"steps": 1, "prompts_per_step": 2, "generations": 2, "store_every": 1},
        "heldout": {"items": 1, "samples": 1, "every_steps": 100, "inrun_items": 1,
                    "inrun_samples": 1}}}
    summary = LocalTrainer(config, tmp_path / "run", registry=rlhub.registry()).run()
    rows = TrajectoryStore(str(tmp_path / "run")).rows()
    assert summary["steps"] == 1 and summary["guards"] == {} and len(rows) == 4
    assert {(r["domain"], r["failure"], r["reward"]) for r in rows} == {(domain, "answer", 0.0)}


def test_row_temperature_divides_each_rows_logits_by_its_own_temperature(tiny):
    model, _ = tiny
    rows = torch.tensor([[1, 40, 41, 42], [1, 43, 44, 45]])
    scaler = RowTemperature(model)
    with torch.no_grad():
        plain = model(input_ids=rows).logits
        with scaler.using([1.0, 2.0]):
            scaled = model(input_ids=rows).logits
        after = model(input_ids=rows).logits
    assert torch.allclose(scaled[0], plain[0], atol=1e-5)
    assert torch.allclose(scaled[1], plain[1] / 2.0, atol=1e-5)
    assert torch.allclose(after, plain)


# -- controls --------------------------------------------------------------------------------


def test_temperature_rises_within_its_bound_when_a_domains_groups_collapse():
    control = TemperatureControl(["a", "b"], base=1.0, max=1.2, step=0.1, window=4,
                                 collapse_frac=0.75, release_frac=0.25, cooldown_steps=0)
    changes = []
    for step in range(1, 6):
        control.observe("a", [[1, 1], [0, 0]])   # zero variance
        control.observe("b", [[1, 0], [0, 1]])   # informative
        changes += control.update(step)
    assert [c.new for c in changes] == [1.1, 1.2]
    assert control.values == {"a": 1.2, "b": 1.0}
    assert "100% of the last 4 groups of a had zero reward variance" in changes[0].reason


def test_temperature_returns_toward_base_once_the_domain_is_informative_again():
    control = TemperatureControl(["a"], base=1.0, max=1.5, step=0.1, window=2,
                                 collapse_frac=1.0, release_frac=0.0, cooldown_steps=0)
    control.observe("a", [[1, 1], [1, 1]])
    assert control.update(1)[0].new == 1.1
    control.observe("a", [[1, 0], [0, 1]])
    lowered = control.update(2)
    assert lowered[0].new == 1.0 and lowered[0].reason.startswith("lowered")


def test_learning_rate_backs_off_on_a_downward_shift_only_and_respects_its_floor():
    control = LearningRateControl(1e-5, factor=0.5, min=4e-6, cooldown_steps=0)
    up = Shift("a", 0.5, 1e-4, reference_mean=0.2, current_mean=0.6)
    down = Shift("a", 0.5, 1e-4, reference_mean=0.6, current_mean=0.2)
    assert control.on_shift(1, up) is None
    assert control.on_shift(2, down).new == pytest.approx(5e-6)
    assert control.on_shift(3, down).new == pytest.approx(4e-6)
    assert control.on_shift(4, down) is None
    assert "reward shift down in a: mean 0.600 -> 0.200" in LearningRateControl(1.0).on_shift(
        9, down).reason


def test_controls_turned_off_for_an_ablation_never_adjust_anything():
    temps = TemperatureControl(["d"], base=1.0, max=1.5, step=0.1, window=4, enabled=False)
    for step in range(1, 30):
        temps.observe("d", [[0.0] * 4] * 4)  # every group collapsed
        assert temps.update(step) == []
    assert temps.values == {"d": 1.0}
    lr = LearningRateControl(1e-5, cooldown_steps=0, enabled=False)
    down = Shift(domain="d", statistic=0.9, pvalue=1e-6, reference_mean=0.8, current_mean=0.1)
    assert lr.on_shift(5, down) is None and lr.lr == 1e-5


def test_a_watch_list_that_is_not_a_list_of_ids_is_refused():
    with pytest.raises(TrainerError, match=r"train.heldout.watch: expected a list of domain ids, "
                                           r"found 'math/tiny-succ-v1'"):
        load_train_config({"domains": {TINY[0]: 1.0},
                           "train": {"heldout": {"watch": "math/tiny-succ-v1"}}})


def test_a_zero_variance_group_is_refilled_once_from_its_own_domain():
    from rlhub.integrations.trainer.grpo import BatchSource

    mixture = {"strategy": "static", "domains": {TINY[0]: 1.0, TINY[1]: 1.0}}
    source = BatchSource(rlhub.Scheduler.from_config(mixture, rlhub.registry()), 4, 0.5)
    first = source.next_tasks()
    flat = next(t for t in first if t.domain == TINY[0])
    groups = [[1.0, 1.0] if t is flat else [0.0, 1.0] for t in first]
    assert source.observe(first, groups) == {TINY[0]: 1, TINY[1]: 0}
    second = source.next_tasks()
    refill = second[0]
    assert len(second) == 4 and refill.domain == TINY[0] and refill.id != flat.id
    source.observe(second, [[0.0, 0.0]] * 4)  # the refill's own flat group is not retried
    assert [t.domain for t in list(source.refills)].count(TINY[0]) <= 2
    assert refill.id not in {t.id for t in source.refills} and source.refilled == 3


# -- evaluation and config -------------------------------------------------------------------


def test_paired_bootstrap_brackets_the_mean_difference_and_detects_a_clear_drop():
    rise = paired_bootstrap([0.2, 0.4, 0.1, 0.3] * 10, [0.3, 0.5, 0.2, 0.4] * 10)
    assert rise["delta"] == pytest.approx(0.1)
    assert rise["ci95"][0] == pytest.approx(0.1) and rise["ci95"][1] == pytest.approx(0.1)
    noisy = paired_bootstrap([0.0, 1.0] * 20, [1.0, 0.0] * 20)
    assert noisy["ci95"][0] < 0 < noisy["ci95"][1]


def test_the_demo_config_splits_into_an_adaptive_mixture_and_train_settings():
    mixture, cfg = load_train_config("examples/demo.yaml")
    assert mixture["strategy"] == "adaptive" and "train" not in mixture
    assert len(mixture["domains"]) >= 4
    assert cfg.grpo.lr == 1e-5 and cfg.heldout.samples >= 8
    rlhub.Scheduler.from_config(mixture, rlhub.registry())  # validates against the schema


def test_an_unknown_train_key_is_named_with_a_suggestion():
    with pytest.raises(TrainerError, match=r"train.grpo: expected only the keys .*found unknown "
                                           r"temprature \(did you mean 'temperature'\?\)"):
        load_train_config({"domains": TINY, "train": {"grpo": {"temprature": 1}}})


@pytest.mark.parametrize(("section", "key", "instead"), [
    ("warmup", "seconds", "warmup.steps"), ("grpo", "seconds", "grpo.steps"),
    ("grpo", "max_steps", "grpo.steps"), ("heldout", "every_s", "heldout.every_steps")])
def test_a_time_budget_from_an_older_config_is_refused_with_the_step_key_to_use(
        section, key, instead):
    with pytest.raises(TrainerError, match=rf"train.{section}.{key}: expected {instead}.* instead; "
                                           "phases run by steps"):
        load_train_config({"domains": TINY, "train": {section: {key: 10}}})


def test_the_warm_up_runs_its_steps_and_reports_a_time_guard_that_stopped_it(tiny):
    from rlhub.integrations.trainer.sft import gold_stream, warm_up

    model, tok = tiny
    domains = {d: rlhub.registry().get(d) for d in TINY}
    stream = gold_stream(domains, 0, dict.fromkeys(TINY, 1.0))
    done = warm_up(model, tok, stream, steps=3, lr=1e-4, batch_size=4)
    assert (done.steps, done.examples, done.guard_hit) == (3, 12, False)
    cut = warm_up(model, tok, stream, steps=3, lr=1e-4, batch_size=4, max_seconds=0.0)
    assert (cut.steps, cut.guard_hit) == (0, True)


def test_the_trainer_hook_answers_local_and_requires_a_run_folder():
    registry = rlhub.Registry(autoload=False)  # rlhub's own trainers load all the same
    with pytest.raises(TrainerError, match="expected a run folder"):
        registry.pm.hook.rlhub_make_trainer(backend="local", config={"domains": TINY},
                                            registry=registry)


# -- a short real run ------------------------------------------------------------------------


def _events(run_dir):
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def _tb_tags(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir / "tb"))
    acc.Reload()
    return set(acc.Tags()["scalars"])


def test_a_short_run_trains_records_logs_and_fires_both_controls(tmp_path):
    import driftplug
    from rlhub.integrations.trainer.local import LocalTrainer
    from rlhub.scheduler import read_weights
    from rlhub.store import TrajectoryStore

    registry = rlhub.plugins.Registry(plugins=[driftplug], autoload=True)
    config = {
        "strategy": "static", "domains": {"drift/flip-v1": 1.0, TINY[0]: 1.0, TINY[1]: 1.0},
        "train": {
            "scheduler": {"strategy": "adaptive", "params": {"floor": 0.5}},
            "warmup": {"steps": 8, "batch_size": 32},
            "grpo": {"steps": 24, "log_every": 2, "store_every": 4},
            "heldout": {"items": 8, "samples": 2, "every_steps": 8, "inrun_items": 4,
                        "inrun_samples": 2, "watch": [WATCHED]},
            "controls": {"temperature": {"window": 6, "cooldown_steps": 1, "max": 1.3},
                         "learning_rate": {"window": 16, "cooldown_steps": 1, "alpha": 0.05}},
        },
    }
    run = tmp_path / "run"
    summary = LocalTrainer(config, run, registry=registry).run()

    on_disk = json.loads((run / "summary.json").read_text())
    assert set(on_disk["before"]) == set(on_disk["after"]) == {*config["domains"], WATCHED}
    assert all(0.0 <= v <= 1.0 for v in [*on_disk["before"].values(), *on_disk["after"].values()])
    assert summary["steps"] == 24 and summary["warmup"]["steps"] == 8 and summary["guards"] == {}
    assert on_disk["delta"]["domains"].keys() == on_disk["before"].keys()
    inrun = [e["step"] for e in _events(run) if e["kind"] == "heldout" and e["label"] == "inrun"]
    assert inrun == [8, 16]
    curve = [json.loads(x) for x in (run / "heldout_curve.jsonl").read_text().splitlines()]
    assert [(c["label"], c["step"], c["rollouts"]) for c in curve] == [
        ("before", 0, 0), ("inrun", 8, 8 * 64), ("inrun", 16, 16 * 64), ("after", 24, 24 * 64)]
    assert [len(c["items"][WATCHED]) for c in curve] == [8, 4, 4, 8]

    rows = TrajectoryStore(str(run)).rows()
    assert len(rows) == summary["trajectories"] == 24 * 64
    assert {r["domain"] for r in rows} == set(config["domains"])  # the watched one: never
    lam = next(r for r in rows if r["domain"] == TINY[1])
    assert lam["plugin"] == "math" and lam["verifier_hash"] and lam["run_id"] == summary["run_id"]
    assert lam["split"] == "train" and lam["turns"][0]["completion"] is not None

    adjustments = [e for e in _events(run) if e["kind"] == "adjustment"]
    raised = [a for a in adjustments if a["control"] == "temperature" and a["new"] > a["old"]]
    assert raised and all(a["new"] <= 1.3 for a in raised)
    assert any(a["domain"] == "drift/flip-v1" and "zero reward variance" in a["reason"]
               for a in raised)
    backoff = [a for a in adjustments if a["control"] == "learning_rate"]
    assert backoff and backoff[0]["new"] == pytest.approx(backoff[0]["old"] * 0.5)
    assert "reward shift down in drift/flip-v1" in backoff[0]["reason"]
    assert summary["final"]["lr"] < 1e-5

    tags = _tb_tags(run)
    assert "control/temperature/drift/flip-v1" in tags and "control/learning_rate" in tags
    assert "reward/math/tiny-count-v1/mean" in tags and "trl/loss" in tags

    weights = read_weights(run)
    assert len(weights) >= 3 and set(weights[-1]["weights"]) == set(config["domains"])
    assert WATCHED not in summary["scheduler"]["counts"]
    assert weights[-1]["counts"]["drift/flip-v1"]["zero_variance"] > 0


def _numbers(value):
    """Every number in a nested summary value, in a fixed order."""
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _numbers(value[k])]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return [float(value)] if isinstance(value, (int, float)) else []


def test_the_same_seed_gives_the_same_summary_on_a_quiet_and_a_loaded_machine(tmp_path):
    import subprocess
    import sys

    from rlhub.integrations.trainer.local import LocalTrainer

    config = {
        "strategy": "static", "domains": {TINY[0]: 1.0, TINY[1]: 1.0},
        "train": {"scheduler": {"strategy": "adaptive", "params": {"floor": 0.4}},
                  "warmup": {"steps": 30, "batch_size": 32},
                  "grpo": {"steps": 8, "log_every": 2, "prompts_per_step": 4, "generations": 4},
                  "heldout": {"items": 8, "samples": 4, "every_steps": 4, "inrun_items": 4,
                              "inrun_samples": 2}},
    }
    quiet = LocalTrainer(config, tmp_path / "quiet", registry=rlhub.registry()).run()
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # one busy core
    try:
        loaded = LocalTrainer(config, tmp_path / "loaded", registry=rlhub.registry()).run()
    finally:
        burner.kill()
        burner.wait()
    assert quiet["guards"] == loaded["guards"] == {}
    for key in ("before", "after", "mean", "delta", "greedy", "warmup", "steps", "scheduler",
                "final", "trajectories"):
        assert _numbers(loaded[key]) == pytest.approx(_numbers(quiet[key]), rel=1e-5, abs=1e-6)
    assert quiet["before"] != quiet["after"]  # the run did train


def test_a_locked_run_keeps_the_lock_hash_out_of_the_mixture_and_on_every_trajectory(tmp_path):
    import warnings

    from rlhub.integrations.trainer.local import _quiet_known_warnings, make_local_trainer
    from rlhub.integrations.trainer.session import TrainingRun

    trainer = make_local_trainer({"domains": {TINY[0]: 1.0}, "out": str(tmp_path / "run"),
                                  "lock_hash": "abc123", "locked": "rlhub.lock",
                                  "train": {"heldout": {"items": 2, "samples": 1}}},
                                 rlhub.registry())
    assert "lock_hash" not in trainer.mixture
    rlhub.Scheduler.from_config(trainer.mixture, rlhub.registry())  # a valid mixture
    with warnings.catch_warnings():
        _quiet_known_warnings()
        grpo, _ = TrainingRun(trainer, trainer.cfg)._build_grpo()
    assert grpo.recorder.provenance[TINY[0]]["lock_hash"] == "abc123"
