"""The OpenEnv client against a hostile server: every misbehaviour is classed, none is a crash
and none is the model's wrong answer."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from websockets.sync.server import serve

from rlhub import Manifest
from rlhub_openenv import client
from rlhub_openenv.config import manifest
from rlhub_openenv.domain import make


def _reply(mode: str, kind: str) -> str | None:
    if kind == "reset":
        return json.dumps({"type": "observation", "data": {"observation": {"text": "go"},
                                                            "reward": None, "done": False}})
    frames = {
        "nan": json.dumps({"type": "observation", "data": {"observation": {}, "reward": "NaN",
                                                            "done": True}}),
        "garbage": "this is not json",
        "huge": json.dumps({"type": "observation", "data": {"observation": {
            "text": "x" * (client.MAX_MESSAGE_BYTES + 10)}, "reward": 1.0, "done": True}}),
        "busy": json.dumps({"type": "error", "data": {"code": "CAPACITY_REACHED",
                                                      "message": "8 of 8 sessions in use"}}),
        "crash": json.dumps({"type": "error", "data": {"code": "EXECUTION_ERROR",
                                                       "message": "ZeroDivisionError"}}),
        "silent": None,
    }
    return frames[mode]


def _handler(ws) -> None:
    mode = "nan"
    for raw in ws:
        message = json.loads(raw)
        if message["type"] == "close":
            return
        if message["type"] == "reset":
            mode = message["data"].get("mode", mode)
        frame = _reply(mode, message["type"])
        if frame is not None:
            ws.send(frame)


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    with serve(_handler, "127.0.0.1", 0, max_size=None) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.socket.getsockname()[1]}"
        server.shutdown()


def _domain(url: str, mode: str):
    raw = manifest("openenv/hostile-v1", {"name": "hostile", "url": url,
                                          "reset": {"mode": mode}}, {})
    return make(Manifest.parse(raw, plugin="openenv"))


@pytest.mark.parametrize(("mode", "error"), [
    ("nan", "VerifierError: OpenEnv server ws://127.0.0.1:{port}/ws: expected a finite reward, "
            "found NaN"),
    ("garbage", "VerifierError: OpenEnv server ws://127.0.0.1:{port}/ws: expected a JSON frame, "
                "found 'this is not json'"),
    ("huge", "SandboxError: OpenEnv server ws://127.0.0.1:{port}/ws dropped the connection: "
             "ConnectionClosedError"),
    ("busy", "SandboxError: OpenEnv server ws://127.0.0.1:{port}/ws: CAPACITY_REACHED: 8 of 8 "
             "sessions in use"),
    ("crash", "VerifierError: OpenEnv server ws://127.0.0.1:{port}/ws: EXECUTION_ERROR: "
              "ZeroDivisionError"),
    ("silent", "SandboxError: OpenEnv server ws://127.0.0.1:{port}/ws failed to answer a step: "
               "TimeoutError"),
])
def test_each_misbehaviour_is_an_error_of_its_class(hostile, monkeypatch, mode, error):
    # Only the silent server is waited out; the others answer, and a loaded machine may take
    # seconds to send a frame of 16 MiB, which must not read as silence.
    monkeypatch.setattr(client, "MESSAGE_TIMEOUT_S", 0.5 if mode == "silent" else 60.0)
    domain = _domain(hostile, mode)
    score = domain.verify(domain.task("train", 0, 0), "1")
    assert (score.reward, score.passed, score.trainable) == (0.0, False, False)
    assert score.failure == error.split("Error:")[0].lower()
    assert score.error.startswith(error.format(port=hostile.rsplit(":", 1)[1]))
