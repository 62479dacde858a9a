"""A verifiers task's tools (``Toolset`` ``@vf.tool`` methods) as text actions for an rlhub policy.

verifiers serves tools over MCP to a harness program; an rlhub policy writes text. The bridge
shows each tool with its JSON Schema and calls it in-process when the policy writes
``<tool name="NAME">{"arg": value}</tool>``; each result comes back as
``<result tool="NAME">...</result>``. At most :data:`CALLS_PER_TURN` calls run per message, each
bounded by :data:`CALL_TIMEOUT_S` and its result cut to :data:`RESULT_CHARS`. A malformed call,
an unknown tool or a tool that raises becomes an error result the policy can read, never a crash.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CALLS_PER_TURN = 4
CALL_TIMEOUT_S = 20.0
RESULT_CHARS = 4000
_CALL = re.compile(r"<tool\s+name\s*=\s*[\"']?([A-Za-z_][\w.-]*)[\"']?\s*>(.*?)</tool\s*>",
                   re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class ToolSpec:
    """One callable tool: its name, description, parameter schema and bound method."""

    name: str
    description: str
    schema: dict[str, Any]
    fn: Callable[..., Any]

    def doc(self) -> str:
        return f'<tool name="{self.name}">{json.dumps(self.schema)}</tool> {self.description}'


def tool_specs(toolsets: list[Any]) -> dict[str, ToolSpec]:
    """The ``@vf.tool`` methods of ``toolsets``, by name."""
    from pydantic import TypeAdapter
    from verifiers.v1.utils.decorators import discover_decorated

    specs: dict[str, ToolSpec] = {}
    for toolset in toolsets:
        for fn in discover_decorated(toolset, "tool"):
            name = getattr(fn, "tool_name", None) or fn.__name__
            schema = TypeAdapter(fn).json_schema() if _has_params(fn) else {}
            specs[name] = ToolSpec(name, (fn.__doc__ or "").strip(), _arguments(schema), fn)
    return specs


def _has_params(fn: Callable[..., Any]) -> bool:
    return bool(inspect.signature(fn).parameters)


def _arguments(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: schema[k] for k in ("properties", "required") if k in schema}


def prompt_note(specs: dict[str, ToolSpec]) -> str:
    """The paragraph appended to a task's prompt when it has tools."""
    lines = "\n".join(f"- {spec.doc()}" for spec in specs.values())
    return ("\n\nYou can call tools. Write a call as <tool name=\"NAME\">{JSON arguments}</tool>; "
            f"up to {CALLS_PER_TURN} calls per message; each result comes back as "
            "<result tool=\"NAME\">...</result>. A message without a tool call is your final "
            f"answer.\nTools:\n{lines}")


def parse_calls(text: str) -> list[tuple[str, str]]:
    """``(name, raw arguments)`` of every tool call in ``text``, in order."""
    return [(m.group(1), m.group(2).strip()) for m in _CALL.finditer(text or "")]


async def call(specs: dict[str, ToolSpec], name: str, raw: str) -> str:
    """Run one call; every failure is returned as an ``error: ...`` result."""
    spec = specs.get(name)
    if spec is None:
        return f"error: unknown tool {name!r}; the tools are {', '.join(sorted(specs))}."
    try:
        args = json.loads(raw) if raw else {}
        if not isinstance(args, dict):
            raise ValueError("expected a JSON object of arguments")
        if inspect.iscoroutinefunction(spec.fn):
            result = await asyncio.wait_for(spec.fn(**args), CALL_TIMEOUT_S)
        else:  # a blocking tool must not stall the loop every episode shares
            result = await asyncio.wait_for(asyncio.to_thread(spec.fn, **args), CALL_TIMEOUT_S)
    except asyncio.TimeoutError:
        return f"error: the {name} tool did not answer within {CALL_TIMEOUT_S:g} s"
    except Exception as exc:  # noqa: BLE001 - a tool failure is an observation for the policy
        return f"error: {type(exc).__name__}: {exc}"
    text = result if isinstance(result, str) else json.dumps(result, default=str)
    return text[:RESULT_CHARS]


async def run_calls(specs: dict[str, ToolSpec], calls: list[tuple[str, str]]) -> str:
    """The observation for one message's calls."""
    blocks = [f'<result tool="{name}">{await call(specs, name, raw)}</result>'
              for name, raw in calls[:CALLS_PER_TURN]]
    if len(calls) > CALLS_PER_TURN:
        blocks.append(f"(only the first {CALLS_PER_TURN} calls were run)")
    return "\n".join(blocks)
