"""The trajectory store: schema and provenance, atomic parts, memory://, S3 (moto), bad paths."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlhub.errors import StoreError
from rlhub.evaluate import EvalConfig, reverify, run_eval
from rlhub.store import SCHEMA_VERSION, TrajectoryStore


MIXTURE = {"strategy": "static", "domains": {"looptest/reverse-v1": {"weight": 1},
                                              "looptest/add-v1": {"weight": 2}}}


def _eval(reg, out: str, **kw) -> dict:
    cfg = EvalConfig(mixture=MIXTURE, policy="oracle:wrong-first", out=out, n=4,
                     flush_every=3, tensorboard=False, **kw)
    return run_eval(cfg, registry=reg)


def test_every_row_carries_the_schema_version_and_full_provenance(reg, tmp_path) -> None:
    _eval(reg, str(tmp_path / "run"))
    from rlhub.provenance import verifier_code_hash

    rows = TrajectoryStore(str(tmp_path / "run")).rows()
    for r in rows:
        assert r["schema_version"] == SCHEMA_VERSION
        assert (r["plugin"], r["domain_version"], r["policy"]) == ("looptest", "1.0",
                                                                   "oracle:wrong-first")
        assert r["verifier_hash"] == verifier_code_hash(reg.manifest(r["domain"]),
                                                        reg.services.verifier_refs())
        assert len(r["verifier_hash"]) == 64
        assert r["rlhub_version"] and r["seed"] == 0 and r["split"] == "test"
        assert r["sandbox_image"] is None and r["policy_info"] == {"spec": "oracle:wrong-first"}
        assert r["task"]["id"] == r["task_id"] and r["n_turns"] == len(r["turns"])
    turn = next(r for r in rows if r["domain"] == "looptest/reverse-v1")["turns"][0]
    assert set(turn) >= {"messages", "completion", "components", "feedback", "exec_status",
                         "gen_s", "verify_s", "status", "reward"}
    assert turn["messages"][0]["role"] == "user" and turn["components"] == {"correct": 0.0}


def test_parts_are_committed_in_batches_and_stray_temp_files_are_ignored(reg, tmp_path) -> None:
    out = tmp_path / "run"
    _eval(reg, str(out))
    parts = sorted((out / "trajectories").glob("part-*.parquet"))
    assert len(parts) >= 2  # 8 trajectories, a part every 3
    (out / "trajectories" / ".tmp-deadbeef").write_bytes(b"PAR1 half a part")
    store = TrajectoryStore(str(out))
    assert len(store.rows()) == 8
    assert store.clean_temp() == 1
    assert not list((out / "trajectories").glob(".tmp-*"))


def test_a_part_from_a_newer_schema_is_refused_with_the_version_found(reg, tmp_path) -> None:
    out = tmp_path / "run"
    _eval(reg, str(out))
    part = sorted((out / "trajectories").glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    table = table.replace_schema_metadata({"rlhub.schema_version": str(SCHEMA_VERSION + 1)})
    pq.write_table(table, part)
    with pytest.raises(StoreError, match=f"expected schema version 1..{SCHEMA_VERSION}, found "
                       f"{SCHEMA_VERSION + 1}"):
        TrajectoryStore(str(out)).rows()


def test_reverify_reports_a_tampered_reward(reg, tmp_path) -> None:
    out = tmp_path / "run"
    _eval(reg, str(out))
    part = sorted((out / "trajectories").glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    rewards = pa.array([r + 0.25 for r in table.column("reward").to_pylist()], pa.float64())
    pq.write_table(table.set_column(table.schema.get_field_index("reward"), "reward", rewards)
                   .replace_schema_metadata(table.schema.metadata), part)
    result = reverify(str(out), registry=reg)
    assert result["checked"] == 8
    assert len(result["mismatches"]) == table.num_rows
    assert {m["field"] for m in result["mismatches"]} == {"reward"}


def test_the_memory_filesystem_holds_a_whole_run(reg) -> None:
    url = f"memory://runs/{uuid.uuid4().hex}"
    metrics = _eval(reg, url)
    assert metrics["overall"]["n_samples"] == 8
    assert TrajectoryStore(url).read_json("metrics.json")["overall"]["n_samples"] == 8
    assert reverify(url, registry=reg) == {"checked": 8, "mismatches": []}


@pytest.fixture
def moto_s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 (a port it binds itself) with dummy credentials; yields the
    endpoint URL."""
    server_mod = pytest.importorskip("moto.server", reason="moto[server] is not installed")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint,
                           "FSSPEC_S3_ENDPOINT_URL": endpoint}.items():
            monkeypatch.setenv(key, value)
        yield endpoint
    finally:
        server.stop()


def test_a_run_on_s3_is_written_read_and_reverified_through_s3fs(reg, moto_s3) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=moto_s3)
    fs.mkdir("rlhub-runs")
    opts = {"endpoint_url": moto_s3}
    metrics = _eval(reg, "s3://rlhub-runs/demo", storage_options=opts)
    keys = fs.ls("rlhub-runs/demo/trajectories")
    assert len(keys) >= 2 and all(k.rsplit("/", 1)[-1].startswith("part-") for k in keys)
    assert metrics["domains"]["looptest/reverse-v1"]["repair_gain"] == 1.0
    rows = TrajectoryStore("s3://rlhub-runs/demo", opts).rows()
    assert len({r["trajectory_id"] for r in rows}) == 8
    again = reverify("s3://rlhub-runs/demo", registry=reg, storage_options=opts)
    assert again == {"checked": 8, "mismatches": []}


def test_an_unwritable_store_path_is_reported_before_any_rollout(reg, tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match=rf"could not write {blocker}/run/trajectories: "
                       r".*choose a writable --out"):
        _eval(reg, str(blocker / "run"))


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 96 kB tmpfs, so that writes fail with ENOSPC."""
    where = tmp_path / "disk"
    where.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_is_reported_and_leaves_every_committed_part_readable(reg, tiny_disk) -> None:
    cfg = EvalConfig(mixture={"domains": {"looptest/reverse-v1": {}}}, policy="oracle:garbage",
                     out=str(tiny_disk / "run"), n=12, flush_every=1, tensorboard=False,
                     concurrency=1)
    with pytest.raises(StoreError, match=r"trajectories could not be committed .*No space left "
                       r"on device.*free some space, then rerun with --resume"):
        run_eval(cfg, registry=reg)
    rows = TrajectoryStore(cfg.out).rows()  # every committed part still parses
    assert 0 < len(rows) < 12
    assert not list((tiny_disk / "run" / "trajectories").glob(".tmp-*"))
