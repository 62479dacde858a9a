"""Run ``rlhub serve`` as a child process on a free loopback port (tests, benchmarks, ``train``).

::

    with ServerProcess(["--workers", "4"]) as server:
        httpx.post(server.url + "/get_reward", json=...)

The child is started with the same interpreter (``python -m rlhub serve``) on ``--port 0`` unless
a port is given: it binds a free port itself and announces it once it listens (no race with other
processes over a port picked beforehand). It is waited for until ``/health`` answers, and stopped
with SIGTERM (then SIGKILL) on exit; its stderr is kept in a file and quoted when it fails to
start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Self

from rlhub.errors import TrainerError
from rlhub.serving import announced_url


class ServerProcess:
    """A ``rlhub serve`` child process; see the module docstring."""

    def __init__(self, args: list[str] | None = None, *, host: str = "127.0.0.1",
                 port: int | None = None, env: dict[str, str] | None = None,
                 start_timeout_s: float = 120.0):
        self.host = host
        self.port = port or 0  # 0 until the child announces the port it bound
        self.args = list(args or [])
        self.env = {**os.environ, **(env or {})}
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        # Closed and removed in __exit__; the child writes to it for its whole life.
        self.log = tempfile.NamedTemporaryFile(  # noqa: SIM115
            prefix="rlhub-serve-", suffix=".log", delete=False)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Self:
        cmd = [sys.executable, "-m", "rlhub", "serve", "--host", self.host,
               "--port", str(self.port), *self.args]
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise TrainerError(f"rlhub serve exited with status {self.proc.returncode} "
                                   f"before answering /health:\n{self.output()[-4000:]}")
            if not self.port:
                url = announced_url(self.output())
                self.port = int(url.rsplit(":", 1)[1]) if url else 0
                time.sleep(0 if url else 0.1)
                continue
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        self.stop()
        raise TrainerError(f"rlhub serve did not answer {self.url}/health within "
                           f"{self.start_timeout_s:g} s:\n{self.output()[-4000:]}")

    def output(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM the server (it shuts its pool down), then SIGKILL whatever its group left."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout_s)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)
