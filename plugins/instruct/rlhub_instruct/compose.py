"""Putting a task together: pick compatible constraints, write the prompt, build the gold.

Two constraints conflict when no single response can satisfy both as the gold builder lays them
out (a JSON wrapper and a ``## heading``, quotation marks and an opening phrase, ...), or when
their combination would make the instructions ambiguous (sentence counts next to headings).
:func:`pick_kinds` never puts conflicting kinds, or two kinds of one group, in the same task.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rlhub_instruct.constraints import KINDS, Constraint, Content, Context, LengthLimit, Topic
from rlhub_instruct.draft import Draft
from rlhub_instruct.request import Request, sample_request

# At most one kind of each group per task.
GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"word_count", "sentence_count", "char_count"}),
    frozenset({"json_wrap", "quotation"}),
    frozenset({"uppercase", "lowercase"}),
    frozenset({"paragraphs", "sections"}),
)
_CONFLICTS: dict[str, set[str]] = {
    "json_wrap": {"paragraphs", "sections", "bullets", "starts_with", "ends_with", "title",
                  "postscript", "repeat_request", "sentence_count", "uppercase", "lowercase"},
    "quotation": {"starts_with", "ends_with", "title", "repeat_request", "sections"},
    "uppercase": {"starts_with", "ends_with", "repeat_request"},
    "lowercase": {"starts_with", "ends_with", "repeat_request"},
    "repeat_request": {"keywords_exclude", "no_commas", "starts_with"},
    "sentence_count": {"title", "sections", "bullets", "postscript", "repeat_request"},
}
COMBINABLE: tuple[str, ...] = tuple(sorted(k for k in KINDS if k not in ("topic", "content")))
MAX_PAD = 400


def conflicts(a: str, b: str) -> bool:
    """Whether kinds ``a`` and ``b`` may not share a task."""
    same_group = any(a in g and b in g for g in GROUPS)
    return a == b or same_group or b in _CONFLICTS.get(a, set()) or a in _CONFLICTS.get(b, set())


def pick_kinds(rng: random.Random, n: int) -> list[str]:
    """``n`` pairwise compatible constraint kinds, drawn with ``rng``."""
    order = list(COMBINABLE)
    rng.shuffle(order)
    chosen: list[str] = []
    for kind in order:
        if all(not conflicts(kind, other) for other in chosen):
            chosen.append(kind)
        if len(chosen) == n:
            return chosen
    raise ValueError(f"instruct: expected {n} compatible constraint kinds, found only {chosen}")


def prompt_text(request: Request, constraints: list[Constraint]) -> str:
    """The prompt: the request, its tone, then one sentence per constraint, on one line."""
    return " ".join([request.sentence, request.tone_sentence,
                     *(c.instruction() for c in constraints)])


@dataclass
class Built:
    """A finished task: its request, constraints, prompt and gold completion."""

    request: Request
    constraints: list[Constraint]
    prompt: str
    gold: str


def build(rng: random.Random, kinds: list[str]) -> Built:
    """Sample a request and the constraints ``kinds`` (plus topic and content), then the gold."""
    request = sample_request(rng)
    ctx = Context(request, rng)
    constraints = [Topic.sample(ctx), Content.sample(ctx)]
    constraints += [KINDS[kind].sample(ctx) for kind in kinds]
    draft = Draft.begin(request, rng)
    for constraint in constraints:
        constraint.shape(draft)
    fit_lengths(draft, constraints, prompt_text(request, constraints), rng)
    return Built(request, constraints, prompt_text(request, constraints), draft.render())


def fit_lengths(draft: Draft, constraints: list[Constraint], prompt: str,
                rng: random.Random) -> None:
    """Pad the gold to the content floor, calibrate length limits against it and the prompt,
    then pad the gold to the limits."""
    content = [c for c in constraints if isinstance(c, Content)]
    for _ in range(MAX_PAD):
        if all(c.failure(draft.render()) is None for c in content):
            break
        draft.pad()
    limits = [c for c in constraints if isinstance(c, LengthLimit)]
    for limit in limits:
        measure = type(limit).measure
        limit.calibrate(measure(draft.render()), measure(prompt), rng)
    for _ in range(MAX_PAD):
        if all(limit.failure(draft.render()) is None for limit in limits):
            return
        draft.pad()
    raise RuntimeError(f"instruct: the gold could not reach the length limits {limits}")


def failures(constraints: list[Constraint], text: str) -> list[tuple[Constraint, str]]:
    """``(constraint, reason)`` for every constraint ``text`` does not satisfy."""
    found = []
    for constraint in constraints:
        reason = constraint.failure(text)
        if reason is not None:
            found.append((constraint, reason))
    return found
