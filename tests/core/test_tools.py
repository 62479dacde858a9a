"""Tools declared once as typed functions: schemas, the three call forms, results as messages."""

from __future__ import annotations

import json
import time

import pytest

from rlhub import ToolCall, ToolError, Toolset, completion_text, tool
from rlhub.tools import parse_calls, text_messages, visible_text


@tool
def read_file(ctx: dict, path: str, start: int = 1, end: int | None = None) -> str:
    """Show lines start to end of a file.

    path: the file, relative to the repository root
    start: the first line shown
    """
    return f"{ctx['root']}/{path}:{start}-{end}"


@tool(raw="expression")
def calculator(ctx: dict, expression: str) -> str:
    """Evaluate arithmetic."""
    if "import" in expression:
        raise ToolError("only arithmetic, please")
    return str(sum(int(x) for x in expression.split("+")))


@tool
def crash(mode: list[str], level: int = 0) -> str:
    """A tool without a context that fails."""
    raise RuntimeError("boom")


TOOLS = Toolset([read_file, calculator, crash])


def test_a_typed_function_becomes_an_openai_tool_with_its_json_schema():
    spec = read_file.spec()
    assert spec["type"] == "function" and spec["function"]["name"] == "read_file"
    assert spec["function"]["description"] == "Show lines start to end of a file."
    params = spec["function"]["parameters"]
    assert params["required"] == ["path"] and params["additionalProperties"] is False
    assert params["properties"]["path"] == {"type": "string", "description":
                                            "the file, relative to the repository root"}
    assert params["properties"]["end"] == {"type": ["integer", "null"]}
    assert "ctx" not in params["properties"]
    assert crash.parameters["properties"]["mode"] == {"type": "array", "items": {"type": "string"}}
    assert not crash.takes_ctx


def test_an_unsupported_annotation_is_refused_when_the_tool_is_declared():
    with pytest.raises(TypeError, match="expected str, int, float, bool"):
        @tool
        def bad(ctx: dict, where: dict) -> str:  # noqa: ARG001
            return ""


OPENAI = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "abc", "type": "function",
     "function": {"name": "read_file", "arguments": json.dumps({"path": "a.py", "end": 3})}}]}
HERMES = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py", "end": 3}}\n</tool_call>'
TAG = '<tool name="read_file">{"path": "a.py", "end": 3}</tool>'


@pytest.mark.parametrize("message", [OPENAI, HERMES, TAG], ids=["openai", "hermes", "tag"])
def test_the_three_call_forms_read_as_the_same_call(message):
    assert TOOLS.parse(message, turn=4) == [ToolCall("read_file", {"path": "a.py", "end": 3},
                                                     "call_4_0")]
    assert TOOLS.run(TOOLS.parse(message)[0], {"root": "/repo"}) == "/repo/a.py:1-3"


def test_an_openai_message_crosses_text_boundaries_in_the_canonical_hermes_form():
    text = completion_text({**OPENAI, "content": "Let me look."})
    assert text == "Let me look.\n" + HERMES
    assert parse_calls(text) == parse_calls(OPENAI)
    assert visible_text(text) == "Let me look."
    assert text_messages([OPENAI, {"role": "tool", "tool_call_id": "abc", "content": "ok"}]) == [
        {"role": "assistant", "content": HERMES}, {"role": "tool", "content": "ok"}]


def test_a_raw_parameter_takes_a_legacy_tags_whole_text_and_calls_keep_their_order():
    calls = TOOLS.parse('<tool name="calculator">2+2</tool> then ' + HERMES + ' and <think>'
                        '<tool name="calculator">9</tool></think>')
    assert [c.name for c in calls] == ["calculator", "read_file"]
    assert calls[0].arguments == {"expression": "2+2"} and TOOLS.run(calls[0]) == "4"


@pytest.mark.parametrize("message, error", [
    ('<tool_call>{"name": "read_file", "arguments": {"path": 3}}</tool_call>',
     "error: read_file: path: 3 is not of type 'string'"),
    ('<tool_call>{"name": "read_file", "arguments": {"path": "a", "mode": 1}}</tool_call>',
     "error: read_file: arguments: Additional properties are not allowed"),
    ('<tool_call>{"name": "read_file", "arguments": {}}</tool_call>',
     "error: read_file: arguments: 'path' is a required property"),
    ("<tool_call>{not json}</tool_call>", "error: a <tool_call> block is not valid JSON"),
    ('<tool_call>{"name": "weather"}</tool_call>', "error: unknown tool 'weather'; the tools are"),
    ('<tool name="calculator">import os</tool>', "error: only arithmetic, please"),
    ('<tool_call>{"name": "crash", "arguments": {"mode": ["x"]}}</tool_call>',
     "error: the crash tool failed (RuntimeError: boom)"),
])
def test_bad_calls_are_explained_to_the_policy_never_raised(message, error):
    (call,) = TOOLS.parse(message)
    assert TOOLS.run(call, {"root": ""}).startswith(error)


def test_an_adversarial_flood_of_unclosed_calls_is_parsed_in_linear_time():
    flood = "<tool_call>{" * 20000 + '<tool name="x">' * 20000
    started = time.perf_counter()
    assert parse_calls(flood) == []
    assert time.perf_counter() - started < 2.0  # quadratic scanning would take minutes


def test_tools_are_described_for_policies_without_a_tools_api():
    text = TOOLS.describe()
    assert "- read_file(path: string, start: integer = optional, end: integer | null = " \
           "optional): Show lines start to end of a file." in text
