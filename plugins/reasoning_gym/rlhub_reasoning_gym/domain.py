"""The domain behind every ``rg/<name>-v1``: reasoning-gym generates the task and scores the answer.

Sampling. Task ``(split, seed, index)`` is item ``index % block_size`` of the dataset
``reasoning_gym.create_dataset(name, size=block_size, seed=s)``, where ``s`` is a sha256 of
(domain id, version, split, seed, index // block_size). Building a dataset is what is slow for a
few generators (arc_agi reads its puzzle files, ~0.4 s; group_anagrams, figlet_font, codeio and
word_ladder 0.1-0.2 s), so datasets are cached per block; items are made on demand by index. Train
and test hash to unrelated seeds. Each item is memoised as encoded JSON, so a task asked for twice
is generated once and callers never share mutable state.

Scoring. The answer is the last ``<answer>...</answer>`` (else what
:func:`rlhub.extract.final_answer` finds), cut to ``max_answer_chars``, passed through the
dataset's guard (``guards.py``: answers a scorer would run as code) and given to the
dataset's own ``score_answer`` with the decoded entry. Exceptions from ``score_answer`` count as
a wrong answer (some scorers raise on malformed input, e.g. prime_factorization on text). The
reward is exact-only (component ``correct``): 1 when reasoning-gym gives full marks and the
answer agrees with the gold (:func:`rlhub.bridges.gold_agrees`: when the gold is a number, the
answer must be that number), else 0. Its own partial credit (a superstring's length ratio,
numeric closeness, 0.01 for any non-empty answer) is logged as ``score`` and never paid: constant
and hedged answers collected it. The scorer's full marks alone are not a pass: coin_flip's
credits a matching prefix of the printed number, so ``0`` earned them for every probability
below one (v3 domains decide with the gold; see the plugin's README).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict, final_answer, task_id
from rlhub.bridges import gold_agrees

from rlhub_reasoning_gym import codec, guards

INSTRUCTION = ("Think it through, then give your final answer inside <answer></answer> tags, "
               "in exactly the format the question asks for, with nothing else inside the tags.")
_OPEN, _CLOSE = "<answer>", "</answer>"
_MAX_SEED = 2**32 - 2**20  # numpy-style seeds stay below 2**32 even after adding an item index


class ReasoningGymDomain(Domain):
    """One reasoning-gym dataset as an rlhub domain; see the module docstring.

    Params (manifest ``params``): ``dataset`` (the reasoning-gym name, required), ``config``
    (keyword arguments for the dataset's config, default none), ``block_size`` (items per cached
    dataset, default 256), ``max_answer_chars`` (default 10000), ``cached_blocks`` (default 4) and
    ``cached_items`` (default 512).
    """

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.dataset = str(self.params["dataset"])
        self.config: dict[str, Any] = dict(self.params.get("config", {}))
        self.block_size = int(self.params.get("block_size", 256))
        self.max_answer_chars = int(self.params.get("max_answer_chars", 10_000))
        self._cached_blocks = int(self.params.get("cached_blocks", 4))
        self._blocks: OrderedDict[tuple[str, int, int], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._scorer: Any = None
        self._meta_json = functools.lru_cache(int(self.params.get("cached_items", 512)))(
            self._make_meta_json)

    # -- sampling ----------------------------------------------------------------------------

    def task(self, split: str, seed: int, index: int) -> Task:
        """The task at (split, seed, index); see the module docstring for how it is derived."""
        self._check_split(split)
        if index < 0:
            raise ValueError(f"domain {self.id!r}: expected an index >= 0, found {index}")
        meta = json.loads(self._meta_json(split, int(seed), int(index)))
        answer = codec.decode(meta["entry"]["answer"])
        answer = None if answer is None else str(answer)
        return Task(
            id=task_id(self.id, split, seed, index),
            domain=self.id,
            prompt=f"{meta['entry']['question']}\n\n{INSTRUCTION}",
            answer=answer,
            gold=None if answer is None else f"{_OPEN}{answer}{_CLOSE}",
            meta=meta,
        )

    def generate(self, rng: Any, split: str, index: int) -> dict[str, Any]:
        """Not used: :meth:`task` needs the seed itself to find the dataset block."""
        raise NotImplementedError(f"{self.id}: tasks come from task(split, seed, index)")

    def block_seed(self, split: str, seed: int, block: int) -> int:
        """The reasoning-gym seed of one block: the same in every process and Python version."""
        key = f"{self.id}\x00{self.manifest.version}\x00{split}\x00{seed}\x00{block}".encode()
        return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % _MAX_SEED

    def _make_meta_json(self, split: str, seed: int, index: int) -> str:
        """Task meta as JSON: the encoded entry and where it came from in reasoning-gym."""
        block, offset = divmod(index, self.block_size)
        dataset = self._block(split, seed, block)
        with stdout_to_stderr():
            entry = dataset[offset]
        source = {"seed": self.block_seed(split, seed, block), "size": self.block_size,
                  "index": offset, "config": self.config}
        meta = {"dataset": self.dataset, "source": source, "entry": codec.encode(entry)}
        return json.dumps(meta, allow_nan=False)

    def _block(self, split: str, seed: int, block: int) -> Any:
        key = (split, seed, block)
        with self._lock:
            if key in self._blocks:
                self._blocks.move_to_end(key)
                return self._blocks[key]
            dataset = self._create(self.block_size, self.block_seed(split, seed, block))
            self._blocks[key] = dataset
            while len(self._blocks) > self._cached_blocks:
                self._blocks.popitem(last=False)
            return dataset

    def _create(self, size: int, seed: int) -> Any:
        with stdout_to_stderr():
            import reasoning_gym

            return reasoning_gym.create_dataset(self.dataset, size=size, seed=seed, **self.config)

    # -- scoring -----------------------------------------------------------------------------

    @property
    def scorer(self) -> Any:
        """A dataset instance whose ``score_answer`` judges answers (built once, thread-safe)."""
        if self._scorer is None:
            with self._lock:
                if self._scorer is None:
                    self._scorer = self._create(1, 0)
        return self._scorer

    def check(self, task: Task, completion: str) -> Verdict:
        tagged = _OPEN in completion.lower() and _CLOSE in completion.lower()
        answer = final_answer(completion)
        notes = []
        if not tagged:
            notes.append("No <answer>...</answer> tags found: put your final answer inside them.")
        if len(answer) > self.max_answer_chars:
            answer = answer[: self.max_answer_chars]
            notes.append(f"The answer was cut to its first {self.max_answer_chars} characters.")
        refused = guards.refusal(self.dataset, answer, task.answer)
        if refused:
            notes.append(f"The answer was not accepted for scoring: {refused}.")
            answer = ""
        score = self.score(task, answer)
        agrees = gold_agrees(answer, task.answer)
        passed = score >= 1.0 and agrees is not False
        if not passed and not refused:
            notes.insert(0, f"reasoning-gym scored the answer {score:.3g} out of 1" + (
                f", but {answer[:80]!r} is not the number asked for." if score >= 1.0 else "."))
        components = {"correct": float(passed), "score": score, "format": float(tagged)}
        return Verdict(components, passed, "" if passed else " ".join(notes))

    def score(self, task: Task, answer: str) -> float:
        """reasoning-gym's score of ``answer`` for ``task`` (a raising scorer counts as 0)."""
        entry = codec.decode(_entry_of(task))
        try:
            with stdout_to_stderr():
                return float(self.scorer.score_answer(answer=answer, entry=entry))
        except Exception:  # noqa: BLE001 - malformed answers make some scorers raise
            return 0.0


_redirect_lock = threading.Lock()
_redirect_depth = 0
_saved_stdout: Any = None


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send what reasoning-gym prints to stderr, so stdout stays clean for ``--json`` output.

    Some generators print progress (bf prints dots, codeio prints failed snippets). Unlike
    ``contextlib.redirect_stdout``, this is safe when several threads enter it at once: the first
    one in swaps ``sys.stdout`` and the last one out restores it.
    """
    global _redirect_depth, _saved_stdout
    with _redirect_lock:
        if _redirect_depth == 0:
            _saved_stdout, sys.stdout = sys.stdout, sys.stderr
        _redirect_depth += 1
    try:
        yield
    finally:
        with _redirect_lock:
            _redirect_depth -= 1
            if _redirect_depth == 0:
                sys.stdout, _saved_stdout = _saved_stdout, None


def _entry_of(task: Task) -> Any:
    entry = task.meta.get("entry") if isinstance(task.meta, dict) else None
    if not isinstance(entry, dict) or "answer" not in entry:
        raise ValueError(f"task {task.id}: expected meta.entry holding the reasoning-gym entry "
                         f"(question, answer, metadata); found {type(entry).__name__}")
    return entry


def make(manifest: Manifest) -> ReasoningGymDomain:
    """Factory named by every ``rg/`` manifest."""
    return ReasoningGymDomain(manifest)
