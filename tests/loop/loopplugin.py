"""A small rlhub plugin used by the loop tests: trivial domains and a scripted ``oracle:`` policy.

Load it in-process with ``Registry(plugins=[loopplugin])`` or in a subprocess with
``RLHUB_PLUGINS=loopplugin`` and this folder on ``PYTHONPATH``.

Domains (plugin ``looptest``):

- ``reverse-v1``: reverse a word; 2 turns, repair discount 0.5; the feedback says what was wrong.
- ``add-v1``: add two numbers; components ``correct`` (weight 0.8) and ``digits`` (0.2).
- ``crashy-v1``: its check raises on odd task indices (a verifier crash).
- ``brokenenv-v1``: its episode raises from ``step`` (an environment crash).
- ``slow-v1``: its check sleeps past ``verify_timeout_s``.

Policy ``oracle:MODE`` (options ``delay_s``): ``oracle:right`` solves every task,
``oracle:wrong-first`` answers wrong until it has seen feedback, ``oracle:garbage`` answers with
control characters, a lone surrogate and 100 kB of text.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import rlhub
from rlhub.domain import Domain, Episode, Verdict

PLUGIN_NAME = "looptest"


def _manifest(name: str, summary: str, **extra: Any) -> dict[str, Any]:
    base = {"id": f"looptest/{name}-v1", "version": "1.0", "summary": summary,
            "license": "MIT", "tags": ["test"], "factory": f"loopplugin:{extra.pop('cls')}",
            "reward": {"range": [0, 1], "components": {"correct": {"weight": 1.0}}}}
    return {**base, **extra}


@rlhub.hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    add_reward = {"range": [0, 1], "components": {"correct": {"weight": 0.8},
                                                  "digits": {"weight": 0.2}}}
    return [
        _manifest("reverse", "Reverse a word.", cls="Reverse",
                  turns={"max_turns": 2, "repair_discount": 0.5}),
        _manifest("add", "Add two numbers.", cls="Add", reward=add_reward),
        _manifest("crashy", "Verifier raises on odd indices.", cls="Crashy"),
        _manifest("brokenenv", "Episode raises from step.", cls="BrokenEnv",
                  turns={"max_turns": 2, "repair_discount": 0.5}),
        _manifest("slow", "Verifier overruns its time.", cls="Slow", verify_timeout_s=0.1),
    ]


WORDS = ["apple", "river", "stone", "cloud", "tiger", "maple", "ocean", "pixel", "quartz",
         "lemon", "north", "bread"]


class Reverse(Domain):
    """Reverse the word in the prompt."""

    def generate(self, rng: Any, split: str, index: int) -> dict[str, Any]:
        word = rng.choice(WORDS) + str(index)
        return {"prompt": f"Reverse the word: {word}", "answer": word[::-1], "gold": word[::-1],
                "meta": {"index": index}}

    def check(self, task: rlhub.Task, completion: str) -> Verdict:
        ok = completion.strip() == task.answer
        feedback = "" if ok else f"expected the word reversed, found {completion.strip()[:40]!r}"
        return Verdict({"correct": float(ok)}, ok, feedback)


class Add(Domain):
    """Add two numbers; a digits-only answer earns the ``digits`` component."""

    def generate(self, rng: Any, split: str, index: int) -> dict[str, Any]:
        a, b = rng.randint(1, 99), rng.randint(1, 99)
        return {"prompt": f"Add: {a}+{b}", "answer": str(a + b), "gold": str(a + b)}

    def check(self, task: rlhub.Task, completion: str) -> Verdict:
        text = completion.strip()
        ok = text == task.answer
        return Verdict({"correct": float(ok), "digits": float(text.isdigit())}, ok,
                       "" if ok else "wrong sum")


class Crashy(Reverse):
    """Like Reverse, but the verifier crashes on odd task indices."""

    def check(self, task: rlhub.Task, completion: str) -> Verdict:
        if task.meta["index"] % 2:
            raise RuntimeError("verifier exploded")
        return super().check(task, completion)


class _BrokenEpisode(Episode):
    def step(self, completion: str) -> Any:
        raise ValueError("environment lost its state")


class BrokenEnv(Reverse):
    """Like Reverse, but its episodes raise from step()."""

    def start(self, task: rlhub.Task) -> Episode:
        return _BrokenEpisode(self, task)


class Slow(Reverse):
    """Like Reverse, but the verifier takes three seconds (its manifest allows 0.1 s)."""

    def check(self, task: rlhub.Task, completion: str) -> Verdict:
        time.sleep(3.0)
        return super().check(task, completion)


# -- the scripted policy ---------------------------------------------------------------------


def solve(prompt: str) -> str:
    """The right answer to a looptest prompt."""
    if m := re.match(r"Reverse the word: (\S+)", prompt):
        return m.group(1)[::-1]
    if m := re.match(r"Add: (\d+)\+(\d+)", prompt):
        return str(int(m.group(1)) + int(m.group(2)))
    return "I do not know"


class Oracle:
    """A scripted policy (see the module docstring); counts the conversations it answered."""

    def __init__(self, mode: str, delay_s: float = 0.0):
        if mode not in ("right", "wrong-first", "garbage"):
            raise rlhub.PolicyError(f"oracle: expected right, wrong-first or garbage, found {mode!r}")
        self.mode, self.delay_s, self.calls = mode, float(delay_s), 0

    def info(self) -> dict[str, Any]:
        return {"spec": f"oracle:{self.mode}"}

    async def generate(self, messages_batch: list[list[dict[str, str]]], **sampling: Any) -> list[str]:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        self.calls += len(messages_batch)
        return [self._answer(m) for m in messages_batch]

    def _answer(self, messages: list[dict[str, str]]) -> str:
        if self.mode == "garbage":
            return "\x00\x1b[31m\udcff" + "x" * 100_000
        repaired = any(m["role"] == "assistant" for m in messages)
        if self.mode == "wrong-first" and not repaired:
            return "wrong"
        return solve(messages[0]["content"])


class SweAgent:
    """A scripted repository agent for ``swe/*-agent`` domains: it runs the tests, then submits
    the task's reference patch (found by regenerating the task its prompt came from), writing
    its calls as Hermes ``<tool_call>`` text the way chat templates do."""

    def __init__(self) -> None:
        self.golds: dict[str, str] = {}

    def _gold(self, prompt: str) -> str:
        if not self.golds:
            reg = rlhub.registry()
            for domain_id in reg.match(["swe/*-agent-v1"]):
                if "-s-" not in domain_id:
                    continue
                domain = reg.get(domain_id)
                for split in domain.manifest.data["splits"]:
                    for seed in range(3):
                        for task in domain.sample(4, split=split, seed=seed):
                            self.golds[task.prompt_text()] = task.gold or ""
        return self.golds.get(prompt, "")

    async def generate(self, messages_batch: list[list[dict[str, Any]]], **sampling: Any) -> list[str]:
        out = []
        for messages in messages_batch:
            if not any(m["role"] == "assistant" for m in messages):
                out.append('<tool_call>{"name": "run_tests", "arguments": {}}</tool_call>')
            else:
                out.append(self._gold(str(messages[0]["content"])))
        return out


@rlhub.hookimpl
def rlhub_make_policy(spec: str, options: dict[str, Any]) -> Any:
    if spec == "swe-agent:":
        return SweAgent()
    if not spec.startswith("oracle:"):
        return None
    return Oracle(spec.split(":", 1)[1], delay_s=options.get("delay_s", 0.0))
