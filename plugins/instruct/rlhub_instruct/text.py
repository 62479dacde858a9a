"""Measuring text: words, sentences, paragraphs, sections, bullets, highlights, placeholders.

Every function is linear in the length of its input (no regular expression here can backtrack
over an adversarial 100 kB completion), and gold completions are measured with the very same
functions as policy completions, so a definition can never disagree with itself.

Definitions (also stated in the README):

* a *word* is a whitespace-separated token holding at least one letter or digit;
* a *sentence* is a fragment of a line ended by ``.``, ``!`` or ``?`` (or by the end of the line)
  that holds at least one letter or digit;
* *paragraphs* are separated by blank lines, or by lines holding only ``***`` (divider mode);
* a *markdown section* starts at a heading line (``#`` to ``######`` then a space);
* a *bullet* is a line starting with ``*`` or ``-`` then a space;
* a *coded* token holds a digit or an underscore (``w17``, ``item_3``, ``42``): numbered filler
  and identifiers, not words;
* a token is *copied* when it is a content word (not a function word) that the prompt also holds.
"""

from __future__ import annotations

import re

from rlhub_instruct.words import FUNCTION_WORDS

_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")
_HIGHLIGHT = re.compile(r"\*[^\n*]+\*")
_PLACEHOLDER = re.compile(r"\[[^\[\]\n]+\]")
_EDGES = ".,;:!?\"'()[]{}*#<>"
DIVIDER = "***"


def has_alnum(text: str) -> bool:
    """Whether ``text`` holds at least one letter or digit."""
    return any(ch.isalnum() for ch in text)


def count_words(text: str) -> int:
    """Whitespace-separated tokens that hold a letter or digit."""
    return sum(1 for token in text.split() if has_alnum(token))


def count_distinct_words(text: str) -> int:
    """Distinct words, ignoring case and the punctuation around them."""
    return len({token.strip(".,;:!?\"'()[]*").casefold() for token in text.split()
                if has_alnum(token)})


def count_sentences(text: str) -> int:
    """Sentence fragments over all lines (see the module docstring)."""
    return sum(1 for line in text.splitlines() for part in _SENTENCE_END.split(line)
               if has_alnum(part))


def count_chars(text: str) -> int:
    """Characters, ignoring leading and trailing whitespace."""
    return len(text.strip())


def count_word(text: str, word: str) -> int:
    """Whole-word, case-insensitive occurrences of ``word`` (which may hold spaces)."""
    return len(re.findall(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE))


def paragraphs(text: str, divider: bool = False) -> list[str]:
    """Split into paragraphs on blank lines or, in divider mode, on ``***`` lines.

    Empty parts are kept (as ``""``) so callers can reject doubled separators.
    """
    parts: list[list[str]] = [[]]
    for line in text.strip().splitlines():
        is_break = line.strip() == DIVIDER if divider else not line.strip()
        if is_break:
            parts.append([])
        else:
            parts[-1].append(line)
    joined = ["\n".join(p).strip() for p in parts]
    if not divider:  # runs of blank lines are one separator
        joined = [p for p in joined if p]
    return joined


def is_heading(line: str) -> bool:
    """A markdown ATX heading line: 1-6 ``#`` then a space and some text."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return False
    hashes = len(stripped) - len(stripped.lstrip("#"))
    rest = stripped[hashes:]
    return 1 <= hashes <= 6 and rest[:1] == " " and has_alnum(rest)


def sections(text: str) -> list[tuple[str, str]]:
    """``(heading, body)`` for each markdown section; text before the first heading is dropped."""
    found: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if is_heading(line):
            found.append((line.strip(), []))
        elif found:
            found[-1][1].append(line)
    return [(head, "\n".join(body).strip()) for head, body in found]


def is_bullet(line: str) -> bool:
    """A markdown bullet line: ``*`` or ``-`` then a space and some text."""
    stripped = line.lstrip()
    return stripped[:2] in ("* ", "- ") and has_alnum(stripped[2:])


def count_bullets(text: str) -> int:
    return sum(1 for line in text.splitlines() if is_bullet(line))


def count_highlights(text: str) -> int:
    """Spans like ``*this*`` (and ``**this**``) on one line, with some text inside."""
    return sum(1 for span in _HIGHLIGHT.findall(text) if has_alnum(span))


def placeholders(text: str) -> list[str]:
    """Square-bracket placeholders such as ``[address]`` (with some text inside)."""
    return [p for p in _PLACEHOLDER.findall(text) if has_alnum(p)]


def title_lines(text: str) -> list[str]:
    """Lines consisting only of a ``<<title>>`` with some text inside."""
    found = []
    for line in text.splitlines():
        s = line.strip()
        inner = s[2:-2]
        if (len(s) > 4 and s.startswith("<<") and s.endswith(">>") and has_alnum(inner)
                and "<" not in inner and ">" not in inner):
            found.append(s)
    return found


def strip_fence(text: str) -> str:
    """The body of a completion wrapped in one fenced block (```lang ... ```), else the text."""
    s = text.strip()
    if s.startswith("```") and s.endswith("```") and len(s) >= 6:
        first_newline = s.find("\n")
        if first_newline != -1:
            return s[first_newline + 1 : -3].strip()
    return s


def tokens(text: str) -> list[str]:
    """The words of ``text``, lowercased and stripped of the punctuation around them."""
    return [t.strip(_EDGES).casefold() for t in text.split() if has_alnum(t)]


def is_coded(token: str) -> bool:
    return any(ch.isdigit() for ch in token) or "_" in token


def longest_coded_run(text: str) -> int:
    """The most coded tokens in a row (see the module docstring)."""
    best = run = 0
    for token in tokens(text):
        run = run + 1 if is_coded(token) else 0
        best = max(best, run)
    return best


def function_share(text: str) -> float:
    """The share of words that are English function words (0 for no words)."""
    found = tokens(text)
    return sum(t in FUNCTION_WORDS for t in found) / len(found) if found else 0.0


def copied_share(text: str, prompt: str) -> float:
    """The share of the distinct content words of ``text`` that the prompt holds too."""
    content = {t for t in tokens(text) if t.isalpha() and t not in FUNCTION_WORDS}
    return len(content & set(tokens(prompt))) / len(content) if content else 0.0
