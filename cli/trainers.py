"""The trainer wiring: rlhub's own trainer backends, answering ``rlhub_make_trainer`` last.

``local`` is the single-machine GRPO trainer (:mod:`rlhub.integrations.trainer.local`) and ``openrlhf`` the
OpenRLHF job builder (:mod:`rlhub.integrations.openrlhf.job`). They live here, above the core and the integrations,
so that the core never imports the hub. rlhub's pyproject names this module an entry point of the
group ``rlhub.plugins`` (``rlhub-trainers``), loaded into every registry beside the built-in plugin
(:mod:`rlhub.plugins`), so a registry a test, the server or a Ray actor makes has the trainers too;
any plugin can add or take over a backend.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlhub.hookspecs import Trainer, hookimpl

if TYPE_CHECKING:
    from rlhub.plugins import Registry

NAME = "rlhub-trainers"
BACKENDS = ("local", "openrlhf")


@hookimpl(trylast=True)
def rlhub_make_trainer(backend: str, config: dict[str, Any], registry: Registry) -> Trainer | None:
    if backend == "openrlhf":
        from rlhub.integrations.openrlhf.job import OpenRLHFTrainer

        return OpenRLHFTrainer(config, registry)
    if backend == "local":
        from rlhub.integrations.trainer.local import make_local_trainer

        return make_local_trainer(config, registry, progress=stderr_progress())
    return None


def stderr_progress() -> Callable[[str], None]:
    """Print a trainer's progress messages to stderr, each after the seconds since the start."""
    start = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - start:7.1f} s] {message}", file=sys.stderr, flush=True)

    return say

