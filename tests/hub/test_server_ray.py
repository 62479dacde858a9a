"""`rlhub serve --ray local`: verification and episodes on Ray actors of a private local instance."""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

import pytest

pytest.importorskip("ray", reason="ray is not installed (pip install 'rlhub[ray]')")
pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")

from rlhub import registry
from rlhub.hub.export import label_of
from rlhub.hub.server_process import ServerProcess

pytestmark = [pytest.mark.ray, pytest.mark.slow]
PROMPT = "user: solve\nassistant: "


def post(url: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(url, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


def test_ray_actors_verify_code_and_math_and_hold_episodes(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    home = tmp_path_factory.mktemp("ray_home")
    env = {"HOME": str(home), "RLHUB_HOME": str(home / "rlhub"), "RAY_AUTH_MODE": "disabled"}
    math_task = registry().get("math/arithmetic-l1-v1").sample(1, seed=4)[0]
    code_task = registry().get("code/py-roman-v2").sample(1, seed=4)[0]
    with ServerProcess(["--ray", "local", "--workers", "2", "--ray-threads", "4"], env=env,
                       start_timeout_s=240) as server:
        health = get(server.url + "/health")
        body = {"query": [PROMPT + math_task.gold, PROMPT + code_task.gold, PROMPT + "nope"],
                "prompts": [PROMPT] * 3,
                "labels": [label_of(math_task), label_of(code_task), label_of(code_task)]}
        rewards = post(server.url + "/get_reward", body)
        opened = post(server.url + "/v1/episodes", {"task": code_task.to_dict()})
        step = f"{server.url}/v1/episodes/{opened['episode_id']}/step"
        first = post(step, {"completion": "def nothing(): pass"})
        second = post(step, {"completion": code_task.gold})
        server_pid = server.proc.pid if server.proc else None
    pool = health["pool"]
    assert pool["kind"] == "ray" and pool["workers"] == 2 and pool["nodes"] == 1
    assert len(set(pool["actor_pids"])) == 2 and server_pid not in pool["actor_pids"]
    assert os.getpid() not in pool["actor_pids"]
    assert rewards["rewards"] == [1.0, 1.0, 0.0]
    assert rewards["extra_logs"]["error"] == [0.0, 0.0, 0.0]
    assert first["done"] is False and second["done"] is True
    assert first["reward"] + second["reward"] == 0.8
