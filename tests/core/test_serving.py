"""``rlhub.serving``: servers bind their own port (0: any free one) and announce it once they
listen, so no test or tool races another process for a port picked beforehand."""

from __future__ import annotations

import errno
import socket
import subprocess
import sys
import threading
import urllib.request

import pytest

from rlhub import serving


async def hello_app(scope, receive, send):  # a minimal ASGI app
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def test_a_server_on_port_0_announces_the_port_it_bound_once_it_listens():
    announced: list[str] = []
    up = threading.Event()
    sock = serving.bind("127.0.0.1", 0)
    server = serving.server(hello_app, sock, lambda url: (announced.append(url), up.set()),
                            log_level="warning", lifespan="off")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        assert up.wait(60)
        (url,) = announced
        assert url == f"http://127.0.0.1:{sock.getsockname()[1]}" and not url.endswith(":0")
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert resp.read() == b"hello"
    finally:
        server.should_exit = True
        thread.join(30)


def test_a_refused_port_refuses_connections_and_no_one_else_can_take_it():
    port = serving.refused_port()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=10)
    with socket.socket() as other, pytest.raises(OSError) as taken:
        other.bind(("127.0.0.1", port))
    assert taken.value.errno == errno.EADDRINUSE


def test_the_last_announced_address_is_found_in_a_log():
    log = ("starting\nrlhub serve: listening on http://127.0.0.1:41234 (POST ...)\n"
           "rlhub serve: listening on http://[::1]:5000 (POST ...)\n")
    assert serving.announced_url(log) == "http://[::1]:5000"
    assert serving.announced_url("rlhub serve: http://127.0.0.1:8000/get_reward") is None


def test_rlhub_serve_on_port_0_serves_where_it_says():
    pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")
    from rlhub.integrations.server.process import ServerProcess

    with ServerProcess(["--workers", "1"]) as server:
        assert server.port != 0
        assert f"rlhub serve: listening on {server.url} " in server.output()
        with urllib.request.urlopen(server.url + "/health", timeout=30) as resp:
            assert resp.status == 200


def test_a_started_server_freezes_its_start_up_heap_and_collects_young_objects_less_often():
    code = ("import gc; from rlhub import serving; before = gc.get_threshold(); "
            "serving.settle_heap(); after = gc.get_threshold(); "
            "print(gc.get_freeze_count() > 1000, after[0] - before[0], after[1:] == before[1:])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True).stdout.split()
    assert out == ["True", str(serving.YOUNG_COLLECTION_EVERY - 700), "True"]
