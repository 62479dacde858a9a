"""Helpers shared by the hub tests (importable: tests/integrations is put on sys.path by conftest)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlhub.plugins import Registry

ROWS = [
    {
        "qid": f"q{i}",
        "question": f"What is {i} + {i}? Answer with the number only.",
        "ans": str(2 * i),
    }
    for i in range(30)
]


def write_data_domain(
    root: Path,
    *,
    dataset: str = "../data/rows.jsonl",
    rows: list[dict[str, Any]] = ROWS,
    **extra: Any,
) -> Path:
    """A data-only domain file ``root/domains/double.yaml`` and its JSONL dataset."""
    (root / "domains").mkdir(parents=True, exist_ok=True)
    data = (root / "domains" / dataset).resolve()
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {
        "id": "mydata/double-v1",
        "dataset": dataset,
        "license": "CC-BY-4.0",
        "split": {"test_fraction": 0.3},
        "tags": ["data", "arithmetic"],
        "fields": {"id": "qid", "prompt": "question", "answer": "ans"},
        "verifier": "exact",
        **extra,
    }
    path = root / "domains" / "double.yaml"
    path.write_text(json.dumps(spec, indent=2))  # JSON is YAML
    return path


def installed(home: Path) -> list[Path]:
    """Every installed environment folder under ``$RLHUB_HOME/envs``."""
    envs = home / "envs"
    return sorted(p for p in envs.glob("*/*") if p.is_dir()) if envs.is_dir() else []


def api() -> Any:
    """huggingface_hub's own client, pointed at the emulated Hub (the ``hub`` fixture)."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=os.environ["HF_ENDPOINT"])


@contextlib.contextmanager
def live_server(config: Any, registry: Registry) -> Iterator[str]:
    """``rlhub serve``'s app on a real uvicorn in a thread, with the options ``rlhub serve`` gives
    it (connection limits, WebSocket size); yields the base URL."""
    from rlhub import serving
    from rlhub.integrations.server.app import create_app, uvicorn_options

    sock = serving.bind("127.0.0.1", 0)
    app = create_app(config, registry)
    options = {**uvicorn_options(app.state.service), "timeout_graceful_shutdown": 1}
    server = serving.server(app, sock, log_level="error", lifespan="on", **options)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not server.started:
        time.sleep(0.05)
    try:
        yield serving.url_of(sock)
    finally:
        server.should_exit = True
        thread.join(30)
