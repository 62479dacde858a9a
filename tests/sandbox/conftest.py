"""Fixtures for the sandbox conformance suite: one backend instance per backend kind.

``sandbox`` is parametrized over every backend; docker and ray parameters carry their markers and
skip, naming what is missing, when the machine has no Docker engine or no Ray.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# Set before any backend starts: a host secret that must never reach a job.
HOST_SECRET = "rlhub-host-secret-" + uuid.uuid4().hex
os.environ["RLHUB_CONFORMANCE_SECRET"] = HOST_SECRET


def _docker_backend():  # noqa: ANN202 - returns a backend
    from rlhub.sandbox.docker_backend import DockerBackend, engine_problem

    problem = engine_problem()
    if problem:
        pytest.skip(f"no Docker engine reachable ({problem}); run .ci/docker-setup.sh")
    return DockerBackend(containers=2, slots=16)


def _ray_backend():  # noqa: ANN202
    pytest.importorskip("ray", reason="ray is not installed (pip install 'rlhub[ray]')")
    from rlhub.sandbox.ray_backend import RayBackend

    return RayBackend(actors=2)


def _local_backend():  # noqa: ANN202
    from rlhub.sandbox.local import LocalBackend

    return LocalBackend()


MAKERS = {"local": _local_backend, "docker": _docker_backend, "ray": _ray_backend}


@pytest.fixture(
    scope="session",
    params=[
        pytest.param("local"),
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("ray", marks=pytest.mark.ray),
    ],
)
def sandbox(request: pytest.FixtureRequest) -> Iterator[object]:
    backend = MAKERS[request.param]()
    yield backend
    backend.close()


def host_processes_with(token: str) -> list[int]:
    """Host pids whose command line contains ``token`` (containers share this kernel's /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()
