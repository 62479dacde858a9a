"""The scheduler's run log: ``RUN_DIR/scheduler.jsonl``, one line per mixture decision.

Each line is a JSON object ``{"step": int, "weights": {domain: float}, ...}``; extra keys (for
example ``counts``) are allowed and ignored by readers that do not know them. Trainers and evals
append with :func:`log_weights` (or ``Scheduler.log``); ``rlhub mix plot RUN_DIR`` reads the file
with :func:`read_weights`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rlhub.errors import SchedulerError

LOG_NAME = "scheduler.jsonl"


def log_path(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / LOG_NAME


def log_weights(run_dir: str | os.PathLike[str], step: int, weights: dict[str, float],
                **extra: Any) -> Path:
    """Append one decision to ``RUN_DIR/scheduler.jsonl`` (creating the folder); return the path."""
    path = log_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"step": int(step), "weights": weights, **extra}, sort_keys=False)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return path


def read_weights(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every logged decision, in file order; errors name the file and line."""
    path = log_path(run_dir)
    if not path.is_file():
        raise SchedulerError(f"expected a scheduler log at {path}, found no such file; the "
                             "trainer writes it with rlhub.scheduler.log_weights()")
    rows = []
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except ValueError as exc:
            raise SchedulerError(f"{path} line {n}: expected a JSON object, found {exc}") from exc
        if not isinstance(row, dict) or not isinstance(row.get("weights"), dict) \
                or not isinstance(row.get("step"), int):
            raise SchedulerError(f"{path} line {n}: expected {{step: int, weights: {{domain: "
                                 f"float}}}}, found {text[:120]!r}")
        rows.append(row)
    return rows
