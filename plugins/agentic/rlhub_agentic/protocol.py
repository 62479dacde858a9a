"""The action language shared by every agentic domain: parsing completions, formatting results.

A completion is one of three things:

* an **answer**: it contains ``<answer>...</answer>`` (the last one counts); this ends the episode;
* one or more **tool calls**, in any form :mod:`rlhub.tools` accepts (OpenAI ``tool_calls``, which
  arrive rendered as Hermes ``<tool_call>{...}</tool_call>`` text, or ``<tool name="NAME">INPUT
  </tool>``), or a domain's short forms (``<sql>...</sql>``, a fenced ```` ```sql ```` block,
  ``<guess>...</guess>``, ...), which call the tool with its ``raw`` parameter;
* anything else, which is a **malformed action** and earns a message explaining the syntax.

``<think>...</think>`` sections are ignored, so reasoning may quote actions freely. Parsing never
raises: every problem is reported in :attr:`Action.problem`, phrased for the policy to read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rlhub import ToolCall
from rlhub.tools import number_calls, positioned_calls, strip_thinking

_ANSWER_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
_FENCE_CLOSE = re.compile(r"```")
_OPEN_TOOL = re.compile(r"<tool(?:\b|_call)", re.IGNORECASE)
RESULT_CHARS = 2000
MAX_ACTION_CHARS = 40_000


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


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    match = None
    for match in pattern.finditer(text):  # noqa: B007 - we want the last one
        pass
    return match


def extract_answer(text: str) -> str | None:
    """The stripped content of the last ``<answer>...</answer>`` outside thinking, or None.

    Found in linear time (no backtracking), whatever the completion's size.
    """
    visible = strip_thinking(text)
    close = _last(_ANSWER_CLOSE, visible)
    opening = _last(_ANSWER_OPEN, visible[: close.start()]) if close else None
    if close is None or opening is None:
        return None
    return visible[opening.end() : close.start()].strip()


def _short_open(name: str) -> re.Pattern[str]:
    return re.compile(rf"<{re.escape(name)}>", re.IGNORECASE)


def _short_close(name: str) -> re.Pattern[str]:
    return re.compile(rf"</{re.escape(name)}\s*>", re.IGNORECASE)


def _fence_open(language: str) -> re.Pattern[str]:
    return re.compile(rf"```[ \t]*{re.escape(language)}[ \t]*\n", re.IGNORECASE)


def _spans(text: str, opening: re.Pattern[str],
           closing: re.Pattern[str]) -> list[tuple[re.Match[str], str]]:
    """Each opening match with the text up to the nearest closing one, like a lazy ``.*?``.

    Scanning stops at the first opening without a closing, so the cost stays linear in the text
    however many unclosed openings it holds (a backtracking regex would be quadratic).
    """
    spans, pos = [], 0
    while (start := opening.search(text, pos)) is not None:
        end = closing.search(text, start.end())
        if end is None:
            break
        spans.append((start, text[start.end() : end.start()]))
        pos = end.end()
    return spans


def find_calls(text: str, raw_params: Mapping[str, str], short_tags: Iterable[str] = (),
               fences: Mapping[str, str] | None = None, turn: int = 0) -> list[ToolCall]:
    """Every tool call in ``text`` in order of appearance, with ids ``call_<turn>_<k>``.

    ``raw_params`` maps a tool to the parameter a short form's text goes to; ``short_tags``
    names tools that may also be called as ``<name>...</name>``; ``fences`` maps a fenced
    block's language to the tool it calls (``{"sql": "sql"}``).
    """
    found = positioned_calls(text, raw_params)
    for name in short_tags:
        for start, body in _spans(text, _short_open(name), _short_close(name)):
            found.append((start.start(), ToolCall(name, {raw_params.get(name, "input"):
                                                         body.strip()})))
    for language, tool in (fences or {}).items():
        for start, body in _spans(text, _fence_open(language), _FENCE_CLOSE):
            found.append((start.start(), ToolCall(tool, {raw_params.get(tool, "input"):
                                                         body.strip()})))
    return number_calls([call for _, call in sorted(found, key=lambda pair: pair[0])], turn)


def parse_action(completion: object, *, raw_params: Mapping[str, str] | None = None,
                 short_tags: Iterable[str] = (), fences: Mapping[str, str] | None = None,
                 turn: int = 0) -> Action:
    """Classify one completion; see the module docstring. Never raises."""
    if not isinstance(completion, str):
        found = type(completion).__name__
        return Action(problem=f"Expected the completion as text, found {found}.")
    text = strip_thinking(completion)
    answer = extract_answer(text)
    if answer is not None:
        return Action(answer=answer)
    if len(text) > MAX_ACTION_CHARS:
        return Action(problem=f"The message has {len(text)} characters; tool calls are read only "
                              f"from messages of at most {MAX_ACTION_CHARS}.")
    calls = find_calls(text, raw_params or {}, short_tags, fences, turn)
    if calls:
        return Action(calls=calls)
    return Action(problem=_diagnose(text))


def _diagnose(text: str) -> str:
    if not text.strip():
        return "The message was empty."
    if _ANSWER_OPEN.search(text):
        return "Found <answer> without a closing </answer>."
    if _OPEN_TOOL.search(text):
        return ('Found <tool ...> or <tool_call> that is not a complete <tool name="NAME">'
                'INPUT</tool> or <tool_call>{...}</tool_call>.')
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
