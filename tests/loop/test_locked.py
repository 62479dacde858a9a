"""`--locked` runs refuse a changed environment, and trajectories carry the lock's hash."""

from __future__ import annotations

import pytest

from rlhub.cli.common import enforce_lock
from rlhub.errors import RlhubError
from rlhub.evaluate import EvalConfig, run_eval
from rlhub.integrations.hub.lock import mixture_lock, write_lock
from rlhub.store import TrajectoryStore

import loopplugin

MIXTURE = {"strategy": "uniform", "domains": {"looptest/reverse-v1": {"weight": 1.0}}}


def test_a_matching_lock_runs_and_every_trajectory_carries_its_hash(reg, tmp_path):
    lock = mixture_lock(MIXTURE, reg)
    path = write_lock(lock, tmp_path / "rlhub.lock")
    cfg = EvalConfig(mixture=MIXTURE, policy="oracle:right", out=str(tmp_path / "run"), n=3,
                     locked=str(path), lock_hash=enforce_lock(str(path), reg, MIXTURE),
                     tensorboard=False)
    run_eval(cfg, registry=reg, policy=loopplugin.Oracle("right"))
    rows = TrajectoryStore(cfg.out).rows()
    assert len(rows) == 3 and {r["lock_hash"] for r in rows} == {lock["lock_hash"]}


def test_a_lock_from_a_different_domain_version_refuses_to_run(reg, tmp_path):
    lock = mixture_lock(MIXTURE, reg)
    lock["domains"]["looptest/reverse-v1"]["domain_version"] = "0.0.1"
    from rlhub.integrations.hub.lock import seal

    path = write_lock(seal(lock), tmp_path / "rlhub.lock")
    with pytest.raises(RlhubError) as err:
        enforce_lock(str(path), reg, MIXTURE)
    assert str(err.value).startswith(f"refusing to run: the environment differs from the lock {path}")
    assert "looptest/reverse-v1" in str(err.value) and "domain_version" in str(err.value)
