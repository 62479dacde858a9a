"""The local trainer never trains on a fault that is not the model's: it retries, masks, counts.

Each infrastructure fault is met for real (``tests/fixtures/faultplug.py``: a shut-down sandbox, a
judge on a dead port, a verifier that raises) inside a real GRPO batch, and the tests look at what
reaches TRL's loss: the advantages, the loss mask, the loss and its gradient.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("trl", reason="the local trainer needs the train extra (trl) installed")
import faultplug
import rlhub
import torch
from rlhub.integrations.trainer.heldout import ScoreCache
from rlhub.integrations.trainer.grpo import BatchSource, group_advantages

G = 4
ROWS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages",
        "row_temperature")


@pytest.fixture
def registry():
    from rlhub.integrations.trainer.local import _quiet_known_warnings

    faultplug.restore()
    with warnings.catch_warnings():
        _quiet_known_warnings()  # as LocalTrainer.run does around a session
        yield rlhub.plugins.Registry(plugins=[faultplug], autoload=True)
    faultplug.restore()


def _session(registry, tmp_path, domain, retries):
    from rlhub.integrations.trainer.local import LocalTrainer
    from rlhub.integrations.trainer.session import TrainingRun

    config = {"strategy": "static", "domains": {domain: 1.0},
              "train": {"scheduler": {"strategy": "static"},
                        "grpo": {"prompts_per_step": 4, "generations": G, "infra_retries": retries,
                                 "retry_backoff_s": 0.0, "max_completion_tokens": 8},
                        "heldout": {"items": 2, "samples": 1}}}
    owner = LocalTrainer(config, tmp_path / "run", registry=registry)
    return TrainingRun(owner, owner.cfg)


def _batch(session, outage_checks):
    """One real GRPO batch whose first ``outage_checks`` verifications meet the fault."""
    trainer, _ = session._build_grpo()
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # what the training loop sets for one batch
    faultplug.outage(session.ids[0], outage_checks)
    out = trainer._generate_and_score_completions([{"prompt": "<bos>"}] * 16)
    return trainer, out


def _loss_and_grad(trainer, inputs):
    trainer.model.zero_grad(set_to_none=True)
    loss = trainer.compute_loss(trainer.model, inputs)
    loss.backward()
    grad = torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None])
    return loss.detach(), grad


@pytest.mark.parametrize("fault", faultplug.FAULTS)
def test_an_infrastructure_fault_never_reaches_the_loss_or_the_group_statistics(
        registry, tmp_path, fault):
    session = _session(registry, tmp_path, f"fault/{fault}-v1", retries=0)
    trainer, out = _batch(session, outage_checks=6)
    rewards = trainer.recorder.rewards
    failed = [t.failure for t in session.pending]
    assert 6 <= failed.count(fault) < len(failed)  # 6 verifications; a repeated completion shares one
    assert [r is None for r in rewards] == [f == fault for f in failed]

    expected = []
    for g in range(0, len(rewards), G):
        values = [r for r in rewards[g:g + G] if r is not None]
        mean = sum(values) / len(values) if values else 0.0
        std = (sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1)) ** 0.5
        expected += [0.0 if r is None or len(values) < 2 else (r - mean) / (std + 1e-4)
                     for r in rewards[g:g + G]]
    assert out["advantages"].tolist() == pytest.approx(expected, abs=1e-5)
    faulty = torch.tensor([r is None for r in rewards])
    assert out["completion_mask"][faulty].sum() == 0
    assert out["completion_mask"][~faulty].sum() == out["num_items_in_batch"] > 0

    # the loss of the batch is the loss of the batch with the faulty completions removed
    keep = ~faulty
    alone = {k: out[k][keep] for k in ROWS} | {
        "num_items_in_batch": out["completion_mask"][keep].sum()}
    loss, grad = _loss_and_grad(trainer, out)
    loss_alone, grad_alone = _loss_and_grad(trainer, alone)
    assert loss.item() == pytest.approx(loss_alone.item(), rel=1e-4, abs=1e-7)
    assert torch.allclose(grad, grad_alone, rtol=1e-4, atol=1e-7)
    assert grad.abs().sum() > 0  # the trainable samples did carry a gradient


def test_a_fault_that_clears_within_the_retries_is_trained_on_as_the_models_outcome(
        registry, tmp_path):
    session = _session(registry, tmp_path, "fault/sandbox-v1", retries=2)
    trainer, out = _batch(session, outage_checks=20)
    assert None not in trainer.recorder.rewards
    assert all(t.failure in rlhub.TRAINABLE for t in session.pending)
    assert session.cache.retried == {"fault/sandbox-v1": 20}
    assert out["completion_mask"].sum() == out["num_items_in_batch"]


def test_the_score_cache_retries_a_bounded_number_of_times_and_never_caches_a_fault(registry):
    domain = registry.get("fault/judge-v1")
    task = domain.task("train", 0, 0)
    pauses = []
    cache = ScoreCache({domain.id: domain}, retries=2, backoff_s=0.5, sleep=pauses.append)
    faultplug.outage(domain.id)  # down for good
    scores = cache.scores([task] * 3, ["a", "bb", "ccc"])
    assert [s.failure for s in scores] == ["judge"] * 3
    assert cache.retried == {domain.id: 6} and pauses == [0.5, 1.0]
    faultplug.restore()
    assert [s.failure for s in cache.scores([task], ["bb"])] == ["none"]


def test_group_advantages_ignore_faulty_samples_and_zero_a_lone_survivor():
    adv = group_advantages([1.0, None, 0.0, 1.0, None, None, 1.0, None], 4)
    mean, std = 2 / 3, (((1 / 3) ** 2 * 2 + (2 / 3) ** 2) / 2) ** 0.5
    assert adv.tolist() == pytest.approx([(1 - mean) / (std + 1e-4), 0.0, -mean / (std + 1e-4),
                                          (1 - mean) / (std + 1e-4), 0.0, 0.0, 0.0, 0.0])
    assert group_advantages([1.0, 0.0, None, None], 2, scale=False).tolist() == [0.5, -0.5, 0, 0]


def test_the_scheduler_and_the_refills_never_see_a_fault(registry):
    mixture = {"strategy": "adaptive", "domains": {"fault/judge-v1": 1.0, "fault/verifier-v1": 1.0}}
    sched = rlhub.Scheduler.from_config(mixture, registry)
    source = BatchSource(sched, 4, 0.5)
    tasks = source.next_tasks()
    groups = [[None] * 4 if t.domain == "fault/judge-v1" else [1.0, None, 1.0, None]
              for t in tasks]
    zero = source.observe(tasks, groups)
    counts = sched.counts()
    assert counts["fault/judge-v1"]["groups"] == 0 and zero.get("fault/judge-v1", 0) == 0
    assert counts["fault/verifier-v1"]["all_pass"] == counts["fault/verifier-v1"]["groups"] > 0
    assert all(t.domain == "fault/verifier-v1" for t in source.refills)


def test_a_run_whose_sandbox_stays_down_trains_on_the_rest_and_counts_every_fault(
        registry, tmp_path):
    import json

    from rlhub.integrations.trainer.local import LocalTrainer
    from rlhub.store import TrajectoryStore
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    down, healthy = "fault/sandbox-v1", "math/tiny-count-v1"
    faultplug.outage(down)  # for the whole run
    config = {"strategy": "static", "domains": {down: 1.0, healthy: 1.0},
              "train": {"scheduler": {"strategy": "adaptive"},
                        "warmup": {"steps": 5, "batch_size": 16},
                        "grpo": {"steps": 4, "log_every": 2, "prompts_per_step": 4,
                                 "generations": 4, "infra_retries": 1, "retry_backoff_s": 0.0},
                        "heldout": {"items": 4, "samples": 2, "every_steps": 2,
                                    "inrun_items": 2, "inrun_samples": 2, "greedy": False}}}
    run = tmp_path / "run"
    summary = LocalTrainer(config, run, registry=registry).run()

    rows = TrajectoryStore(str(run)).rows()
    lost = [r for r in rows if r["domain"] == down]
    assert lost and {r["failure"] for r in lost} == {"sandbox"}
    assert all(r["failure"] in rlhub.TRAINABLE for r in rows if r["domain"] == healthy)
    assert summary["failures"]["counts"] == {down: {"sandbox": len(lost)}}
    assert summary["failures"]["retries"][down] >= len(lost)
    assert summary["failures"]["heldout"]["before"] == {down: 8, healthy: 0}
    assert summary["before"][down] is None and summary["delta"]["domains"][down]["delta"] is None
    counts = summary["scheduler"]["counts"]
    assert counts[down]["groups"] == 0 and counts[healthy]["groups"] > 0  # never learned from it
    logged = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert any(e["kind"] == "failures" and e["counts"][down]["sandbox"] > 0 for e in logged)
    acc = EventAccumulator(str(run / "tb"))
    acc.Reload()
    assert acc.Scalars(f"failures/{down}/sandbox")[-1].value == len(lost)
    assert f"reward/{down}/mean" not in acc.Tags()["scalars"]
