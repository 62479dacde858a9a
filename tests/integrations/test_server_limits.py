"""`rlhub serve` against slow, idle and greedy clients, on real sockets: bodies and WebSocket
messages under deadlines and size limits, admission only for whole bodies, a cap per address,
every working endpoint behind the gate, and a request log bounded in bytes."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import resource
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")

from hub_helpers import live_server
from rlhub import Registry
from rlhub.integrations.openrlhf.export import label_of
from rlhub.integrations.server.app import ServerConfig
from rlhub.integrations.server.process import ServerProcess

SLOW_HEAD = (b"POST /get_reward HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: 1000\r\n\r\n{")


def stuck_registry() -> Registry:
    import stuckplug

    return Registry(plugins=[stuckplug], autoload=False)


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def connect(port: int, source: str = "127.0.0.1", first: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
    if first:
        sock.sendall(first)
    return sock


def closed_within(sock: socket.socket, seconds: float) -> bytes | None:
    """What the server sent before closing ``sock`` within ``seconds``; None if still open."""
    sock.settimeout(seconds)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return got


def gold_reward(base: str, timeout: float = 60) -> dict[str, Any]:
    task = stuck_registry().get("stuck/wait-v1").task("train", 0, 0)
    resp = httpx.post(base + "/get_reward", json={"query": [task.gold], "prompts": [""],
                                                  "labels": [label_of(task)]}, timeout=timeout)
    assert resp.status_code == 200, resp.text
    return resp.json()


# -- bodies, headers and connections ------------------------------------------------------------


def test_a_body_that_trickles_in_holds_no_admission_slot_and_is_refused_408_at_its_deadline():
    config = ServerConfig(workers=1, max_inflight=2, body_timeout_s=3.0)
    with live_server(config, stuck_registry()) as base:
        slow = [connect(port_of(base), first=SLOW_HEAD) for _ in range(6)]
        time.sleep(0.5)
        queue = httpx.get(base + "/health", timeout=30).json()["queue"]
        assert (queue["inflight"], queue["reading"]) == (0, 6)
        assert gold_reward(base, timeout=10)["rewards"] == [1.0]
        replies = [closed_within(s, 30) for s in slow]
    assert all(r is not None and r.startswith(b"HTTP/1.1 408") for r in replies), replies[0]
    assert b"expected the whole body within 3 s" in replies[0]


def test_a_connection_that_never_completes_its_headers_is_closed_at_the_header_deadline():
    config = ServerConfig(workers=1, header_timeout_s=1.0)
    with live_server(config, stuck_registry()) as base:
        silent = connect(port_of(base))
        partial = connect(port_of(base), first=b"POST /get_reward HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        assert closed_within(silent, 30) == b"" and closed_within(partial, 30) is not None
        assert time.monotonic() - started < 20
        kept = httpx.Client(base_url=base)  # a keep-alive client is not cut between requests
        assert [kept.get("/health").status_code for _ in range(3)] == [200] * 3
        assert httpx.get(base + "/health").json()["connections"]["header_timeouts"] >= 2


def test_connections_beyond_one_addresses_cap_get_a_503_and_other_addresses_are_served():
    config = ServerConfig(workers=1, max_connections_per_client=4)
    with live_server(config, stuck_registry()) as base:
        held = [connect(port_of(base)) for _ in range(4)]
        time.sleep(0.3)
        refused = closed_within(connect(port_of(base)), 30)
        assert refused is not None and refused.startswith(b"HTTP/1.1 503")
        assert b"expected at most 4 open connections from 127.0.0.1" in refused
        other = connect(port_of(base), source="127.0.0.2",
                        first=b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert (closed_within(other, 30) or b"").startswith(b"HTTP/1.1 200")
        for sock in held:
            sock.close()
        time.sleep(0.3)
        assert httpx.get(base + "/health", timeout=30).json()["connections"]["refused"] == 1


class FakeTransport:
    """What the connection cap reads of a transport: its peer and whether it is closing."""

    def __init__(self, host: str):
        self.peer = (host, 40000)
        self.closing = False

    def get_extra_info(self, name: str) -> Any:
        return self.peer if name == "peername" else None

    def is_closing(self) -> bool:
        return self.closing


def test_a_closed_connection_whose_close_was_not_seen_stops_counting_once_the_cap_is_reached():
    from rlhub.integrations.server.connections import ConnectionLimits

    cap = ConnectionLimits(per_client=2)
    first, upgraded = FakeTransport("10.0.0.1"), FakeTransport("10.0.0.1")
    assert cap.admit(first) and cap.admit(upgraded)
    assert not cap.admit(FakeTransport("10.0.0.1"))
    upgraded.closing = True  # a WebSocket's close never reaches the HTTP protocol's release()
    assert cap.admit(FakeTransport("10.0.0.1"))
    assert not cap.admit(FakeTransport("10.0.0.1"))
    assert cap.admit(FakeTransport("10.0.0.2"))
    assert cap.refused == 2 and cap.state()["open"] == 3


@contextlib.contextmanager
def more_files(wanted: int) -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = soft if soft >= wanted else min(wanted, hard)
    assert target >= wanted, f"this test needs {wanted} open files; the hard limit is {hard}"
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_genuine_request_is_answered_while_a_thousand_slow_or_idle_connections_are_open():
    env = {"RLHUB_PLUGINS": "stuckplug", "RLHUB_DISABLE_AUTOLOAD": "1"}
    with more_files(4096), ServerProcess(["--workers", "2", "--header-timeout", "120",
                                          "--body-timeout", "120"], env=env) as server:
        baseline = [_timed(lambda: gold_reward(server.url)) for _ in range(3)]
        idle = [connect(server.port) for _ in range(500)]
        slow = [connect(server.port, first=SLOW_HEAD) for _ in range(500)]
        time.sleep(1.0)
        during = [_timed(lambda: gold_reward(server.url, timeout=30)) for _ in range(3)]
        health = httpx.get(server.url + "/health", timeout=30).json()
        for sock in idle + slow:
            sock.close()
    assert health["connections"]["open"] >= 1000 and health["queue"]["reading"] == 500
    # "its usual time": wide margins for a loaded machine; stalled, it would never answer
    assert max(during) < max(10.0, 20 * sorted(baseline)[1]), (baseline, during)


def _timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


# -- WebSocket messages -------------------------------------------------------------------------


def ws_connect(port: int) -> socket.socket:
    key = base64.b64encode(os.urandom(16))
    sock = connect(port, first=b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                               b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                               b"Sec-WebSocket-Key: " + key + b"\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def close_code(sock: socket.socket, seconds: float = 30) -> int | None:
    """The status code of the close frame the server sends within ``seconds``, if any."""
    sock.settimeout(seconds)
    data = b""
    with contextlib.suppress(TimeoutError, ConnectionResetError):
        while len(data) < 4 and (chunk := sock.recv(4096)):
            data += chunk
    if len(data) >= 4 and data[0] == 0x88:
        return int(struct.unpack(">H", data[2:4])[0])
    return None


def test_a_websocket_message_over_the_limit_is_refused_from_its_frame_header():
    config = ServerConfig(workers=1, openenv=True, max_body_bytes=1 << 20)
    with live_server(config, stuck_registry()) as base:
        sock = ws_connect(port_of(base))
        # a text frame announcing 8 MiB, of which only 10 bytes are ever sent
        sock.sendall(bytes([0x81, 0x80 | 127]) + struct.pack(">Q", 8 << 20) + b"\0" * 4
                     + b"x" * 10)
        assert close_code(sock) == 1009


def test_a_websocket_session_that_sends_no_message_is_closed_at_its_idle_deadline():
    config = ServerConfig(workers=1, openenv=True, episode_ttl_s=1.0)
    with live_server(config, stuck_registry()) as base:
        sock = ws_connect(port_of(base))
        assert close_code(sock) == 1008


# -- the gate -----------------------------------------------------------------------------------


def test_sampling_waits_at_the_admission_gate_like_every_endpoint_that_does_work():
    reg = stuck_registry()
    task = reg.get("stuck/wait-v1").task("train", 0, 0)
    with live_server(ServerConfig(workers=1, max_inflight=1), reg) as base:
        hold = threading.Thread(target=lambda: httpx.post(base + "/get_reward", json={
            "query": ["wait 4"], "prompts": [""], "labels": [label_of(task)]}, timeout=60))
        hold.start()
        time.sleep(0.5)
        with httpx.Client(base_url=base, timeout=60) as client:
            sampled: list[Any] = []
            waiter = threading.Thread(target=lambda: sampled.append(client.post(
                "/v1/sample", json={"domain": "stuck/wait-v1", "n": 2})))
            waiter.start()
            time.sleep(1.0)
            queue = httpx.get(base + "/health", timeout=30).json()["queue"]
            waiter.join(60)
        hold.join(60)
    assert queue["waiting"] == 1 and queue["inflight"] == 1
    assert sampled[0].status_code == 200 and len(sampled[0].json()["tasks"]) == 2


def test_sampling_more_tasks_than_max_items_is_refused_naming_the_limit():
    from starlette.testclient import TestClient

    from rlhub.integrations.server.app import create_app

    with TestClient(create_app(ServerConfig(workers=1, max_items=8), stuck_registry())) as client:
        resp = client.post("/v1/sample", json={"domain": "stuck/wait-v1", "n": 9})
    assert resp.status_code == 400
    assert resp.json()["error"] == "expected 'n' to be an integer in [1, 8], found 9"


def test_a_large_keyed_sample_is_answered_but_not_kept_and_its_retry_is_not_run_again():
    from starlette.testclient import TestClient

    from rlhub.integrations.server.app import create_app

    config = ServerConfig(workers=1, max_kept_answer_bytes=4096)
    with TestClient(create_app(config, stuck_registry())) as client:
        body = {"domain": "stuck/wait-v1", "n": 200}
        first = client.post("/v1/sample", json=body, headers={"Idempotency-Key": "big-1"})
        retry = client.post("/v1/sample", json=body, headers={"Idempotency-Key": "big-1"})
        kept = client.get("/health").json()["requests"]
    assert first.status_code == 200 and len(first.json()["tasks"]) == 200
    assert retry.status_code == 410 and "it is not run again" in retry.json()["error"]
    assert kept["bytes"] < 4096 and kept["unkept"] == 1


def test_bodies_held_in_memory_wait_for_the_byte_budget_instead_of_filling_the_machine():
    import asyncio

    from rlhub.integrations.server.guard import BodyBudget

    async def scenario() -> list[Any]:
        budget = BodyBudget(100)
        await budget.take(80)
        second = asyncio.ensure_future(budget.take(50))
        await asyncio.sleep(0.01)
        waited = not second.done()
        budget.give(80)
        await asyncio.wait_for(second, 5)
        alone = BodyBudget(10)
        await asyncio.wait_for(alone.take(50), 5)  # one body over the budget goes alone
        return [waited, budget.held, alone.held]

    assert asyncio.run(scenario()) == [True, 50, 50]


def test_every_body_is_given_back_to_the_budget_once_answered():
    from starlette.testclient import TestClient

    from rlhub.integrations.server.app import create_app

    task = stuck_registry().get("stuck/wait-v1").task("train", 0, 0)
    with TestClient(create_app(ServerConfig(workers=1), stuck_registry())) as client:
        for _ in range(3):
            client.post("/get_reward", json={"query": [task.gold], "prompts": [""],
                                             "labels": [label_of(task)]})
        client.post("/v1/verify", content=b"{" + b" " * 5000)  # refused: invalid JSON
        assert client.get("/health").json()["queue"]["body_bytes"] == 0
