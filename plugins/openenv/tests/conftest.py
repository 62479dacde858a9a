"""A real OpenEnv server (``guess_server.py``, OpenEnv's own framework) in OpenEnv's own venv.

``make setup`` creates ``.venv-openenv`` (openenv and verifiers pin different mcp versions);
``RLHUB_OPENENV_PYTHON`` names another interpreter. Missing, the tests fail: in CI a missing
component is a failure, not a skip.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlhub import plugins

HERE = Path(__file__).parent
ROOT = HERE.parents[2]


def openenv_python() -> str:
    path = os.environ.get("RLHUB_OPENENV_PYTHON") or str(ROOT / ".venv-openenv" / "bin" / "python")
    if not Path(path).exists():
        pytest.fail(f"expected OpenEnv's interpreter at {path}, found none; run `make setup` "
                    "or set RLHUB_OPENENV_PYTHON")
    return path


class GuessServer:
    """``guess_server.py`` on a free loopback port, until :meth:`stop`."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([openenv_python(), str(HERE / "guess_server.py"),
                                      str(self.port)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        self.stop()
        pytest.fail(f"the OpenEnv test server did not start: {self.proc.stderr.read()[-2000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


def declare(folder: Path, name: str, url: str, **extra: object) -> Path:
    lines = [f"name: {name}", f"url: {url}", "license: BSD-3-Clause", "max_turns: 8"]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def guess_server() -> Iterator[GuessServer]:
    server = GuessServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def oe_registry(guess_server: GuessServer, tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("openenv_envs")
    declare(folder, "guess", guess_server.url)
    declare(folder, "gone", "http://127.0.0.1:1")
    saved = {k: os.environ.get(k) for k in ("RLHUB_OPENENV_ENVS", "RLHUB_HOME")}
    os.environ["RLHUB_OPENENV_ENVS"] = str(folder)
    os.environ["RLHUB_HOME"] = str(tmp_path_factory.mktemp("openenv_home"))
    plugins.reset()
    yield plugins.registry()
    plugins.reset()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def fresh_server() -> Iterator[GuessServer]:
    """A server of the test's own, which the test may stop."""
    server = GuessServer()
    yield server
    server.stop()
