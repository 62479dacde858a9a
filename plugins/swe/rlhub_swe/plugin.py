"""rlhub plugin ``swe``: manifests only (cheap: the generators and graders load on first use).

Synthetic domains are ``swe/syn-<kind>-<level>[-agent]-v1``; real-project domains
``swe/real-<project>-<kind>[-agent]-v1`` (their projects are fetched by ``rlhub swe prepare``,
or on first use). Every domain is tagged ``swe`` and ``synthetic`` or ``real-project`` with
``project:<name>``; the agent forms also ``multi-turn``.
"""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

VERSION = "1.0.0"
REWARD = {"range": [0, 1], "components": {
    "resolved": {"weight": 1.0, "description": "1 when every fail-to-pass and pass-to-pass test "
                                               "passes (the gate)"},
    "fail_to_pass": {"weight": 0.0, "description": "fraction of fail-to-pass tests passing"},
    "pass_to_pass": {"weight": 0.0, "description": "fraction of pass-to-pass tests passing"},
    "applies": {"weight": 0.0, "description": "1 when the patch applied"}}}
AGENT_REWARD = {**REWARD, "components": {
    **REWARD["components"],
    "tool_calls": {"weight": 0.0, "range": [0, 1000], "description": "tool calls (logged)"}}}
SYNTHETIC_KINDS = {
    "fix-test": "fix a bug shown by a failing test",
    "fix-issue": "fix a bug reported as an issue, no test shown",
    "feature": "add a function to a spec",
    "rename": "rename a function and update every call site",
    "dont-break": "fix a function whose callers in other modules compensate for its bug",
}
SINGLE_LEVELS = {"s": ("fix-test", "fix-issue", "feature", "rename", "dont-break"),
                 "m": ("fix-test", "fix-issue", "feature", "rename", "dont-break"),
                 "l": ("fix-test", "fix-issue", "feature", "rename", "dont-break"),
                 "xl": ("fix-test", "fix-issue", "feature", "rename", "dont-break"),
                 "xxl": ("fix-test", "fix-issue", "feature")}
AGENT_LEVELS = {"s": ("fix-test",), "m": tuple(SYNTHETIC_KINDS), "l": ("fix-issue",)}


def _manifest(name: str, summary: str, tags: list[str], params: dict[str, Any],
              agent: bool) -> dict[str, Any]:
    return {
        "id": f"swe/{name}{'-agent' if agent else ''}-v1", "version": VERSION,
        "summary": summary, "license": "Apache-2.0", "size": None,
        "tags": ["swe", *tags, *(["multi-turn", "tools"] if agent else [])],
        "reward": AGENT_REWARD if agent else REWARD, "scoring": {"kind": "exact"},
        "factory": "rlhub_swe.agent:SweAgentDomain" if agent else "rlhub_swe.domain:SweDomain",
        "params": params, "sandbox": {"kind": "local"},
        "turns": {"max_turns": 30, "repair_discount": 0.8} if agent
        else {"max_turns": 2, "repair_discount": 0.8},
        "verify_timeout_s": 300,
    }


def synthetic() -> list[dict[str, Any]]:
    made = []
    for agent, levels in ((False, SINGLE_LEVELS), (True, AGENT_LEVELS)):
        for level, kinds in levels.items():
            for kind in kinds:
                summary = (f"Synthetic package, level {level}: {SYNTHETIC_KINDS[kind]}"
                           f"{', as an agent episode with tools' if agent else ', as one patch'}.")
                made.append(_manifest(f"syn-{kind}-{level}", summary,
                                      ["synthetic", f"level:{level}", f"kind:{kind}"],
                                      {"source": "synthetic", "kind": kind, "level": level},
                                      agent))
    return made


def real() -> list[dict[str, Any]]:
    from rlhub_swe.real.projects import KINDS, PROJECTS

    made = []
    for project in PROJECTS.values():
        for kind, summary in KINDS.items():
            for agent in ((False, True) if kind == "fix-test" else (False,)):
                text = (f"{project.name} {project.version} from PyPI: {summary}"
                        f"{', as an agent episode with tools' if agent else ', as one patch'}.")
                made.append(_manifest(f"real-{project.name}-{kind}", text,
                                      ["real-project", f"project:{project.name}",
                                       f"kind:{kind}"],
                                      {"source": "real", "project": project.name, "kind": kind},
                                      agent) | {"license": project.license})
    return made


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    """Every swe domain; see README.md for the task kinds and levels."""
    return synthetic() + real()


@hookimpl
def rlhub_commands() -> dict[str, str]:
    """``rlhub swe prepare``."""
    return {"swe": "rlhub_swe.cli:app"}
