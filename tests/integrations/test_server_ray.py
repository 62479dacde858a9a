"""``rlhub serve --ray``: verification and episodes on Ray actors of a private local instance, and
against a running 2-CPU cluster as users run it (``ray start --head --num-cpus=2`` and a separate
``rlhub serve --ray ADDRESS`` process): the pool is sized from the cluster, serving starts once one
actor is up, /health shows pending and live actors, no actor able to start is a clear error, and a
dead actor is replaced with its in-flight calls retried."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="ray is not installed (pip install 'rlhub[ray]')")
pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")

from rlhub import registry
from rlhub.integrations.openrlhf.export import label_of
from rlhub.integrations.server.process import ServerProcess
from tests.sandbox.conftest import host_processes_with

pytestmark = pytest.mark.ray
PROMPT = "user: solve\nassistant: "
RAY = str(Path(sys.executable).parent / "ray")


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
    math_task = registry().get("math/arithmetic-l1-v2").sample(1, seed=4)[0]
    code_task = registry().get("code/py-roman-v2").sample(1, seed=4)[0]
    with ServerProcess(["--ray", "local", "--workers", "2", "--ray-threads", "4"], env=env,
                       start_timeout_s=240) as server:
        health = until(lambda: (h := get(server.url + "/health"))["pool"]["live"] == 2 and h)
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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A 2-CPU Ray head node of our own (own temp dir, any free port); stopped afterwards."""
    home = tmp_path_factory.mktemp("ray_cluster_home")
    temp_dir = tempfile.mkdtemp(prefix="rlray-", dir="/tmp")  # short: Ray's socket paths
    env = {**os.environ, "HOME": str(home), "RLHUB_HOME": str(home / "rlhub"),
           "RAY_AUTH_MODE": "disabled"}
    started = subprocess.run([RAY, "start", "--head", "--num-cpus=2", "--port=0",
                              "--include-dashboard=false", f"--temp-dir={temp_dir}",
                              "--disable-usage-stats"], env=env, capture_output=True, text=True,
                             timeout=300)
    address = re.search(r"--address='([^']+)'", started.stdout + started.stderr)
    try:
        assert started.returncode == 0 and address, started.stdout + started.stderr
        yield {"address": address.group(1), **env}
    finally:
        # never `ray stop`: it stops every cluster on the machine. The client server's command
        # line names the cluster's address, the other processes' its temp dir.
        stop_processes_of([temp_dir] + ([f"--address={address.group(1)}"] if address else []))
        subprocess.run(["rm", "-rf", temp_dir], check=False)


def stop_processes_of(markers: list[str]) -> None:
    """SIGTERM, then SIGKILL, the processes whose command line holds one of ``markers``.

    Ray's gcs_server, raylet and monitor outlive a SIGTERM by more than 25 s here, so the grace
    before SIGKILL is short: the cluster is ours and nothing of it is kept.
    """
    def ours() -> set[int]:
        return {pid for marker in markers for pid in host_processes_with(marker)}

    for sig, grace_s in ((signal.SIGTERM, 3), (signal.SIGKILL, 20)):
        for pid in ours():
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace_s
        while ours() and time.monotonic() < deadline:
            time.sleep(0.2)


def until(check: Any, timeout: float = 180.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"expected {check.__name__} within {timeout} s")


def serve(cluster: dict[str, str], *args: str) -> ServerProcess:
    env = {k: v for k, v in cluster.items() if k != "address"}
    return ServerProcess(["--ray", cluster["address"], *args], env=env, start_timeout_s=300)


def rewards_body(n: int) -> tuple[dict[str, Any], list[float]]:
    math = registry().get("math/arithmetic-l1-v2").sample(n, seed=3)
    labels = [label_of(t) for t in math]
    return ({"query": [PROMPT + (t.gold if i % 2 else "no") for i, t in enumerate(math)],
             "prompts": [PROMPT] * n, "labels": labels},
            [1.0 if i % 2 else 0.0 for i in range(n)])


def post_rewards(url: str, body: dict[str, Any], timeout: float = 300.0) -> dict[str, Any]:
    """POST ``body`` until no sample carries a fault of rlhub, as a trainer retries them.

    A fresh actor's first verification imports the domain and starts its bounded worker; on a
    loaded CI machine that overran the math domains' 15 s and every sample came back as the
    verifier's fault (reward 0, ``trainable`` 0), which is the server doing its job.
    """
    deadline = time.monotonic() + timeout
    while True:
        answered = post(url + "/get_reward", body)
        if all(answered["extra_logs"]["trainable"]) or time.monotonic() > deadline:
            return answered


def test_the_default_pool_is_sized_from_the_clusters_free_cpus(cluster):
    with serve(cluster) as server:
        pool = until(lambda: (p := get(server.url + "/health")["pool"])["live"] == 2 and p)
        body, expected = rewards_body(6)
        answered = post_rewards(server.url, body)
    assert pool["workers"] == 2 and pool["pending"] == 0 and pool["cpus_per_worker"] == 1.0
    assert answered["rewards"] == expected


def test_more_actors_than_the_cluster_holds_serve_with_those_up_and_show_the_rest_pending(cluster):
    with serve(cluster, "--workers", "4") as server:
        health = get(server.url + "/health")["pool"]
        body, expected = rewards_body(4)
        answered = post_rewards(server.url, body)
        stdout = server.output()
    assert health["workers"] == 4 and 1 <= health["live"] <= 2
    assert health["live"] + health["pending"] == 4
    assert answered["rewards"] == expected
    assert "Ray actors up, the rest as the cluster places them" in stdout


def test_no_actor_that_can_start_is_an_error_naming_the_demand_and_the_flag(cluster):
    env = {k: v for k, v in cluster.items() if k != "address"}
    done = subprocess.run([sys.executable, "-m", "rlhub", "serve", "--port", "0", "--ray",
                           cluster["address"], "--workers", "2", "--ray-actor-cpus", "3",
                           "--ray-start-timeout", "10"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: no verifier actor started within 10 s: 2 actors each ask for "
                           "{'CPU': 3} and stay pending; the cluster has ")
    assert "Lower --workers or --ray-actor-cpus" in last and "listening on" not in done.stderr


def test_a_dead_actor_is_replaced_and_its_in_flight_calls_are_retried(cluster):
    code = registry().get("code/py-roman-v2").sample(1, seed=4)[0]
    # the gold solution, whose first call sleeps 1.2 s (the domain allows 3 s a call)
    fn = code.meta["entry_point"]
    slow_gold = code.gold.rstrip().removesuffix("```") + (
        f"\nimport time\n_fast = {fn}\n\n\ndef {fn}(s, _slept=[]):\n"
        "    if not _slept:\n        _slept.append(1)\n        time.sleep(1.2)\n"
        "    return _fast(s)\n```")
    body = {"query": [PROMPT + slow_gold] * 4, "prompts": [PROMPT] * 4,
            "labels": [label_of(code)] * 4}
    with serve(cluster, "--workers", "2") as server:
        before = until(lambda: (p := get(server.url + "/health")["pool"])["live"] == 2 and p)
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(post, server.url + "/get_reward", body)
            time.sleep(0.8)  # the four calls are in flight on both actors
            os.kill(before["actor_pids"][0], signal.SIGKILL)
            result = answer.result(timeout=300)
        after = until(lambda: (p := get(server.url + "/health")["pool"])["live"] == 2 and p)
    assert result["rewards"] == [1.0] * 4 and result["extra_logs"]["error"] == [0.0] * 4
    assert after["replaced"] >= 1 and before["actor_pids"][0] not in after["actor_pids"]
