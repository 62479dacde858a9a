"""Fixtures of the loop tests: the looptest plugin, servers on ports they bind, subprocess
environments."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).parent
VENV_BIN = Path(sys.executable).parent
RLHUB = str(VENV_BIN / "rlhub")
sys.path.insert(0, str(HERE))

import loopplugin  # noqa: E402


@pytest.fixture
def reg() -> object:
    """A registry holding only rlhub's built-ins and the looptest plugin."""
    from rlhub.plugins import Registry

    return Registry(plugins=[loopplugin], autoload=False)


@pytest.fixture(scope="session")
def rlhub_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One RLHUB_HOME for the session, so builtin:tiny is built once."""
    return tmp_path_factory.mktemp("rlhub-home")


@pytest.fixture(autouse=True)
def _home_env(rlhub_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLHUB_HOME", str(rlhub_home))


def cli_env(rlhub_home: Path, **extra: str) -> dict[str, str]:
    """The environment for an ``rlhub`` subprocess that loads the looptest plugin only."""
    env = {**os.environ, "RLHUB_HOME": str(rlhub_home), "RLHUB_PLUGINS": "loopplugin",
           "RLHUB_DISABLE_AUTOLOAD": "1",
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    env.update(extra)
    return env


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    """Wait until ``url`` answers 200, failing early if ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"server exited with {proc.returncode}: {out[-2000:]}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"expected {url} to answer within {timeout} s")


def announced(log: Path, proc: subprocess.Popen[bytes], timeout: float = 300.0) -> str:
    """The URL a server child announces in ``log`` once it listens; fails early if it exits.

    The first ``builtin:tiny`` of a session builds the model first: minutes on a loaded machine."""
    from rlhub.serving import announced_url

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        url = announced_url(log.read_text(errors="replace"))
        if url:
            return url
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}: "
                                 f"{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.1)
    raise AssertionError(f"expected the server to announce its address within {timeout} s")


@pytest.fixture
def serve(rlhub_home: Path, tmp_path: Path) -> Iterator[object]:
    """Start ``rlhub policy serve SPEC`` on 127.0.0.1, on a port it binds itself; yields a start
    function returning the API root."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(spec: str, *args: str, plugins: str = "loopplugin") -> str:
        log = tmp_path / f"policy-serve-{len(procs)}.log"
        with log.open("wb") as err:
            proc = subprocess.Popen([RLHUB, "policy", "serve", spec, "--host", "127.0.0.1",
                                     "--port", "0", *args],
                                    env=cli_env(rlhub_home, RLHUB_PLUGINS=plugins),
                                    stdout=subprocess.DEVNULL, stderr=err)
        procs.append(proc)
        base = announced(log, proc)
        wait_http(f"{base}/health", proc)
        return f"{base}/v1"

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
