"""The writing request at the head of every prompt, generated from the word lists."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

from rlhub_instruct import words


@dataclass(frozen=True)
class Request:
    """What to write: a genre, a topic, an audience, a focus and a tone.

    ``topic`` is the word every response must mention; ``banned_candidates`` are the head words of
    the request that a forbidden-word constraint may ban (they occur in the prompt, never in gold).
    """

    topic: str
    topic_phrase: str
    genre: str
    genre_word: str
    audience: str
    audience_word: str
    focus: str
    focus_word: str
    tone: str
    tone_word: str

    @property
    def sentence(self) -> str:
        """The first sentence of the prompt (the one repeat-the-request constraints quote)."""
        return (f"Write {self.genre} about {self.topic_phrase} for {self.audience}, "
                f"focusing on {self.focus}.")

    @property
    def tone_sentence(self) -> str:
        return f"Use {self.tone} tone."

    @property
    def banned_candidates(self) -> tuple[str, ...]:
        return (self.genre_word, self.audience_word, self.focus_word, self.tone_word)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sample_request(rng: random.Random) -> Request:
    """A request drawn from the word lists using only ``rng``."""
    topic, topic_phrase = rng.choice(words.TOPICS)
    genre, genre_word = rng.choice(words.GENRES)
    audience, audience_word = rng.choice(words.AUDIENCES)
    focus, focus_word = rng.choice(words.FOCUSES)
    tone, tone_word = rng.choice(words.TONES)
    return Request(topic, topic_phrase, genre, genre_word, audience, audience_word,
                   focus, focus_word, tone, tone_word)
