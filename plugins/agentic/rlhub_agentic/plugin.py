"""rlhub plugin ``agentic``: manifests only (cheap to import; domain code loads on first use)."""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

COUNTER = {"weight": 0.0, "range": [0, 64]}


def _reward(**extra: dict[str, Any]) -> dict[str, Any]:
    return {"range": [0, 1], "components": {
        "correct": {"weight": 1.0, "description": "the final <answer> is correct"},
        **extra,
        "tool_calls": {**COUNTER, "description": "tool calls made in the episode (logged only)"},
        "invalid_actions": {**COUNTER,
                            "description": "malformed turns in the episode (logged only)"},
    }}


def _manifest(name: str, summary: str, tags: list[str], factory: str, params: dict[str, Any], *,
              max_turns: int, repair_discount: float, sandbox: bool,
              **extra: Any) -> dict[str, Any]:
    manifest = {
        "id": f"agentic/{name}-v2", "version": "2.0.0", "summary": summary,
        "license": "Apache-2.0", "tags": ["agentic", "multi-turn", *tags], "size": None,
        "reward": _reward(), "factory": f"rlhub_agentic.{factory}", "params": params,
        "turns": {"max_turns": max_turns, "repair_discount": repair_discount},
        "sandbox": {"kind": "local", "limits": {"wall_s": 10, "memory_mb": 256}} if sandbox
        else {"kind": "none"},
        "verify_timeout_s": 5,
    }
    return {**manifest, **extra}


def _sql(name: str, summary: str, difficulty: str, max_turns: int, **params: Any) -> dict[str, Any]:
    return _manifest(name, summary, ["sql", "tools", difficulty], "sql:SqlDomain",
                     {"difficulty": difficulty, "answer_attempts": 2, **params},
                     max_turns=max_turns, repair_discount=0.5, sandbox=True)


def _tools(name: str, summary: str, tools: list[str], problems: str, max_turns: int,
           sandbox: bool) -> dict[str, Any]:
    return _manifest(name, summary, ["tools", *tools], "tooluse:ToolUseDomain",
                     {"tools": tools, "problems": problems, "answer_attempts": 2},
                     max_turns=max_turns, repair_discount=0.5, sandbox=sandbox)


def _game(name: str, summary: str, factory: str, max_turns: int, **params: Any) -> dict[str, Any]:
    return _manifest(name, summary, ["game", "dialogue"], factory, {"calls_per_turn": 1, **params},
                     max_turns=max_turns, repair_discount=1.0, sandbox=False)


DOMAINS: list[dict[str, Any]] = [
    _sql("sql-easy", "Query a one-table question over a generated shop database in SQLite, then "
         "answer.", "easy", 6),
    _sql("sql-medium", "Answer a GROUP BY / single-join question over a generated shop database by "
         "running SQLite queries.", "medium", 8),
    _sql("sql-hard", "Answer a three-table join question over a generated shop database by running "
         "SQLite queries.", "hard", 10),
    _sql("sql-explore", "Discover an unseen schema (renamed tables and columns) with SQLite "
         "queries, then answer a question about it.", "medium", 10, show_schema=False),
    _tools("calculator", "Solve an arithmetic word problem with a calculator tool.",
           ["calculator"], "calculator", 6, sandbox=False),
    _tools("unit-convert", "Solve a units word problem with a unit-converter and a calculator.",
           ["convert", "calculator"], "units", 8, sandbox=False),
    _tools("shop-api", "Place an order through a stateful REST-like shop API served in the "
           "sandbox and report its order id.", ["api", "calculator"], "shop", 12, sandbox=True),
    _tools("kv-chain", "Follow a chain of keys (one locked behind a PIN) in a key-value API "
           "served in the sandbox.", ["api"], "kv", 14, sandbox=True),
    _tools("toolbox", "Total shipment weights from a paginated API in mixed units, using the API, "
           "a unit converter and a calculator.", ["api", "convert", "calculator"], "shipments", 10,
           sandbox=True),
    _game("guess-number", "Find a secret integer in 1..1000 from higher/lower replies.",
          "guessing:GuessNumberDomain", 12, low=1, high=1000),
    _game("twenty-questions", "Identify a secret person in a shown table by yes/no questions about "
          "attributes.", "guessing:TwentyQuestionsDomain", 10, people=16),
    _game("mastermind", "Crack a 4-letter code over 6 letters from exact/misplaced feedback.",
          "guessing:MastermindDomain", 12, length=4, colors=6),
    _manifest("code-repair", "Write a Python function, run it and its visible tests in the "
              "sandbox, submit, and repair from hidden-test feedback.", ["code", "python"],
              "coding:CodeRepairDomain", {"answer_attempts": 3, "cases": 8, "visible": 2},
              max_turns=8, repair_discount=0.8, sandbox=True, verify_timeout_s=15,
              reward=_reward(pass_frac={"weight": 0.0, "description": "fraction of tests passed "
                                        "by the final answer (logged only)"})),
]


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    """The agentic domains; see README.md for each domain's action syntax."""
    return [dict(manifest) for manifest in DOMAINS]
