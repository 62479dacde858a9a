"""Tool-use domains: a calculator, a unit converter and a stateful JSON API in the sandbox.

``params.tools`` picks the tools a domain offers (``calculator``, ``convert``, ``api``) and
``params.problems`` its task family: ``calculator`` or ``units`` (word problems from
:mod:`rlhub_agentic.problems`), or ``shop``, ``kv``, ``shipments`` (API tasks from
:mod:`rlhub_agentic.apiworlds`). The calculator and converter are pure, bounded functions; the
API runs in the sandbox as :mod:`rlhub_agentic.jobs.webapi`, which replays the episode's earlier
state-changing calls before answering, so the episode's state is just the list of those calls.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from rlhub import Task, Tool, tool

from rlhub_agentic import answers, apiworlds, calc, problems
from rlhub_agentic.episode import AgenticDomain, EpisodeState, ToolInputError
from rlhub_agentic.jobs.webapi import MUTATING
from rlhub_agentic.sandboxed import JobFailed, run_job

_API_CALL = re.compile(r"^(GET|POST|PUT|DELETE)\s+(/\S*)\s*(.*)$", re.DOTALL | re.IGNORECASE)
MAX_HISTORY = 200
TOOL_DOCS = {
    "calculator": ('<tool name="calculator">2*(3+4)/7</tool>: evaluate arithmetic (+ - * / // % '
                   "**, parentheses, sqrt, log, exp, round, min, max, pi, e)."),
    "convert": ('<tool name="convert">3.5 mi to km</tool>: convert units of length, mass, time, '
                "volume, speed or temperature (e.g. lb, oz, kg, gal, l, cup, ml, mph, km/h, "
                "F, C)."),
    "api": ('<tool name="api">GET /path?query</tool> or <tool name="api">POST /path '
            '{"json": "body"}</tool>: call the HTTP API; you see the status and JSON body. '
            "Routes: {routes}."),
}
WORD_PROBLEMS = {"calculator": problems.CALCULATOR, "units": problems.UNITS}


def calculator(ctx: EpisodeState, expression: str) -> str:
    """Evaluate arithmetic (+ - * / // % **, parentheses, sqrt, log, exp, round, min, max, pi, e).

    expression: the expression, e.g. 2*(3+4)/7
    """
    return calc.calculate(expression)


def convert(ctx: EpisodeState, request: str) -> str:
    """Convert a quantity between units of length, mass, time, volume, speed or temperature.

    request: '<number> <unit> to <unit>', e.g. 3.5 mi to km
    """
    return calc.convert(request)


def parse_api_call(text: str) -> list[Any]:
    """``"POST /cart {...}"`` as ``[method, path, body]``; raise with the expected form."""
    match = _API_CALL.match(text.strip())
    if not match:
        raise ToolInputError(f"expected 'METHOD /path [JSON body]' (e.g. GET /items?page=1), "
                             f"found {text.strip()[:80]!r}.")
    method, path, rest = match.group(1).upper(), match.group(2), match.group(3).strip()
    body = None
    if rest:
        try:
            body = json.loads(rest)
        except ValueError as exc:
            raise ToolInputError(f"the request body is not valid JSON ({exc.msg} at character "
                                 f"{exc.pos}).") from None
    return [method, path, body]


class ToolUseDomain(AgenticDomain):
    """See the module docstring. Params: ``tools``, ``problems``."""

    def __init__(self, manifest: Any):
        super().__init__(manifest)
        self.family = self.params.get("problems", "calculator")
        known = sorted([*WORD_PROBLEMS, *apiworlds.TASKS])
        if self.family not in known:
            raise ValueError(f"{self.id}: expected params.problems in {known}, "
                             f"found {self.family!r}")
        self.tool_names = list(self.params.get("tools", ["calculator"]))
        unknown = sorted(set(self.tool_names) - set(TOOL_DOCS))
        if unknown:
            raise ValueError(f"{self.id}: expected params.tools among {sorted(TOOL_DOCS)}, "
                             f"found {unknown}")

    # -- tasks ---------------------------------------------------------------------------------

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        if self.family in WORD_PROBLEMS:
            question, expected = rng.choice(WORD_PROBLEMS[self.family])(rng)
            meta: dict[str, Any] = {"family": self.family}
        else:
            world, question, expected, plan = apiworlds.TASKS[self.family](rng)
            meta = {"family": self.family, "world": world, "plan": plan}
        answer_doc = ("give only the order id." if expected["type"] == "text"
                      else "give only the number, without units.")
        prompt = self.compose(question, [self._tool_doc(n) for n in self.tool_names], answer_doc)
        return {"prompt": prompt, "answer": expected,
                "gold": f"<answer>{answers.render(expected)}</answer>", "meta": meta}

    def _tool_doc(self, name: str) -> str:
        if name == "api":
            return TOOL_DOCS["api"].replace("{routes}", apiworlds.API_DOCS[self.family])
        return TOOL_DOCS[name]

    # -- tools ---------------------------------------------------------------------------------

    def new_state(self, task: Task) -> dict[str, Any]:
        return {"history": []}

    def tools(self) -> list[Tool]:
        available = {"calculator": tool(calculator, raw="expression"),
                     "convert": tool(convert, raw="request"),
                     "api": tool(self.api, raw="request")}
        return [available[name] for name in self.tool_names]

    def api(self, ctx: EpisodeState, request: str) -> str:
        """Call the task's HTTP API; you see the status and the JSON body.

        request: 'METHOD /path [JSON body]', e.g. GET /items?page=1
        """
        state, call = ctx, parse_api_call(request)
        history: list[list[Any]] = state.data["history"]
        if len(history) >= MAX_HISTORY:
            raise ToolInputError(f"this episode already made {MAX_HISTORY} state-changing calls.")
        payload = {"app": self.family, "world": state.task.meta["world"], "history": history,
                   "call": call}
        try:
            response = run_job(self.services.sandboxes, "webapi", payload, backend=self.params.get("sandbox_backend"))
        except JobFailed as exc:
            return f"error: {exc}"
        if call[0] in MUTATING:
            history.append(call)
        return f"HTTP {response['status']}\n{json.dumps(response['body'])}"
