"""Tools: typed functions declared once, served as OpenAI function-calling tools.

A domain declares each tool once, as a typed function; :func:`tool` reads its JSON Schema from
the signature and its description from the docstring::

    @tool
    def read_file(ctx: Context, path: str, start: int = 1, end: int | None = None) -> str:
        \"\"\"Show lines ``start`` to ``end`` of a file.

        path: the file, relative to the repository root
        \"\"\"

The first parameter, when it is named ``ctx``, receives the episode's context and is not part of
the schema. A :class:`Toolset` serves the tools as OpenAI's ``tools`` list (:meth:`Toolset.specs`)
and accepts a call in any of three forms (:func:`parse_calls`), so one episode plays with any
policy:

* OpenAI ``tool_calls`` on an assistant message (``{"function": {"name", "arguments"}}``);
* the chat templates' text: Hermes and Qwen ``<tool_call>{"name": ..., "arguments": {...}}
  </tool_call>``;
* rlhub's tag syntax ``<tool name="NAME">INPUT</tool>``, whose input is a JSON object of
  arguments or, for a tool with a ``raw`` parameter, that parameter's whole text.

Calls cross every text boundary (trajectories, token-in/token-out trainers, replays) in one
canonical text form, :func:`completion_text` (the message's content, then each call in the
Hermes form), and results return as ``tool`` messages (:func:`tool_message`) whose
``tool_call_id`` matches the call's id in the assistant message (:func:`assistant_message`).
Arguments are validated against the schema before a tool runs; a bad call is answered with an
explanation, never an exception.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

_CALL_OPEN, _CALL_CLOSE = re.compile(r"<tool_call>"), re.compile(r"</tool_call>")
_TAG_OPEN = re.compile(r"<tool\s+name\s*=\s*[\"']?([A-Za-z_][\w.-]*)[\"']?\s*>", re.IGNORECASE)
_TAG_CLOSE = re.compile(r"</tool\s*>", re.IGNORECASE)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
MAX_CALL_TEXT = 200_000
_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


class ToolError(ValueError):
    """A tool's input is unusable; the message is shown to the policy as the tool's result."""


@dataclass(frozen=True)
class Tool:
    """One tool: its name, description, JSON Schema of arguments and the function run.

    ``raw`` names the string parameter that takes the whole input of a legacy tag call whose
    input is not a JSON object (``<tool name="calculator">2+2</tool>``)."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., str]
    raw: str | None = None
    takes_ctx: bool = True

    def spec(self) -> dict[str, Any]:
        """The tool in OpenAI's function-calling form."""
        return {"type": "function", "function": {"name": self.name, "description":
                                                 self.description, "parameters": self.parameters}}

    def signature(self) -> str:
        """``name(arg: type, ...)``, for prompts of policies without a tools API."""
        props = self.parameters.get("properties", {})
        required = set(self.parameters.get("required", []))
        args = [f"{k}: {_type_name(v)}" + ("" if k in required else " = optional")
                for k, v in props.items()]
        return f"{self.name}({', '.join(args)})"


def _type_name(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list[{_type_name(schema.get('items', {}))}]"
    return " | ".join(kind) if isinstance(kind, list) else str(kind)


def schema_of(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of a parameter annotation (scalars, ``X | None``, ``list[X]``,
    ``Literal[...]``)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (list, tuple) and args:
        return {"type": "array", "items": schema_of(args[0])}
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        inner = schema_of(kinds[0]) if len(kinds) == 1 else {}
        if type(None) in args and "type" in inner:
            inner = {**inner, "type": [inner["type"], "null"]}
        return inner
    raise TypeError(f"tool parameter: expected str, int, float, bool, list[...], Literal[...] or "
                    f"an optional of one, found {annotation!r}")


def _docs(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The summary and per-parameter lines (``name: text``) of a docstring."""
    doc = inspect.cleandoc(fn.__doc__ or "")
    summary, _, rest = doc.partition("\n\n")
    params = {}
    for line in rest.splitlines():
        name, sep, text = line.strip().partition(":")
        if sep and name.isidentifier():
            params[name] = text.strip()
    return " ".join(summary.split()), params


def tool(fn: Callable[..., str] | None = None, *, name: str | None = None,
         raw: str | None = None) -> Any:
    """Make a :class:`Tool` of a typed function (usable as ``@tool`` or ``@tool(raw="x")``)."""
    def make(func: Callable[..., str]) -> Tool:
        hints = typing.get_type_hints(func)
        summary, param_docs = _docs(func)
        params = list(inspect.signature(func).parameters.values())
        takes_ctx = bool(params) and params[0].name == "ctx"
        props, required = {}, []
        for param in params[1:] if takes_ctx else params:
            props[param.name] = {**schema_of(hints[param.name]),
                                 **({"description": param_docs[param.name]}
                                    if param.name in param_docs else {})}
            if param.default is inspect.Parameter.empty:
                required.append(param.name)
        schema = {"type": "object", "properties": props, "required": required,
                  "additionalProperties": False}
        return Tool(name or func.__name__, summary, schema, func, raw, takes_ctx)

    return make(fn) if fn is not None else make


@dataclass
class ToolCall:
    """One call: the tool's name, its arguments, an id, and what was wrong with it if anything
    (``problem``: unparseable JSON, say; the call then runs nothing)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    problem: str = ""

    def as_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": json.dumps(self.arguments)}}


# -- parsing the three forms -------------------------------------------------------------------

def _arguments(value: Any) -> tuple[dict[str, Any], str]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError as exc:
            return {}, f"the arguments are not valid JSON ({exc})"
    if not isinstance(value, dict):
        return {}, f"expected the arguments as a JSON object, found {type(value).__name__}"
    return value, ""


def _openai_calls(raw_calls: Any) -> list[ToolCall]:
    calls = []
    for item in raw_calls if isinstance(raw_calls, list) else []:
        function = item.get("function", {}) if isinstance(item, dict) else {}
        args, problem = _arguments(function.get("arguments", {}))
        calls.append(ToolCall(str(function.get("name", "")), args, str(item.get("id", "")),
                              problem))
    return calls


def _hermes_call(body: str) -> ToolCall:
    try:
        data = json.loads(body)
    except ValueError as exc:
        return ToolCall("", {}, "", f"a <tool_call> block is not valid JSON ({exc})")
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return ToolCall("", {}, "", 'expected <tool_call>{"name": ..., "arguments": {...}}'
                        "</tool_call>")
    args, problem = _arguments(data.get("arguments", data.get("parameters", {})))
    return ToolCall(data["name"], args, "", problem)


def _tag_call(name: str, body: str, raw_params: Mapping[str, str]) -> ToolCall:
    text = body.strip()
    if text.startswith("{"):
        args, problem = _arguments(text)
        if not problem:
            return ToolCall(name, args)
    if name in raw_params:
        return ToolCall(name, {raw_params[name]: text})
    args, problem = _arguments(text)
    return ToolCall(name, args, "", problem)


def spans(text: str, opening: re.Pattern[str], closing: re.Pattern[str]
          ) -> list[tuple[re.Match[str], str, int]]:
    """Each opening match with the text up to the nearest closing one and the end of that
    closing, like a lazy ``.*?``; scanning stops at the first opening without a closing, so the
    cost stays linear however many unclosed openings the text holds."""
    found, pos = [], 0
    while (start := opening.search(text, pos)) is not None:
        end = closing.search(text, start.end())
        if end is None:
            break
        found.append((start, text[start.end():end.start()], end.end()))
        pos = end.end()
    return found


def strip_thinking(text: str) -> str:
    """``text`` without ``<think>...</think>`` sections (an unclosed one runs to the end)."""
    return _THINK.sub("", text)


def positioned_calls(text: str, raw_params: Mapping[str, str] | None = None
                     ) -> list[tuple[int, ToolCall]]:
    """The calls written in ``text`` (Hermes blocks and tags), each with its offset, so a caller
    with forms of its own can merge them in order; ids are left to the caller."""
    raw_params = raw_params or {}
    text = text[:MAX_CALL_TEXT]
    found = [(m.start(), _hermes_call(body.strip()))
             for m, body, _ in spans(text, _CALL_OPEN, _CALL_CLOSE)]
    found += [(m.start(), _tag_call(m.group(1).lower(), body, raw_params))
              for m, body, _ in spans(text, _TAG_OPEN, _TAG_CLOSE)]
    return sorted(found, key=lambda pair: pair[0])


def number_calls(calls: list[ToolCall], turn: int) -> list[ToolCall]:
    """Give ``calls`` the ids ``call_<turn>_<k>`` an episode's messages use."""
    for index, call in enumerate(calls):
        call.id = f"call_{turn}_{index}"
    return calls


def parse_calls(message: str | Mapping[str, Any], raw_params: Mapping[str, str] | None = None,
                turn: int = 0) -> list[ToolCall]:
    """Every tool call of an assistant ``message`` (text, or an OpenAI message dict), in order,
    with ids ``call_<turn>_<k>``; see the module docstring for the forms."""
    calls: list[ToolCall] = []
    if isinstance(message, Mapping):
        calls = _openai_calls(message.get("tool_calls"))
        text = str(message.get("content") or "")
    else:
        text = message
    calls += [call for _, call in positioned_calls(strip_thinking(text), raw_params)]
    return number_calls(calls, turn)


def visible_text(message: str | Mapping[str, Any]) -> str:
    """An assistant message's text without thinking and without its tool calls."""
    text = str(message.get("content") or "") if isinstance(message, Mapping) else message
    text = strip_thinking(text)
    for opening, closing in ((_CALL_OPEN, _CALL_CLOSE), (_TAG_OPEN, _TAG_CLOSE)):
        kept, pos = [], 0
        for start, _, end in spans(text, opening, closing):
            kept.append(text[pos:start.start()])
            pos = end
        text = "".join(kept) + text[pos:]
    return text.strip()


# -- messages ----------------------------------------------------------------------------------

def render_call(name: str, arguments: Mapping[str, Any]) -> str:
    """One call in the canonical (Hermes) text form."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': dict(arguments)})}\n</tool_call>"


def completion_text(message: str | Mapping[str, Any]) -> str:
    """An assistant message as one text completion: its content, then each OpenAI tool call in
    the Hermes form (text completions come back unchanged)."""
    if isinstance(message, str):
        return message
    content = str(message.get("content") or "")
    blocks = [render_call(c.name, c.arguments) if not c.problem else
              f"<tool_call>\n{json.dumps({'name': c.name, 'arguments': '<unparseable>'})}\n"
              "</tool_call>" for c in _openai_calls(message.get("tool_calls"))]
    return "\n".join(part for part in [content, *blocks] if part)


def text_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A conversation for a policy that only speaks text: each assistant message's tool calls
    rendered into its content (:func:`completion_text`), tool results kept as ``tool`` turns."""
    out = []
    for message in messages:
        if message.get("tool_calls"):
            out.append({"role": "assistant", "content": completion_text(message)})
        else:
            out.append({"role": str(message.get("role", "user")),
                        "content": str(message.get("content") or "")})
    return out


def assistant_message(content: str, calls: Iterable[ToolCall]) -> dict[str, Any]:
    """The OpenAI assistant message that made ``calls`` (content without the call blocks)."""
    return {"role": "assistant", "content": content,
            "tool_calls": [c.as_openai() for c in calls]}


def tool_message(call: ToolCall, content: str) -> dict[str, Any]:
    """A call's result as an OpenAI ``tool`` message."""
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


# -- running -----------------------------------------------------------------------------------

class Toolset:
    """A domain's tools by name: specs for the policy, parsing, validation and running."""

    def __init__(self, tools: Iterable[Tool]):
        self.tools = {t.name: t for t in tools}

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def names(self) -> list[str]:
        return sorted(self.tools)

    def specs(self) -> list[dict[str, Any]]:
        """The tools in OpenAI's ``tools`` form, in declaration order."""
        return [t.spec() for t in self.tools.values()]

    def raw_params(self) -> dict[str, str]:
        return {name: t.raw for name, t in self.tools.items() if t.raw}

    def parse(self, message: str | Mapping[str, Any], turn: int = 0) -> list[ToolCall]:
        return parse_calls(message, self.raw_params(), turn)

    def problem(self, call: ToolCall) -> str:
        """What is wrong with ``call`` before it runs ('' when nothing)."""
        found = self.tools.get(call.name)
        if found is None and call.name:
            return f"unknown tool {call.name!r}; the tools are {', '.join(self.names())}."
        if call.problem or found is None:
            return call.problem or "the call names no tool"
        import jsonschema

        try:
            jsonschema.validate(call.arguments, found.parameters)
        except jsonschema.ValidationError as exc:
            where = "/".join(map(str, exc.absolute_path)) or "arguments"
            return f"{call.name}: {where}: {exc.message}"
        return ""

    def run(self, call: ToolCall, ctx: Any = None) -> str:
        """The call's result text; bad calls, :class:`ToolError` and crashes become
        ``error: ...`` explanations for the policy."""
        problem = self.problem(call)
        if problem:
            return f"error: {problem}"
        found = self.tools[call.name]
        try:
            args = (ctx,) if found.takes_ctx else ()
            return str(found.fn(*args, **call.arguments))
        except ToolError as exc:
            return f"error: {exc}"
        except Exception as exc:  # noqa: BLE001 - a tool crash is an observation, not a crash
            return f"error: the {call.name} tool failed ({type(exc).__name__}: {exc})"

    def describe(self) -> str:
        """The tools as prompt text, one per line, for policies without a tools API."""
        return "\n".join(f"- {t.signature()}: {t.description}" for t in self.tools.values())


CALL_SYNTAX = ('Call a tool by writing <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call> '
               "(several per message if you like); if your API has function calling, use that.")
