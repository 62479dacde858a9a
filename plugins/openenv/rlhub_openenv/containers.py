"""Start an OpenEnv environment's container image on a loopback port (``image:`` in its YAML).

The container runs as OpenEnv's own providers run it (the server listens on port 8000 inside),
published on ``127.0.0.1`` only, and is removed when this process exits. One container per
image per process. A missing Docker engine or an image that does not start raises
:class:`rlhub.SandboxError`.
"""

from __future__ import annotations

import atexit
import threading
import time
import urllib.request
from typing import Any

from rlhub import SandboxError

PORT = 8000
START_TIMEOUT_S = 120.0
_lock = threading.Lock()
_started: dict[str, str] = {}


def start_image(image: str) -> str:
    """The URL of a running container of ``image``, started on first call."""
    with _lock:
        if image not in _started:
            _started[image] = _run(image)
        return _started[image]


def _run(image: str) -> str:
    try:
        import docker

        container = docker.from_env().containers.run(
            image, detach=True, ports={f"{PORT}/tcp": ("127.0.0.1", None)}, auto_remove=True)
    except Exception as exc:  # noqa: BLE001 - no engine, no image: infrastructure
        raise SandboxError(f"could not start the OpenEnv image {image!r}: "
                           f"{type(exc).__name__}: {exc}") from exc
    atexit.register(_stop, container)
    container.reload()
    port = container.ports[f"{PORT}/tcp"][0]["HostPort"]
    url = f"http://127.0.0.1:{port}"
    _wait_healthy(url, image)
    return url


def _wait_healthy(url: str, image: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SandboxError(f"the OpenEnv image {image!r} did not answer {url}/health within "
                       f"{START_TIMEOUT_S:g} s")


def _stop(container: Any) -> None:
    try:
        container.stop(timeout=5)
    except Exception:  # noqa: BLE001,S110 - already gone
        pass
