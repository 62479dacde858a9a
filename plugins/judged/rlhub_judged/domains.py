r"""The judged domains: task sources whose verifiers (named in the manifests) call an LLM judge.

* ``explain``: explain a concept to an audience; the judge grades against the reference
  explanation and its key points.
* ``dialogue``: reply as the assistant in a multi-turn chat; graded against a reference reply.
* ``preference``: answer an advice question; the judge compares the answer with a weaker baseline
  answer (pairwise). The gold completion is the strong answer, which the judge should prefer.
* ``reasoned-arithmetic``: a word problem; ``math`` checks the ``\boxed{}`` answer and gates the
  judge, which grades the explanation against a worked solution.

Hand-written items are split by position: every fourth item is held out for ``test``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, TypeVar

from rlhub import Domain, Manifest

from rlhub_judged.catalog import AUDIENCES, CONCEPTS, CONVERSATIONS, PREFERENCES

T = TypeVar("T")
MAX_WORDS = 120


def pool(items: Sequence[T], split: str) -> list[T]:
    """The items of ``split``: every fourth item for ``test``, the others for ``train``."""
    return [x for i, x in enumerate(items) if (i % 4 == 0) == (split == "test")]


class Explain(Domain):
    """Explain a concept to an audience in one short paragraph."""

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        concept = rng.choice(pool(CONCEPTS, split))
        audience = rng.choice(AUDIENCES)
        prompt = (f"Explain {concept.name} to {audience} in one paragraph of at most {MAX_WORDS} "
                  "words. Be accurate, cover the essential ideas, and write plainly.")
        return {"prompt": prompt, "answer": concept.reference, "gold": concept.reference,
                "meta": {"concept": concept.name, "audience": audience,
                         "key_points": list(concept.key_points)}}


class Dialogue(Domain):
    """Continue a conversation: the prompt is chat messages ending with the user's turn."""

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        convo = rng.choice(pool(CONVERSATIONS, split))
        messages = [{"role": "system", "content": convo.system}]
        for i, text in enumerate(convo.turns):
            messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
        return {"prompt": messages, "answer": convo.reference, "gold": convo.reference,
                "meta": {"key_points": list(convo.key_points)}}


class Preference(Domain):
    """Answer an advice question; judged pairwise against a baseline answer (``task.answer``)."""

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        item = rng.choice(pool(PREFERENCES, split))
        prompt = (f"{item.question}\nAnswer in one helpful paragraph of at most {MAX_WORDS} "
                  "words with concrete steps.")
        return {"prompt": prompt, "answer": item.baseline, "gold": item.gold,
                "meta": {"key_points": list(item.key_points)}}


def _word_problem(rng: random.Random) -> tuple[str, int, str]:
    """(problem, answer, worked solution without the boxed answer)."""
    a, b = rng.randint(3, 12), rng.randint(4, 15)
    total = a * b
    kind = rng.randrange(3)
    if kind == 0:
        c = rng.randint(1, total - 1)
        return ((f"A baker bakes {a} trays of {b} cookies each and sells {c} cookies. How many "
                "cookies are left?"), total - c,
                (f"The baker bakes {a} x {b} = {total} cookies. After selling {c}, "
                f"{total} - {c} = {total - c} cookies are left."))
    if kind == 1:
        c = rng.randint(2, 40)
        return ((f"A library has {a} shelves with {b} books on each shelf. It receives {c} new "
                "books. How many books does it have now?"), total + c,
                (f"The shelves hold {a} x {b} = {total} books. Adding {c} new books gives "
                f"{total} + {c} = {total + c} books."))
    c = rng.randint(1, b - 1)
    return ((f"{a} friends share {total} stickers equally, and then each friend gives away {c} "
            "stickers. How many stickers does each friend have left?"), b - c,
            (f"Each friend first gets {total} / {a} = {b} stickers. After giving away {c}, each "
            f"has {b} - {c} = {b - c} stickers left."))


class ReasonedArithmetic(Domain):
    r"""A word problem answered with reasoning and a ``\boxed{}`` final answer."""

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        problem, answer, solution = _word_problem(rng)
        prompt = (f"{problem}\nExplain each step of your reasoning in a sentence, then give the "
                  "final answer as a number in \\boxed{}.")
        gold = f"{solution} The answer is \\boxed{{{answer}}}."
        return {"prompt": prompt, "answer": str(answer), "gold": gold,
                "meta": {"solution": gold}}


KINDS: dict[str, type[Domain]] = {"explain": Explain, "dialogue": Dialogue,
                                  "preference": Preference,
                                  "reasoned-arithmetic": ReasonedArithmetic}


def make(manifest: Manifest) -> Domain:
    """The factory named by every manifest of this plugin (``params.kind`` picks the class)."""
    kind = manifest.data["params"].get("kind")
    if kind not in KINDS:
        raise ValueError(f"rlhub-judged: expected params.kind in {sorted(KINDS)}, found {kind!r}")
    return KINDS[kind](manifest)
