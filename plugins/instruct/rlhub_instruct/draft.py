"""Gold completions: a structured draft that constraints shape, rendered to text.

Each constraint's ``shape(draft)`` records what it needs (a title, three sections, a keyword said
twice, a JSON wrapper, ...); :meth:`Draft.render` then lays the parts out in a fixed order::

    [repeated request] [start phrase] [<<title>>]
    block 1 (sentences, extra sentences, bullets) SEP block 2 ... SEP block N
    [P.S. line] [end phrase]
    -> case transform -> quotation or JSON wrapper

Head and tail lines join their neighbouring block with a single newline, so they never change the
paragraph or section count. All filler text is comma-free and avoids request words and keywords
(see ``words.py``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from rlhub_instruct import words
from rlhub_instruct.request import Request

SEPARATORS = {"plain": "\n\n", "blank": "\n\n", "divider": "\n***\n", "sections": "\n\n"}


@dataclass
class Draft:
    """The parts of a gold completion; see the module docstring for the layout."""

    request: Request
    rng: random.Random
    layout: str = "plain"
    blocks: list[list[str]] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    repeat: bool = False
    start: str | None = None
    title: str | None = None
    postscript: str | None = None
    end: str | None = None
    case: str | None = None
    wrap: str | None = None
    used_fillers: set[str] = field(default_factory=set)

    @classmethod
    def begin(cls, request: Request, rng: random.Random) -> Draft:
        """A one-block draft holding one sentence about the topic."""
        draft = cls(request, rng)
        draft.blocks = [[draft.topic_sentence()]]
        return draft

    def topic_sentence(self) -> str:
        opener = self.rng.choice(words.OPENERS)
        return f"{opener} {self.request.topic} {self.rng.choice(words.PREDICATES)}."

    def filler(self) -> str:
        """A filler sentence, not repeating one until every filler has been used."""
        unused = [f for f in words.FILLERS if f not in self.used_fillers]
        if not unused:
            self.used_fillers.clear()
            unused = list(words.FILLERS)
        choice = self.rng.choice(unused)
        self.used_fillers.add(choice)
        return choice

    def set_blocks(self, layout: str, n: int) -> None:
        """Use ``n`` blocks in ``layout`` (``blank``, ``divider`` or ``sections``)."""
        self.layout = layout
        first = self.blocks[0] if self.blocks else [self.topic_sentence()]
        self.blocks = [first] + [[self.filler(), self.filler()] for _ in range(n - 1)]

    def pad(self) -> None:
        """Lengthen the draft by one filler sentence (in the last block)."""
        self.blocks[-1].append(self.filler())

    def _block_text(self, index: int, sentences: list[str]) -> str:
        body = sentences + (self.extras if index == 0 else [])
        lines = [" ".join(body)]
        if index == 0:
            lines += [f"* {b}" for b in self.bullets]
        if self.layout == "sections":
            lines.insert(0, f"## Part {index + 1}")
        return "\n".join(lines)

    def render(self) -> str:
        """The completion text (see the module docstring for the order of parts)."""
        body = SEPARATORS[self.layout].join(
            self._block_text(i, sentences) for i, sentences in enumerate(self.blocks))
        head = [self.request.sentence] if self.repeat else []
        head += [f"{self.start}:"] if self.start else []
        head += [f"<<{self.title}>>"] if self.title else []
        tail = [self.postscript] if self.postscript else []
        tail += [self.end] if self.end else []
        text = "\n".join([*head, body, *tail])
        if self.case == "upper":
            text = text.upper()
        elif self.case == "lower":
            text = text.lower()
        if self.wrap == "quote":
            text = f'"{text}"'
        elif self.wrap == "json":
            text = json.dumps({"response": text})
        return text
