"""The base of every agentic domain and its episode: tool calls in, observations out, answer scored.

:class:`AgenticDomain` keeps rlhub's one-call surface: :meth:`Domain.verify` scores a completion
that contains the final ``<answer>``, which is how the contract kit checks gold completions and how
``rlhub reverify`` recomputes rewards. :class:`ToolEpisode` adds the environment's side of the step
protocol (``Episode.step(completion) -> StepResult``):

* a tool-call turn runs each call (at most ``params.calls_per_turn``) and returns the results as the
  observation and as ``tool`` messages (``StepResult.messages``, :mod:`rlhub.tools`); its score is
  the range minimum, with the episode counters as components;
* an answer is scored by ``verify`` exactly as a one-shot completion would be, so the final turn's
  reward always equals ``domain.verify(task, final_completion).reward``; a wrong answer ends the
  episode unless ``params.answer_attempts`` allows a repair;
* a malformed turn gets an observation explaining the syntax, never an exception;
* the episode also ends at ``turns.max_turns``.

``StepResult.info`` always holds ``action`` (``answer|tool|invalid``), ``turn``, ``repair`` (how
many answers failed before this turn: a success at repair k earns ``reward * repair_discount**k``),
``tool_calls``, ``invalid_actions`` and ``calls`` (the tools called this turn).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from rlhub import (
    Domain,
    Episode,
    Manifest,
    ManifestError,
    Score,
    StepResult,
    Task,
    Tool,
    ToolCall,
    ToolError,
    Toolset,
    Verdict,
    assistant_message,
    clamp_reward,
    tool_message,
)
from rlhub.tools import visible_text

from rlhub_agentic import answers
from rlhub_agentic.protocol import Action, extract_answer, format_result, parse_action, truncate
from rlhub_agentic.protocol import turn_note

EPISODE_COMPONENTS = ("tool_calls", "invalid_actions")
NO_ANSWER = "No final answer was found: give it as <answer>...</answer>."


class ToolInputError(ToolError):
    """A tool call's input is malformed; the message is shown to the policy as the tool's result."""


@dataclass
class EpisodeState:
    """What one episode remembers between turns; ``data`` is the domain's own mutable state."""

    task: Task
    data: dict[str, Any] = field(default_factory=dict)
    tool_calls: int = 0
    invalid_actions: int = 0
    failed_answers: int = 0


class AgenticDomain(Domain):
    """A domain whose episodes use tools; subclasses define ``generate``, tools and the prompt.

    Override :meth:`tools` (typed functions made tools with :func:`rlhub.tool`, whose ``ctx`` is
    the :class:`EpisodeState`, raising :class:`ToolInputError` for bad input), optionally
    :meth:`new_state` and :meth:`judge`; set ``short_tags`` and ``fences`` for the domain's
    short action forms (they call a tool with its ``raw`` parameter).
    """

    short_tags: ClassVar[tuple[str, ...]] = ()
    fences: ClassVar[dict[str, str]] = {}

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        for name in EPISODE_COMPONENTS:
            weight = manifest.components.get(name, {}).get("weight", 0.0)
            if weight != 0:
                raise ManifestError(f"domain {manifest.id!r}: expected weight 0 for the "
                                    f"episode-only component {name!r} (verify() cannot "
                                    f"recompute it), found {weight}")
        self.calls_per_turn = int(self.params.get("calls_per_turn", 4))
        self.answer_attempts = int(self.params.get("answer_attempts", 1))
        self._toolset: Toolset | None = None

    # -- to override ---------------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        """The tools of this domain."""
        return []

    def new_state(self, task: Task) -> dict[str, Any]:
        """The domain's mutable state at the start of an episode (derived from ``task`` only)."""
        return {}

    def judge(self, task: Task, answer: str) -> Verdict:
        """Judge the text inside ``<answer>``; the default compares with ``task.answer``."""
        ok, feedback = answers.matches(task.answer, answer)
        return Verdict({"correct": float(ok)}, ok, feedback)

    # -- rlhub.Domain ----------------------------------------------------------------------------

    def check(self, task: Task, completion: str) -> Verdict:
        answer = extract_answer(completion)
        if answer is None:
            return Verdict({"correct": 0.0}, False, NO_ANSWER)
        if not answer:
            return Verdict({"correct": 0.0}, False, "The <answer> tag was empty.")
        return self.judge(task, answer)

    def start(self, task: Task) -> ToolEpisode:
        return ToolEpisode(self, task)

    # -- helpers for subclasses and the episode --------------------------------------------------

    def compose(self, task_text: str, tool_docs: list[str], answer_doc: str) -> str:
        """The prompt for a task, with this domain's turn and call budgets."""
        return compose_prompt(task_text, tool_docs, answer_doc, max_turns=self.manifest.max_turns,
                              calls_per_turn=self.calls_per_turn)

    @property
    def toolset(self) -> Toolset:
        if self._toolset is None:
            self._toolset = Toolset(self.tools())
        return self._toolset

    def tool_specs(self) -> list[dict[str, Any]]:
        return self.toolset.specs()

    def parse(self, completion: object, turn: int = 0) -> Action:
        return parse_action(completion, raw_params=self.toolset.raw_params(),
                            short_tags=self.short_tags, fences=self.fences, turn=turn)

    def run_tool(self, state: EpisodeState, call: ToolCall) -> str:
        """One call's result text; unknown tools and bad input become explanations."""
        return self.toolset.run(call, state)

    def syntax_help(self) -> str:
        """A reminder of the action syntax, sent after a malformed turn."""
        forms = ['<tool_call>{"name": "NAME", "arguments": {...}}</tool_call>']
        forms += [f'<tool name="{name}">INPUT</tool>' for name in self.toolset.names()]
        forms += [f"<{tag}>...</{tag}>" for tag in self.short_tags]
        forms += [f"a ```{lang} fenced block" for lang in self.fences]
        return ("Reply with tool calls (" + ", ".join(forms) + ") or with your final "
                "<answer>...</answer>.")


class ToolEpisode(Episode):
    """One multi-turn episode of an :class:`AgenticDomain`; see the module docstring."""

    domain: AgenticDomain

    def __init__(self, domain: AgenticDomain, task: Task):
        super().__init__(domain, task)
        self.state = EpisodeState(task, domain.new_state(task))
        self.final: StepResult | None = None

    @property
    def max_turns(self) -> int:
        return self.domain.manifest.max_turns

    def step(self, completion: str) -> StepResult:
        if self.final is not None:
            return replace(self.final, info={**self.final.info,
                                             "error": "the episode is over; start a new one"})
        self.turn += 1
        action = self.domain.parse(completion, self.turn)
        if action.kind == "answer":
            result = self._answer(completion)
        elif action.kind == "tool":
            result = self._tools(action.calls, completion)
        else:
            result = self._invalid(action.problem)
        if not result.done and self.turn >= self.max_turns:
            result = self._out_of_turns(completion, result)
        if result.done:
            self.final = result
        return result

    # -- the three kinds of turn -----------------------------------------------------------------

    def _answer(self, completion: str) -> StepResult:
        score = self._with_counters(self.domain.verify(self.task, completion))
        info = self._info("answer", [])
        attempts_left = self.domain.answer_attempts - self.state.failed_answers - 1
        if score.passed or attempts_left <= 0:
            return StepResult(None, score, True, info)
        self.state.failed_answers += 1
        detail = score.feedback or score.error or "The answer was not accepted."
        plural = "s" if attempts_left > 1 else ""
        message = (f"Your answer was not accepted. {detail}\nYou may keep using the tools; you "
                   f"have {attempts_left} more answer attempt{plural}.")
        return StepResult(self._observe(message), score, False, info)

    def _tools(self, calls: list[ToolCall], completion: str) -> StepResult:
        allowed = calls[: self.domain.calls_per_turn]
        self.state.tool_calls += len(allowed)
        results = [truncate(self.domain.run_tool(self.state, call).strip()) for call in allowed]
        blocks = [format_result(call.name, text) for call, text in zip(allowed, results)]
        if len(calls) > len(allowed):
            blocks.append(f"(only the first {len(allowed)} tool calls of a message are run; "
                          f"{len(calls) - len(allowed)} were ignored.)")
        note = turn_note(self.turn, self.max_turns)
        results[-1] = f"{results[-1]}\n{note}"  # the budget travels with the last result
        messages = [assistant_message(visible_text(completion), allowed)]
        messages += [tool_message(call, text) for call, text in zip(allowed, results)]
        info = self._info("tool", [call.name for call in allowed])
        return StepResult(self._observe("\n".join(blocks)), self._idle_score(), False, info,
                          messages)

    def _invalid(self, problem: str) -> StepResult:
        self.state.invalid_actions += 1
        message = f"{problem} {self.domain.syntax_help()}"
        return StepResult(self._observe(message), self._idle_score(message), False,
                          self._info("invalid", []))

    def _out_of_turns(self, completion: str, last: StepResult) -> StepResult:
        if last.info["action"] == "answer":  # a failed answer on the last turn: already scored
            score = last.score
        else:
            score = self._with_counters(self.domain.verify(self.task, completion))
        feedback = (f"The episode ended after {self.max_turns} turns without an accepted answer. "
                    f"{score.feedback}").strip()
        return StepResult(None, replace(score, feedback=feedback), True, last.info)

    # -- scores, observations, info --------------------------------------------------------------

    def _counters(self) -> dict[str, float]:
        return {"tool_calls": float(self.state.tool_calls),
                "invalid_actions": float(self.state.invalid_actions)}

    def _with_counters(self, score: Score) -> Score:
        components = dict(score.components)
        for name, value in self._counters().items():
            spec = self.domain.manifest.components.get(name)
            if spec is not None:
                lo, hi = spec.get("range", [0, 1])
                components[name] = clamp_reward(value, lo, hi)
        return replace(score, components=components)

    def _idle_score(self, feedback: str = "") -> Score:
        return self._with_counters(self.domain.finalize(Verdict({}, False, feedback)))

    def _observe(self, text: str) -> str:
        return f"{text}\n{turn_note(self.turn, self.max_turns)}"

    def _info(self, action: str, calls: list[str]) -> dict[str, Any]:
        # "attempt": only answers are scored attempts; the rollout loop discounts repairs by them
        return {"action": action, "attempt": action == "answer", "turn": self.turn,
                "repair": self.state.failed_answers,
                "tool_calls": self.state.tool_calls,
                "invalid_actions": self.state.invalid_actions, "calls": calls}


def compose_prompt(task_text: str, tool_docs: list[str], answer_doc: str, *, max_turns: int,
                   calls_per_turn: int) -> str:
    """The prompt every agentic domain uses: the task, the tools with examples, the answer form."""
    tools = "\n".join(f"- {doc}" for doc in tool_docs)
    return (f"{task_text}\n\n"
            "How to act: each of your messages is either tool calls or your final answer.\n"
            f"Tools (each result comes back as <result tool=\"NAME\">...</result>):\n{tools}\n"
            "Any tool may also be called as <tool_call>{\"name\": \"NAME\", \"arguments\": "
            "{...}}</tool_call>, or through your API's function calling.\n"
            f"You may make up to {calls_per_turn} tool calls in one message, and you have at most "
            f"{max_turns} messages in total.\n"
            f"Final answer: reply with <answer>...</answer>; {answer_doc} "
            "The episode ends when you answer.")
