"""A swe domain served by ``rlhub serve``: patches through /get_reward, agent episodes through
/v1/episodes with OpenAI tool calls, and a server killed with SIGKILL mid-episode whose
workspaces ``rlhub sandbox workspaces --reap`` removes to the last one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx
import pytest

import rlhub
from rlhub.integrations.server.process import ServerProcess
from rlhub.labels import label_json
from rlhub.sandbox import leases

AGENT = "swe/syn-fix-test-s-agent-v1"
SINGLE = "swe/syn-fix-test-s-v1"


@pytest.fixture
def leases_dir(tmp_path, monkeypatch):
    folder = tmp_path / "leases"
    monkeypatch.setenv("RLHUB_WORKSPACES_DIR", str(folder))
    return folder


def _reap(env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-m", "rlhub", "sandbox", "workspaces", "--reap",
                           "--json"], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_a_served_swe_domain_grades_patches_plays_tool_episodes_and_a_killed_server_leaves_nothing(
        leases_dir):
    reg = rlhub.registry()
    task = reg.get(SINGLE).task("train", 0, 0)
    env = {**os.environ, "RLHUB_WORKSPACES_DIR": str(leases_dir)}
    server = ServerProcess(["--workers", "2", "--allow-domain", "swe/*"], env=env).start()
    try:
        with httpx.Client(base_url=server.url, timeout=300) as client:
            body = {"query": [task.gold, "no patch"], "prompts": ["", ""],
                    "labels": [label_json(task)] * 2}
            rewards = client.post("/get_reward", json=body).json()["rewards"]
            assert rewards == [1.0, 0.0]
            opened = [client.post("/v1/episodes", json={"domain": AGENT, "seed": s}).json()
                      for s in (0, 1)]
            assert {t["function"]["name"] for t in opened[0]["tools"]} >= {
                "read_file", "apply_patch", "run_tests", "submit"}
            call = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_x", "type": "function",
                 "function": {"name": "list_files", "arguments": "{}"}}]}
            step = client.post(f"/v1/episodes/{opened[0]['episode_id']}/step",
                               json={"message": call}).json()
            assert not step["done"] and step["messages"][1]["role"] == "tool"
            assert "tests/" in step["messages"][1]["content"]
        held = [r for r in leases.records(leases_dir) if r.state == "open"]
        assert len(held) >= 2 and all(r.owner_pid == server.proc.pid for r in held)
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait()
    finally:
        server.stop()
    reaped = _reap(env)
    assert reaped["workspaces"] == [] and len(reaped["reaped"]) >= 2
    assert not any(leases.alive(r.server_pid, r.server_start) for r in held)
    assert leases.records(leases_dir) == []
