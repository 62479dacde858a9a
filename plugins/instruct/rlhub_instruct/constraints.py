"""One small checker per instruction family, IFEval style.

A :class:`Constraint` is a dataclass of its parameters with four jobs:

* ``sample(ctx)`` draws parameters from the task's rng (classmethod);
* ``instruction()`` is the sentence the prompt states;
* ``failure(text)`` returns None when ``text`` satisfies it, else a reason a policy can act on;
* ``shape(draft)`` tells the gold builder (``draft.py``) what a satisfying completion needs.

Constraints travel inside ``task.answer`` as ``{"kind": ..., **params}`` and are rebuilt with
:func:`from_dict`, so verifying never needs the generator. Length limits are calibrated after
the gold skeleton exists (:meth:`LengthLimit.calibrate`), so a limit is always reachable.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from rlhub_instruct import text as tx
from rlhub_instruct import words
from rlhub_instruct.draft import Draft
from rlhub_instruct.request import Request

KINDS: dict[str, type[Constraint]] = {}


@dataclass
class Context:
    """What sampling a constraint may look at: the request, the rng, keywords already taken."""

    request: Request
    rng: random.Random
    taken: set[str] = field(default_factory=set)

    def fresh_keywords(self, n: int) -> list[str]:
        """``n`` keywords no other constraint of this task uses."""
        chosen = self.rng.sample([w for w in words.KEYWORDS if w not in self.taken], n)
        self.taken.update(chosen)
        return chosen


def register(cls: type[Constraint]) -> type[Constraint]:
    """Class decorator adding a constraint family to :data:`KINDS` under its ``kind``."""
    KINDS[cls.kind] = cls
    return cls


def from_dict(data: dict[str, Any]) -> Constraint:
    """Rebuild a constraint from ``{"kind": ..., **params}`` (as stored in ``task.answer``)."""
    kind = data.get("kind")
    if kind not in KINDS:
        raise ValueError(f"instruct: expected a constraint kind in {sorted(KINDS)}, found {kind!r}")
    return KINDS[kind](**{k: v for k, v in data.items() if k != "kind"})


def quoted(items: list[str], joiner: str = "and") -> str:
    """``"a"``, ``"a" and "b"``, ``"a", "b" and "c"``."""
    marks = [f'"{w}"' for w in items]
    return marks[0] if len(marks) == 1 else ", ".join(marks[:-1]) + f" {joiner} " + marks[-1]


def times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


@dataclass
class Constraint:
    """Base class of the families; see the module docstring."""

    kind: ClassVar[str] = ""
    label: ClassVar[str] = ""

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls()

    def instruction(self) -> str:
        raise NotImplementedError

    def failure(self, text: str) -> str | None:
        raise NotImplementedError

    def shape(self, draft: Draft) -> None:
        """Record in ``draft`` what a satisfying completion needs (default: nothing)."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}


@register
@dataclass
class Topic(Constraint):
    """The response mentions the topic word (every task has this one)."""

    kind: ClassVar[str] = "topic"
    label: ClassVar[str] = "topic word"
    word: str = ""

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.request.topic)

    def instruction(self) -> str:
        return f'Mention the word "{self.word}" at least once.'

    def failure(self, text: str) -> str | None:
        return None if tx.count_word(text, self.word) else f'the word "{self.word}" never appears'


@register
@dataclass
class Content(Constraint):
    """The content requirement every task carries, before any format instruction pays.

    A response must be real writing of some length: at least ``min_words`` words in at least
    ``min_sentences`` sentences, at least half of its words distinct (no word salad of one
    repeated word). A one-word or one-line answer that keeps every format rule does not do the
    task, so it earns nothing (see :func:`rlhub_instruct.domain.content_gate`).
    """

    kind: ClassVar[str] = "content"
    label: ClassVar[str] = "content"
    min_words: int = 40
    min_sentences: int = 3

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.choice([30, 40, 50]), 3)

    def instruction(self) -> str:
        return (f"Write at least {self.min_words} words in at least {self.min_sentences} "
                "sentences.")

    def failure(self, text: str) -> str | None:
        found = tx.count_words(text)
        if found < self.min_words:
            return f"expected at least {self.min_words} words, found {found}"
        sentences = tx.count_sentences(text)
        if sentences < self.min_sentences:
            return f"expected at least {self.min_sentences} sentences, found {sentences}"
        distinct = tx.count_distinct_words(text)
        if 2 * distinct < found:
            return f"only {distinct} of the {found} words are distinct; write real sentences"
        return None


@dataclass
class LengthLimit(Constraint):
    """At least / at most ``limit`` units; the limit is set by :meth:`calibrate`."""

    unit: ClassVar[str] = ""
    measure: ClassVar[Callable[[str], int]]
    grow: ClassVar[tuple[int, int]] = (1, 1)
    slack: ClassVar[tuple[int, int]] = (0, 0)
    relation: str = "at_least"
    limit: int = 0

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.choice(["at_least", "at_most"]))

    def calibrate(self, gold: int, prompt: int, rng: random.Random) -> None:
        """Pick a limit the gold can meet and, where possible, an echoed prompt cannot."""
        if self.relation == "at_least":
            self.limit = max(gold, prompt) + rng.randint(*self.grow)
        else:
            low, high = gold + self.slack[0], gold + self.slack[1]
            if prompt - 1 >= low:
                high = min(high, prompt - 1)
            self.limit = rng.randint(low, high)

    def bound(self) -> str:
        return f"{self.relation.replace('_', ' ')} {self.limit} {self.unit}"

    def failure(self, text: str) -> str | None:
        found = type(self).measure(text)
        ok = found >= self.limit if self.relation == "at_least" else found <= self.limit
        return None if ok else f"expected {self.bound()}, found {found}"


@register
@dataclass
class WordCount(LengthLimit):
    kind: ClassVar[str] = "word_count"
    label: ClassVar[str] = "word count"
    unit: ClassVar[str] = "words"
    measure = staticmethod(tx.count_words)
    grow: ClassVar[tuple[int, int]] = (10, 60)
    slack: ClassVar[tuple[int, int]] = (2, 25)

    def instruction(self) -> str:
        return f"Answer with {self.bound()}."


@register
@dataclass
class SentenceCount(LengthLimit):
    kind: ClassVar[str] = "sentence_count"
    label: ClassVar[str] = "sentence count"
    unit: ClassVar[str] = "sentences"
    measure = staticmethod(tx.count_sentences)
    grow: ClassVar[tuple[int, int]] = (1, 5)
    slack: ClassVar[tuple[int, int]] = (0, 2)

    def instruction(self) -> str:
        return f"Your response should contain {self.bound()}."


@register
@dataclass
class CharCount(LengthLimit):
    kind: ClassVar[str] = "char_count"
    label: ClassVar[str] = "character count"
    unit: ClassVar[str] = "characters"
    measure = staticmethod(tx.count_chars)
    grow: ClassVar[tuple[int, int]] = (40, 400)
    slack: ClassVar[tuple[int, int]] = (10, 120)

    def instruction(self) -> str:
        return f"Your entire response should be {self.bound()} long."


@register
@dataclass
class KeywordsInclude(Constraint):
    """Each keyword appears at least ``times`` times (the prompt names each once)."""

    kind: ClassVar[str] = "keywords_include"
    label: ClassVar[str] = "required keywords"
    keywords: list[str] = field(default_factory=list)
    times: int = 2

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.fresh_keywords(ctx.rng.randint(2, 3)), 2)

    def instruction(self) -> str:
        return (f"Include the keywords {quoted(self.keywords)} in your response, "
                f"each at least {times(self.times)}.")

    def failure(self, text: str) -> str | None:
        short = [f'"{w}" appears {times(n)}' for w in self.keywords
                 if (n := tx.count_word(text, w)) < self.times]
        return None if not short else f"{'; '.join(short)} (each needs {times(self.times)})"

    def shape(self, draft: Draft) -> None:
        for word in self.keywords:
            templates = draft.rng.sample(words.KEYWORD_SENTENCES, self.times)
            draft.extras += [t.format(w=word) for t in templates]


@register
@dataclass
class KeywordsExclude(Constraint):
    """None of the banned words appears; they are taken from the request, so echoes fail."""

    kind: ClassVar[str] = "keywords_exclude"
    label: ClassVar[str] = "forbidden words"
    banned: list[str] = field(default_factory=list)

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.sample(list(ctx.request.banned_candidates), 2))

    def instruction(self) -> str:
        return f"Do not include the words {quoted(self.banned, 'or')} in your response."

    def failure(self, text: str) -> str | None:
        found = [f'"{w}" ({times(n)})' for w in self.banned if (n := tx.count_word(text, w))]
        return None if not found else f"found the forbidden word(s) {', '.join(found)}"


@register
@dataclass
class KeywordFrequency(Constraint):
    """One keyword appears at least / exactly ``count`` times."""

    kind: ClassVar[str] = "keyword_frequency"
    label: ClassVar[str] = "keyword frequency"
    word: str = ""
    relation: str = "at_least"
    count: int = 3

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        relation = ctx.rng.choice(["at_least", "exactly"])
        count = ctx.rng.randint(3, 5) if relation == "at_least" else ctx.rng.randint(2, 4)
        return cls(ctx.fresh_keywords(1)[0], relation, count)

    def instruction(self) -> str:
        how = "at least" if self.relation == "at_least" else "exactly"
        return f'The word "{self.word}" should appear {how} {self.count} times.'

    def failure(self, text: str) -> str | None:
        n = tx.count_word(text, self.word)
        ok = n >= self.count if self.relation == "at_least" else n == self.count
        how = "at least" if self.relation == "at_least" else "exactly"
        return None if ok else f'"{self.word}" appears {times(n)}; expected {how} {self.count}'

    def shape(self, draft: Draft) -> None:
        templates = draft.rng.sample(words.KEYWORD_SENTENCES, self.count)
        draft.extras += [t.format(w=self.word) for t in templates]


@register
@dataclass
class Uppercase(Constraint):
    kind: ClassVar[str] = "uppercase"
    label: ClassVar[str] = "all capital letters"

    def instruction(self) -> str:
        return "Your entire response should be in English and in all capital letters."

    def failure(self, text: str) -> str | None:
        if not any(ch.isalpha() for ch in text):
            return "the response holds no letters"
        bad = next((w for w in text.split() if w != w.upper()), None)
        return None if bad is None else f"found lowercase letters, e.g. in {bad[:40]!r}"

    def shape(self, draft: Draft) -> None:
        draft.case = "upper"


@register
@dataclass
class Lowercase(Constraint):
    kind: ClassVar[str] = "lowercase"
    label: ClassVar[str] = "all lowercase letters"

    def instruction(self) -> str:
        return ("Your entire response should be in English and in all lowercase letters; "
                "no capital letters are allowed.")

    def failure(self, text: str) -> str | None:
        if not any(ch.isalpha() for ch in text):
            return "the response holds no letters"
        bad = next((w for w in text.split() if w != w.lower()), None)
        return None if bad is None else f"found capital letters, e.g. in {bad[:40]!r}"

    def shape(self, draft: Draft) -> None:
        draft.case = "lower"


@register
@dataclass
class Paragraphs(Constraint):
    """Exactly ``count`` paragraphs, separated by blank lines or by ``***`` divider lines."""

    kind: ClassVar[str] = "paragraphs"
    label: ClassVar[str] = "paragraph count"
    count: int = 2
    divider: bool = False

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.randint(2, 5), ctx.rng.random() < 0.5)

    def instruction(self) -> str:
        if self.divider:
            return (f"There should be exactly {self.count} paragraphs. Paragraphs are separated "
                    f"with the markdown divider *** on a line of its own.")
        return (f"There should be exactly {self.count} paragraphs, separated from each other "
                f"by a blank line.")

    def failure(self, text: str) -> str | None:
        parts = tx.paragraphs(text, self.divider)
        how = "*** divider lines" if self.divider else "blank lines"
        if "" in parts:
            return f"paragraph {parts.index('') + 1} is empty (doubled or dangling separator)"
        if len(parts) != self.count:
            return f"expected {self.count} paragraphs separated by {how}, found {len(parts)}"
        return None

    def shape(self, draft: Draft) -> None:
        draft.set_blocks("divider" if self.divider else "blank", self.count)


@register
@dataclass
class Sections(Constraint):
    """Exactly ``count`` markdown sections, each with a heading line and some text."""

    kind: ClassVar[str] = "sections"
    label: ClassVar[str] = "markdown sections"
    count: int = 2

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.randint(2, 5))

    def instruction(self) -> str:
        return (f"Your response must have exactly {self.count} sections. Begin each section "
                f"with a markdown heading line such as ## Part 1.")

    def failure(self, text: str) -> str | None:
        found = tx.sections(text)
        empty = [head for head, body in found if not tx.has_alnum(body)]
        if empty:
            return f"section {empty[0][:60]!r} has no text under its heading"
        if len(found) != self.count:
            return f"expected {self.count} markdown headings (lines starting with #), found {len(found)}"
        return None

    def shape(self, draft: Draft) -> None:
        draft.set_blocks("sections", self.count)


@register
@dataclass
class Bullets(Constraint):
    kind: ClassVar[str] = "bullets"
    label: ClassVar[str] = "bullet points"
    count: int = 3

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.randint(2, 5))

    def instruction(self) -> str:
        return (f"Your answer must contain exactly {self.count} bullet points. Use markdown "
                f"bullet points such as: * This is a point.")

    def failure(self, text: str) -> str | None:
        n = tx.count_bullets(text)
        return None if n == self.count else (
            f"expected {self.count} bullet lines (starting with '* ' or '- '), found {n}")

    def shape(self, draft: Draft) -> None:
        draft.bullets = [draft.filler() for _ in range(self.count)]


@register
@dataclass
class StartsWith(Constraint):
    kind: ClassVar[str] = "starts_with"
    label: ClassVar[str] = "opening phrase"
    phrase: str = ""

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.choice(words.START_PHRASES))

    def instruction(self) -> str:
        return f'Start your response with the exact phrase "{self.phrase}".'

    def failure(self, text: str) -> str | None:
        head = text.strip()[: len(self.phrase)]
        return None if head == self.phrase else (
            f'the response starts with {head!r} instead of "{self.phrase}"')

    def shape(self, draft: Draft) -> None:
        draft.start = self.phrase


@register
@dataclass
class EndsWith(Constraint):
    kind: ClassVar[str] = "ends_with"
    label: ClassVar[str] = "closing phrase"
    phrase: str = ""

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.choice(words.END_PHRASES))

    def instruction(self) -> str:
        return (f'Finish your response with this exact phrase: "{self.phrase}" '
                f"No other words should follow it.")

    def failure(self, text: str) -> str | None:
        stripped = text.strip()
        tail = stripped[-len(self.phrase):] if len(stripped) >= len(self.phrase) else stripped
        return None if tail == self.phrase else (
            f'the response ends with {tail!r} instead of "{self.phrase}"')

    def shape(self, draft: Draft) -> None:
        draft.end = self.phrase


@register
@dataclass
class JsonWrap(Constraint):
    kind: ClassVar[str] = "json_wrap"
    label: ClassVar[str] = "JSON format"

    def instruction(self) -> str:
        return ("Wrap your entire output in JSON format: one JSON object, optionally inside a "
                "```json fenced block, and nothing else.")

    def failure(self, text: str) -> str | None:
        try:
            value = json.loads(tx.strip_fence(text))
        except ValueError as exc:
            return f"the output is not valid JSON ({str(exc)[:120]})"
        if not isinstance(value, dict):
            return f"expected one JSON object, found a JSON {type(value).__name__}"
        return None

    def shape(self, draft: Draft) -> None:
        draft.wrap = "json"


@register
@dataclass
class Placeholders(Constraint):
    kind: ClassVar[str] = "placeholders"
    label: ClassVar[str] = "placeholders"
    count: int = 2

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.randint(2, 4))

    def instruction(self) -> str:
        return (f"The response must contain at least {self.count} placeholders represented by "
                f"square brackets, such as [address].")

    def failure(self, text: str) -> str | None:
        n = len(tx.placeholders(text))
        return None if n >= self.count else (
            f"found {n} square-bracket placeholders like [name]; expected at least {self.count}")

    def shape(self, draft: Draft) -> None:
        names = draft.rng.sample(words.PLACEHOLDERS, self.count)
        draft.extras.append("Fill in " + " and ".join(f"[{n}]" for n in names) + " before sending.")


@register
@dataclass
class Title(Constraint):
    kind: ClassVar[str] = "title"
    label: ClassVar[str] = "title"

    def instruction(self) -> str:
        return ("Include a title wrapped in double angular brackets, such as <<a day at sea>>, "
                "on a line of its own.")

    def failure(self, text: str) -> str | None:
        return None if tx.title_lines(text) else (
            "no line consists only of a title in double angular brackets like <<my title>>")

    def shape(self, draft: Draft) -> None:
        draft.title = draft.rng.choice(words.TITLE_TEMPLATES).format(t=draft.request.topic.capitalize())


@register
@dataclass
class Postscript(Constraint):
    kind: ClassVar[str] = "postscript"
    label: ClassVar[str] = "postscript"
    marker: str = "P.S."

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.choice(words.POSTSCRIPT_MARKERS))

    def instruction(self) -> str:
        return (f"At the end of your response, please explicitly add a postscript on its own "
                f"line starting with {self.marker}")

    def failure(self, text: str) -> str | None:
        lines = [line.strip() for line in text.strip().splitlines()]
        marker = self.marker.upper()
        for i, line in enumerate(lines):
            if i and line.upper().startswith(marker) and tx.has_alnum(line[len(marker):]):
                return None
        return f"no line after the main text starts with {self.marker} followed by a message"

    def shape(self, draft: Draft) -> None:
        draft.postscript = f"{self.marker} {draft.filler()}"


@register
@dataclass
class NoCommas(Constraint):
    kind: ClassVar[str] = "no_commas"
    label: ClassVar[str] = "no commas"

    def instruction(self) -> str:
        return "In your entire response, refrain from the use of any commas."

    def failure(self, text: str) -> str | None:
        n = text.count(",") + text.count("\uff0c")
        return None if n == 0 else f"found {n} comma(s)"


@register
@dataclass
class Quotation(Constraint):
    kind: ClassVar[str] = "quotation"
    label: ClassVar[str] = "quotation marks"

    def instruction(self) -> str:
        return 'Wrap your entire response with double quotation marks (").'

    def failure(self, text: str) -> str | None:
        s = text.strip()
        if len(s) >= 2 and s[0] == '"' and s[-1] == '"' and tx.has_alnum(s[1:-1]):
            return None
        return f'the response should start and end with a double quote ("), found {s[:1]!r}...{s[-1:]!r}'

    def shape(self, draft: Draft) -> None:
        draft.wrap = "quote"


@register
@dataclass
class RepeatRequest(Constraint):
    """The first line repeats the request sentence verbatim; the answer follows below it."""

    kind: ClassVar[str] = "repeat_request"
    label: ClassVar[str] = "repeat the request"
    request: str = ""

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.request.sentence)

    def instruction(self) -> str:
        return ("Before answering, repeat the first sentence of this prompt word for word "
                "without change on a line of its own, then give your answer on the lines after it.")

    def failure(self, text: str) -> str | None:
        lines = text.strip().splitlines() or [""]
        if lines[0].strip() != self.request:
            return f'the first line should be exactly "{self.request}", found {lines[0][:80]!r}'
        if not tx.has_alnum("\n".join(lines[1:])):
            return "no answer follows the repeated request"
        return None

    def shape(self, draft: Draft) -> None:
        draft.repeat = True


@register
@dataclass
class Highlights(Constraint):
    kind: ClassVar[str] = "highlights"
    label: ClassVar[str] = "highlighted sections"
    count: int = 2

    @classmethod
    def sample(cls, ctx: Context) -> Constraint:
        return cls(ctx.rng.randint(2, 4))

    def instruction(self) -> str:
        return (f"Highlight at least {self.count} sections in your answer with markdown, "
                f"i.e. *highlighted section*.")

    def failure(self, text: str) -> str | None:
        n = tx.count_highlights(text)
        return None if n >= self.count else (
            f"found {n} highlighted spans like *this*; expected at least {self.count}")

    def shape(self, draft: Draft) -> None:
        draft.extras += [f"Keep in mind that this is *{h}*."
                         for h in draft.rng.sample(words.HIGHLIGHTS, self.count)]
