"""`rlhub serve` against a hostile client: forged labels, huge bodies, poisoned samples, and a
server that must keep answering /health and stop on SIGTERM whatever verification is doing."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")

from hub_helpers import live_server
from rlhub import registry
from rlhub.integrations.openrlhf.export import label_of
from rlhub.integrations.server.app import ServerConfig, create_app
from rlhub.integrations.server.process import ServerProcess
from starlette.testclient import TestClient

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROMPT = "<|im_start|>user\nsolve<|im_end|>\n<|im_start|>assistant\n"
MATH = "math/arithmetic-l1-v2"
MIXTURE = {"strategy": "static", "domains": {MATH: 1.0}}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    mix = tmp_path_factory.mktemp("mix") / "mix.json"
    mix.write_text(json.dumps(MIXTURE))
    config = ServerConfig(workers=2, mixture=str(mix), max_items=64)
    with TestClient(create_app(config, registry())) as c:
        yield c


def math_task(index: int = 0) -> Any:
    return registry().get(MATH).task("train", 0, index)


def post_reward(client: TestClient, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    resp = client.post("/get_reward", json={"query": [PROMPT + c for c, _ in pairs],
                                            "prompts": [PROMPT] * len(pairs),
                                            "labels": [label for _, label in pairs]})
    assert resp.status_code == 200
    return resp.json()


def test_a_label_carrying_its_own_gold_answer_gets_the_minimum_not_the_reward(client):
    task, other = math_task(0), math_task(1)
    forged = {**task.to_dict(), "answer": other.answer, "gold": other.gold}
    body = post_reward(client, [(task.gold, label_of(task)),
                                (other.gold, json.dumps({"domain": MATH, "task": forged}))])
    assert body["rewards"] == [1.0, 0.0]
    assert body["extra_logs"]["error"] == [0.0, 1.0]


def test_a_label_sent_again_gets_the_same_answer_and_a_forged_one_is_refused_every_time(client):
    task, other = math_task(3), math_task(4)
    forged = json.dumps({"domain": MATH, "task": {**task.to_dict(), "answer": other.answer,
                                                  "gold": other.gold}})
    pairs = [(task.gold, label_of(task)), (other.gold, forged), ("\\boxed{-1}", label_of(task))]
    first = post_reward(client, pairs)
    assert first["rewards"] == [1.0, 0.0, 0.0] and first["extra_logs"]["error"] == [0.0, 1.0, 0.0]
    for _ in range(2):  # the genuine label is remembered now; the forged one never is
        again = post_reward(client, pairs)
        assert {**again, "extra_logs": {**again["extra_logs"], "verify_ms": None}} == \
            {**first, "extra_logs": {**first["extra_logs"], "verify_ms": None}}


def test_a_label_for_a_domain_outside_the_served_mixture_is_refused(client):
    task = registry().get("structured/format-date-v2").task("train", 0, 0)
    body = post_reward(client, [(task.gold, label_of(task))])
    assert body["rewards"] == [0.0] and body["extra_logs"]["error"] == [1.0]


def test_a_signed_label_from_another_key_is_refused_and_the_servers_own_is_accepted(client):
    from rlhub.labels import make_label

    task = math_task(2)
    forged = make_label(task.__class__.from_dict({**task.to_dict(), "answer": "1"}),
                        key=b"a key the server never saw, 1234")
    body = post_reward(client, [("\\boxed{1}", forged)])
    assert body["rewards"] == [0.0]
    sampled = client.post("/v1/sample", json={"domain": MATH, "n": 1, "seed": 9}).json()
    signed = sampled["labels"][0]
    assert signed["sig"].startswith("hmac-sha256:")
    assert post_reward(client, [(sampled["tasks"][0]["gold"], signed)])["rewards"] == [1.0]
    signed["task"]["answer"] = "1"
    assert post_reward(client, [("\\boxed{1}", signed)])["rewards"] == [0.0]


def test_v1_verify_and_episodes_go_through_the_same_label_gate(client):
    task, other = math_task(3), math_task(4)
    forged = {**task.to_dict(), "answer": other.answer, "gold": other.gold}
    verdict = client.post("/v1/verify", json={"task": forged, "completion": other.gold}).json()
    assert verdict["reward"] == 0.0 and verdict["error"].startswith("label: forged")
    genuine = client.post("/v1/verify", json={"task": task.to_dict(),
                                              "completion": task.gold}).json()
    assert genuine["reward"] == 1.0
    opened = client.post("/v1/episodes", json={"task": forged})
    assert opened.status_code == 403 and "forged" in opened.json()["error"]
    sampled = client.post("/v1/sample", json={"domain": MATH, "n": 1, "seed": 3}).json()
    assert client.post("/v1/episodes", json={"label": sampled["labels"][0]}).status_code == 200
    outside = client.post("/v1/episodes", json={"domain": "structured/format-date-v2"})
    assert outside.status_code == 403 and "not served here" in outside.json()["error"]


def test_one_poisoned_sample_never_costs_the_others_their_rewards(client):
    task = math_task(5)
    deep = '{"task": ' + "[" * 100_000 + "]" * 100_000 + "}"
    body = post_reward(client, [(task.gold, label_of(task)), ("x", deep), ("y", None),
                                (task.gold, label_of(task))])
    assert body["rewards"] == [1.0, 0.0, 0.0, 1.0]
    assert body["extra_logs"]["error"] == [0.0, 1.0, 1.0, 0.0]


def test_a_request_with_more_items_than_the_limit_is_refused_with_413(client):
    resp = client.post("/get_reward", json={"query": ["x"] * 65, "prompts": [""] * 65,
                                            "labels": [None] * 65})
    assert resp.status_code == 413
    assert resp.json()["error"] == ("expected at most 64 items per request, found 65; split the "
                                    "batch (or raise --max-items)")
    many = client.post("/v1/verify", json={"items": [{"task": {}, "completion": ""}] * 65})
    assert many.status_code == 413


def test_json_nested_past_the_decoder_is_a_400_not_a_500(client):
    resp = client.post("/get_reward", content=b"[" * 100_000 + b"]" * 100_000,
                       headers={"content-type": "application/json"})
    assert resp.status_code == 400 and "nested too deeply" in resp.json()["error"]


# -- a real server on loopback ------------------------------------------------------------------


@pytest.fixture
def live() -> Iterator[str]:
    """A real server on loopback with a 1 MiB body limit; yields the base URL."""
    with live_server(ServerConfig(workers=2, max_body_bytes=1 << 20), registry()) as base:
        yield base


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit(live):
    port = int(live.rsplit(":", 1)[1])
    frame = b"%x\r\n%s\r\n" % (65536, b"x" * 65536)
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /get_reward HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nTransfer-Encoding: chunked\r\n\r\n")
        while sent < 256 << 20 and not select.select([sock], [], [], 0)[0]:
            try:
                sock.sendall(frame)
            except (TimeoutError, BrokenPipeError, ConnectionResetError):
                break  # the server stopped reading
            sent += 65536
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert sent < 16 << 20  # refused after ~1 MiB, not after reading the whole stream


def _stuck_env(marks: Path) -> dict[str, str]:
    return {"RLHUB_PLUGINS": "stuckplug", "RLHUB_DISABLE_AUTOLOAD": "1",
            "RLHUB_STUCK_MARKS": str(marks),
            "PYTHONPATH": os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")])}


def _stuck_task() -> Any:
    from rlhub.plugins import Registry

    import stuckplug  # the server imports it from FIXTURES

    return Registry(plugins=[stuckplug], autoload=False).get("stuck/wait-v1").task("train", 0, 0)


def _post_quietly(base: str, task: Any, completion: str) -> threading.Thread:
    def post() -> None:
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(base + "/get_reward", json={"query": [completion], "prompts": [""],
                                                   "labels": [label_of(task)]}, timeout=700)

    thread = threading.Thread(target=post, daemon=True)
    thread.start()
    return thread


def _reached_verifier(marks: Path, count: int, timeout_s: float = 60) -> None:
    """Wait until ``count`` verifications have begun (the stuck plugin marks each one)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if marks.exists() and len(marks.read_text().splitlines()) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"expected {count} verifications to have begun within {timeout_s:g} s, "
                         f"found {marks.read_text() if marks.exists() else 'none'}")


def test_health_and_metrics_answer_within_a_second_while_verifiers_spin(tmp_path):
    marks = tmp_path / "marks"
    with ServerProcess(["--workers", "4"], env=_stuck_env(marks), start_timeout_s=120) as server:
        for _ in range(4):  # every verification thread burns pure-Python CPU for 60 s
            _post_quietly(server.url, _stuck_task(), "spin 60")
        _reached_verifier(marks, 4)
        took = []
        for _ in range(10):
            for path in ("/health", "/metrics"):
                started = time.perf_counter()
                assert httpx.get(server.url + path, timeout=30).status_code == 200
                took.append(time.perf_counter() - started)
            time.sleep(0.05)
        busy = httpx.get(server.url + "/health", timeout=30).json()["queue"]["inflight"]
    assert busy == 4  # the spinning verifications were still running throughout
    # the margins leave room for a loaded CI machine
    assert sorted(took)[len(took) // 2] < 1.0 and max(took) < 5.0


def test_sigterm_ends_the_server_within_seconds_while_a_verification_spins(tmp_path):
    marks = tmp_path / "marks"
    with ServerProcess(["--workers", "2"], env=_stuck_env(marks), start_timeout_s=120) as server:
        _post_quietly(server.url, _stuck_task(), "spin 600")
        _reached_verifier(marks, 1)
        assert server.proc is not None
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(60)
        assert time.monotonic() - started < 15
        assert code in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has stopped


def test_a_label_for_a_listed_domain_whose_manifest_is_invalid_is_refused_not_trained_on():
    import flawedplug
    import toyplug

    from rlhub import Registry, Task

    reg = Registry(plugins=[toyplug, flawedplug], autoload=False)
    task = Task(id="flawed/bad-v1:train:0:0", domain="flawed/bad-v1", prompt="p", answer="a")
    label = json.dumps({"domain": "flawed/bad-v1", "task": task.to_dict()})
    with TestClient(create_app(ServerConfig(workers=1), reg)) as c:
        served = {row["id"] for row in c.get("/v1/domains").json()["domains"]}
        body = post_reward(c, [("a", label)])
        item = c.post("/v1/verify", json={"task": task.to_dict(), "completion": "a"}).json()
    assert "toy/copy-v1" in served and "flawed/bad-v1" not in served
    assert body["rewards"] == [0.0] and body["extra_logs"]["failure_label"] == [1.0]
    assert body["extra_logs"]["trainable"] == [0.0]
    assert item["failure"] == "label" and item["error"].endswith(
        "cannot be used: plugin 'flawed', domain 'flawed/bad-v1': field license: 3 is not of "
        "type 'string'")
