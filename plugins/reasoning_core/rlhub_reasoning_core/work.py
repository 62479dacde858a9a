"""What runs inside the bounded worker processes: Reasoning Core's own generation and scoring.

Reasoning Core draws from the process-global ``random`` and ``numpy.random`` modules, bounds
generation with ``SIGALRM`` (main thread only), warns off the main thread and may start child
processes; none of that belongs in a reward server's threads. So rlhub's process never imports it:
:mod:`rlhub_reasoning_core.domain` calls these functions through a
:class:`~rlhub.verifiers.bounded.BoundedPool`, whose workers are fresh interpreters running calls on
their main thread under a CPU-time and memory budget. Importing this module (outside any call's
budget) imports Reasoning Core.

An example is ``task.generate_example()`` of a new task instance with both global generators
seeded from the rlhub seed, the source's own way to pin it (Reasoning Core's validation asserts
that generation never seeds itself), and a reseed from the OS (``random.seed()``) turned into one
from the rlhub seed's own stream. :func:`generate` returns it pickled, so that scoring, under a
budget of its own, never regenerates; the pickle only ever travels between rlhub's process and its
own workers.
"""

from __future__ import annotations

import contextlib
import pickle
import random
import warnings
from collections.abc import Iterator
from typing import Any

import numpy

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "tiktoken unavailable": it counts words instead
    import reasoning_core


# Beyond any generation the worker's CPU budget lets finish (rlhub_reasoning_core.domain.GENERATE).
WALL_GUARD_S = 3600


@contextlib.contextmanager
def pinned_reseeding(seed: int) -> Iterator[None]:
    """Turn ``random.seed()`` without a seed (a reseed from the OS, which ``gramforge.generate``
    does on every call) into a reseed from a stream of ``seed``'s own, while the block runs."""
    stream, reseed = random.Random(seed), random.seed

    def pinned(a: Any = None, version: int = 2) -> None:
        reseed(stream.getrandbits(64) if a is None else a, version)

    random.seed = pinned  # type: ignore[assignment]
    try:
        yield
    finally:
        random.seed = reseed  # type: ignore[assignment]


def _task(name: str) -> Any:
    """A new instance of task ``name`` (a few ms): some tasks keep state from one generation to
    the next (``defeasible_nli`` draws differently after others ran), so none is reused."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return reasoning_core.get_task(name)


def generate(name: str, seed: int) -> dict[str, Any]:
    """The prompt, canonical answer and pickled example of task ``name`` at ``seed``."""
    task = _task(name)
    random.seed(seed)
    numpy.random.seed(seed % 2**32)
    with warnings.catch_warnings(), pinned_reseeding(seed):
        warnings.simplefilter("ignore")
        example = task.generate_example(timeout=WALL_GUARD_S)
    return {"prompt": str(example.prompt), "answer": str(example.answer),
            "example": pickle.dumps(example)}


def score(name: str, example: bytes, answer: str) -> tuple[float, str]:
    """Reasoning Core's own ``score_answer`` and, when it raised, why (a malformed answer)."""
    entry = pickle.loads(example)  # noqa: S301 - made by generate() above, never by a caller
    try:
        return float(_task(name).score_answer(answer, entry)), ""
    except Exception as exc:  # noqa: BLE001 - scorers raise on malformed answers
        return 0.0, f"{type(exc).__name__}: {str(exc)[:200]}"
