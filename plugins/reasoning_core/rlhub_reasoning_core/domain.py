"""The domain behind every ``rcore/<name>-v1``: Reasoning Core generates the task and scores it.

Sampling. A task is a Reasoning Core seed (even for ``train``, odd for ``test``, so the splits never
share an example) drawn from the task's rng; the example is ``task.generate_example()`` with the
global generators seeded from it (see :mod:`rlhub_reasoning_core.work`), in a worker whose hash
seed is :data:`HASH_SEED`: many generators iterate over sets of strings, whose order follows
the hash seed (``logic_qa`` made a different theory for one seed under half the hash seeds).
Only tasks whose examples were the same in two fresh interpreters, made in opposite orders, are
domains (the catalog measures it).

Scoring. The answer is the last ``<answer>...</answer>`` (else what
:func:`rlhub.extract.final_answer` finds), cut to ``max_answer_chars``, and scored by the task's
own ``score_answer`` against the example of the task's seed (kept from sampling, else generated
again first). A scorer that raises on a malformed answer scores it 0. The reward is
exact-only (component ``correct``): 1 when Reasoning Core gives full marks and the answer agrees
with the gold (:func:`rlhub.bridges.gold_agrees`: a numeric gold wants that number), else 0; its
own partial credit (numeric closeness, overlap) is logged as ``score`` and never paid, as for
reasoning-gym (v2: the scorer's full marks alone are not a pass).

Bounds. Generation and scoring run in worker processes of a
:class:`~rlhub.verifiers.bounded.BoundedPool` (a CPU-time budget per call, an address-space limit
per worker). An answer whose scoring spends its budget (sympy on a power tower) is the answer's
fault: the minimum, class ``answer``, with a feedback line. A generation that fails, or a worker
lost on a loaded machine, raises: a verifier failure, never a wrong answer.
"""

from __future__ import annotations

import atexit
import random
import threading
from collections import OrderedDict
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict, VerifierError, final_answer
from rlhub.bridges import gold_agrees
from rlhub.verifiers import bounded

INSTRUCTION = ("Think it through, then give your final answer inside <answer></answer> tags, "
               "in exactly the format the question asks for, with nothing else inside the tags.")
_OPEN, _CLOSE = "<answer>", "</answer>"
SEED_SPACE = 2**30
WORK = "rlhub_reasoning_core.work"
GENERATE = bounded.Budget(cpu_s=30.0)
SCORE = bounded.Budget(cpu_s=2.0)
CACHED = 512
HASH_SEED = 0  # the workers' PYTHONHASHSEED: set iteration order is part of an example
_POOL: bounded.BoundedPool | None = None
_POOL_LOCK = threading.Lock()


def pool() -> bounded.BoundedPool:
    """The workers Reasoning Core runs in, started on first use and closed at exit."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = bounded.BoundedPool(size=2, memory_mb=2048, hash_seed=HASH_SEED)
            atexit.register(_POOL.close)
        return _POOL


class ReasoningCoreDomain(Domain):
    """One Reasoning Core task (``params.task``) as an rlhub domain; see the module docstring."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.name = str(self.params["task"])
        self.max_answer_chars = int(self.params.get("max_answer_chars", 2000))
        self._examples: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        seed = 2 * rng.randrange(SEED_SPACE) + (split == "test")
        made = self.example(seed)
        return {"prompt": f"{made['prompt']}\n\n{INSTRUCTION}", "answer": made["answer"],
                "gold": f"{_OPEN}{made['answer']}{_CLOSE}",
                "meta": {"seed": seed, "task": self.name}}

    def check(self, task: Task, completion: str) -> Verdict:
        tagged = _OPEN in completion.lower() and _CLOSE in completion.lower()
        answer, notes = final_answer(completion), []
        if not tagged:
            notes.append("No <answer>...</answer> tags found: put your final answer inside them.")
        if len(answer) > self.max_answer_chars:
            answer = answer[: self.max_answer_chars]
            notes.append(f"The answer was cut to its first {self.max_answer_chars} characters.")
        example = self.example(int(task.meta["seed"]))["example"]
        try:
            score, raised = self._call("score", example, answer, budget=SCORE)
        except bounded.WorkExceeded as exc:
            return Verdict({"correct": 0.0, "score": 0.0, "format": float(tagged)}, False,
                           f"The answer was not scored: it {exc}.", failure="answer")
        if raised:
            notes.append(f"The scorer could not read the answer ({raised}).")
        score = min(max(score, 0.0), 1.0) if score == score else 0.0
        passed = score >= 1.0 and gold_agrees(answer, task.answer) is not False
        if not passed:
            notes.insert(0, f"Reasoning Core scored the answer {score:.3g} out of 1" + (
                f", but {answer[:80]!r} is not the number asked for." if score >= 1.0 else "."))
        return Verdict({"correct": float(passed), "score": score, "format": float(tagged)},
                       passed, "" if passed else " ".join(notes))

    def example(self, seed: int) -> dict[str, Any]:
        """Reasoning Core's example at ``seed``: prompt, answer, pickle (the last 512 kept)."""
        with self._lock:
            made = self._examples.get(seed)
        if made is None:
            made = self._call("generate", seed, budget=GENERATE)
            with self._lock:
                self._examples[seed] = made
                while len(self._examples) > CACHED:
                    self._examples.popitem(last=False)
        return made

    def _call(self, fn: str, *args: Any, budget: bounded.Budget) -> Any:
        try:
            return pool().call(f"{WORK}:{fn}", self.name, *args, budget=budget)
        except bounded.RemoteError as exc:
            raise VerifierError(f"{self.id}: Reasoning Core's {fn} raised {exc}") from exc


def make(manifest: Manifest) -> ReasoningCoreDomain:
    """The manifest's factory."""
    return ReasoningCoreDomain(manifest)
