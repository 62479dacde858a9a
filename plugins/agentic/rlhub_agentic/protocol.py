"""The action language shared by every agentic domain: parsing completions, formatting results.

A completion is one of three things:

* an **answer**: it contains ``<answer>...</answer>`` (the last one counts); this ends the episode;
* one or more **tool calls**: ``<tool name="NAME">INPUT</tool>``, or a domain's short forms
  (``<sql>...</sql>``, a fenced ```` ```sql ```` block, ``<guess>...</guess>``, ...);
* anything else, which is a **malformed action** and earns a message explaining the syntax.

``<think>...</think>`` sections are ignored, so reasoning may quote actions freely. Parsing never
raises: every problem is reported in :attr:`Action.problem`, phrased for the policy to read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_TOOL = re.compile(r"<tool\s+name\s*=\s*[\"']?([A-Za-z_][\w.-]*)[\"']?\s*>(.*?)</tool\s*>",
                   re.DOTALL | re.IGNORECASE)
_OPEN_TOOL = re.compile(r"<tool\b", re.IGNORECASE)
_OPEN_ANSWER = re.compile(r"<answer>", re.IGNORECASE)
RESULT_CHARS = 2000


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation: the tool's name and the raw text given to it."""

    name: str
    body: str


@dataclass
class Action:
    """What one completion asks for: an answer, tool calls, or nothing usable (``problem``)."""

    answer: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    problem: str = ""

    @property
    def kind(self) -> str:
        """``answer``, ``tool`` or ``invalid``."""
        if self.answer is not None:
            return "answer"
        return "tool" if self.calls else "invalid"


def strip_thinking(text: str) -> str:
    """The completion without ``<think>...</think>`` sections (an unclosed one runs to the end)."""
    return _THINK.sub("", text)


def extract_answer(text: str) -> str | None:
    """The stripped content of the last ``<answer>`` tag outside thinking, or None."""
    found = _ANSWER.findall(strip_thinking(text))
    return found[-1].strip() if found else None


def _short_form(name: str) -> re.Pattern[str]:
    return re.compile(rf"<{re.escape(name)}>(.*?)</{re.escape(name)}\s*>", re.DOTALL | re.IGNORECASE)


def _fence(language: str) -> re.Pattern[str]:
    return re.compile(rf"```[ \t]*{re.escape(language)}[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def find_calls(text: str, short_tags: Iterable[str] = (),
               fences: Mapping[str, str] | None = None) -> list[ToolCall]:
    """Every tool call in ``text`` in order of appearance.

    ``short_tags`` names tools that may also be called as ``<name>...</name>``; ``fences`` maps a
    fenced block's language to the tool it calls (``{"sql": "sql"}``).
    """
    found: list[tuple[int, ToolCall]] = []
    for match in _TOOL.finditer(text):
        found.append((match.start(), ToolCall(match.group(1).lower(), match.group(2).strip())))
    for name in short_tags:
        for match in _short_form(name).finditer(text):
            found.append((match.start(), ToolCall(name, match.group(1).strip())))
    for language, tool in (fences or {}).items():
        for match in _fence(language).finditer(text):
            found.append((match.start(), ToolCall(tool, match.group(1).strip())))
    return [call for _, call in sorted(found, key=lambda pair: pair[0])]


def parse_action(completion: object, *, short_tags: Iterable[str] = (),
                 fences: Mapping[str, str] | None = None) -> Action:
    """Classify one completion; see the module docstring. Never raises."""
    if not isinstance(completion, str):
        return Action(problem=f"Expected the completion as text, found {type(completion).__name__}.")
    text = strip_thinking(completion)
    answer = extract_answer(text)
    if answer is not None:
        return Action(answer=answer)
    calls = find_calls(text, short_tags, fences)
    if calls:
        return Action(calls=calls)
    return Action(problem=_diagnose(text))


def _diagnose(text: str) -> str:
    if not text.strip():
        return "The message was empty."
    if _OPEN_ANSWER.search(text):
        return "Found <answer> without a closing </answer>."
    if _OPEN_TOOL.search(text):
        return 'Found <tool ...> that is not a complete <tool name="NAME">INPUT</tool>.'
    return "No tool call and no <answer>...</answer> was found."


def truncate(text: str, limit: int = RESULT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters not shown)"


def format_result(tool: str, text: str) -> str:
    """One observation block, ``<result tool="NAME">...</result>``."""
    return f'<result tool="{tool}">\n{truncate(text.strip())}\n</result>'


def turn_note(turn: int, max_turns: int) -> str:
    """The budget line appended to every observation."""
    left = max_turns - turn
    if left <= 1:
        return (f"(turn {turn} of {max_turns}: this is your last turn; reply with "
                "<answer>...</answer> now.)")
    return f"(turn {turn} of {max_turns}; {left} turns left.)"
