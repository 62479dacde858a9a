"""Pulling the answer out of a completion: boxed expressions, fenced code, answer tags."""

from __future__ import annotations

import re

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)```", re.DOTALL)
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_ANSWER_LINE = re.compile(r"(?:^|\n)\s*(?:final answer|answer)\s*[:：]\s*(.+)", re.IGNORECASE)


def last_boxed(text: str) -> str | None:
    r"""The content of the last ``\boxed{...}`` (or ``\fbox{...}``), braces balanced; else None."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0:
        return None
    depth = 0
    for i in range(brace, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[brace + 1 : i]
    return None


def last_code_block(text: str, languages: tuple[str, ...] = ()) -> str | None:
    """The body of the last fenced block, preferring one tagged with a language in ``languages``."""
    blocks = _FENCE.findall(text)
    if not blocks:
        return None
    tagged = [body for lang, body in blocks if lang.lower() in languages]
    return (tagged or [body for _, body in blocks])[-1]


def last_fence(text: str) -> tuple[str, str] | None:
    """The language tag (lower-case, maybe empty) and body of the last fenced block, or None."""
    blocks = _FENCE.findall(text)
    return (blocks[-1][0].lower(), blocks[-1][1]) if blocks else None


def code_of(completion: str, languages: tuple[str, ...] = ()) -> str:
    """The program in a completion: the last fenced block if there are fences, else all of it."""
    block = last_code_block(completion, languages)
    return completion if block is None else block


def final_answer(text: str) -> str:
    """The answer a completion commits to: ``<answer>`` tag, "Answer:" line, boxed, or last line."""
    tags = _ANSWER_TAG.findall(text)
    if tags:
        return tags[-1].strip()
    lines = _ANSWER_LINE.findall(text)
    if lines:
        return lines[-1].strip()
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed.strip()
    stripped = text.strip()
    return stripped.splitlines()[-1].strip() if stripped else ""
