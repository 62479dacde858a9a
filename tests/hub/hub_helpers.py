"""Helpers shared by the hub tests (importable: tests/hub is put on sys.path by conftest)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
