"""`rlhub serve` and `rlhub export` as typed on the command line: the key file shared by both,
and the body, item and domain limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")

from rlhub.integrations.server.process import ServerProcess

ENV = {"RLHUB_PLUGINS": "toyplug", "RLHUB_DISABLE_AUTOLOAD": "1"}


def export(tmp_path: Path, key: Path) -> list[dict[str, Any]]:
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"strategy": "static",
                               "domains": {"toy/reverse-v1": 1.0, "toy/copy-v1": 1.0}}))
    out = tmp_path / "rows.jsonl"
    subprocess.run([sys.executable, "-m", "rlhub", "export", "--mixture", str(mix), "-n", "6",
                    "--out", str(out), "--label-key-file", str(key)],
                   env={**os.environ, **ENV}, check=True, capture_output=True, timeout=300)
    return [json.loads(line) for line in out.read_text().splitlines()]


def rewards(url: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    resp = httpx.post(url + "/get_reward", json={
        "query": [r["prompt"] + r["gold"] for r in rows], "prompts": [r["prompt"] for r in rows],
        "labels": [r["label"] for r in rows]}, timeout=120)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_labels_exported_with_a_key_file_are_paid_by_a_server_started_with_that_file(tmp_path):
    key, other = tmp_path / "key", tmp_path / "other"
    key.write_text("a-secret-shared-by-export-and-serve\n")
    other.write_text("another-secret-entirely-000000000\n")
    rows = export(tmp_path, key)
    assert len(rows) == 6 and all("sig" in json.loads(r["label"]) for r in rows)
    with ServerProcess(["--label-key-file", str(key)], env=ENV) as server:
        assert rewards(server.url, rows)["rewards"] == [1.0] * 6
    with ServerProcess(["--label-key-file", str(other)], env=ENV) as server:
        refused = rewards(server.url, rows)
    assert refused["rewards"] == [0.0] * 6
    assert refused["extra_logs"]["failure_label"] == [1.0] * 6


def test_body_item_and_domain_limits_apply_as_typed_on_the_command_line(tmp_path):
    from rlhub import Registry

    import toyplug

    reg = Registry(plugins=[toyplug], autoload=False)
    reverse, copy = (reg.get(d).task("train", 0, 0) for d in ("toy/reverse-v1", "toy/copy-v1"))
    args = ["--max-body-mb", "0.01", "--max-items", "2", "--allow-domain", "toy/rev*"]
    with ServerProcess(args, env=ENV) as server:
        big = httpx.post(server.url + "/v1/verify", content=b"{" + b" " * 20_000 + b"}",
                         timeout=60)
        many = httpx.post(server.url + "/v1/verify", json={"items": [{}] * 3}, timeout=60)
        served = [httpx.post(server.url + "/v1/verify", json={
            "task": t.to_dict(), "completion": t.gold}, timeout=60).json() for t in (reverse, copy)]
    assert big.status_code == 413
    assert big.json()["error"] == ("expected a body of at most 10485 bytes, found 20002 "
                                   "(Content-Length)")
    assert many.status_code == 413
    assert many.json()["error"] == ("expected at most 2 items per request, found 3; split the "
                                    "batch (or raise --max-items)")
    assert [s["reward"] for s in served] == [1.0, 0.0]
    assert served[1]["failure"] == "label" and "toy/copy-v1" in served[1]["error"]
