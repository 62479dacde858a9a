"""rlhub hook implementations for rlhub-judged: manifests only, nothing heavy imported.

Every domain is tagged ``judge`` (the contract kit then runs its prompt-injection probes) and
asks for the ``default`` kind of judge: the mixture's ``judges: {default: ...}``, else
``RLHUB_JUDGE_URL`` / ``RLHUB_JUDGE_MODEL``, else the user's default judge. A judge that is down or late
gives the range minimum with the error recorded, never a stalled run.
"""

from __future__ import annotations

from typing import Any

from rlhub import hookimpl

PLUGIN_NAME = "judged"
VERSION = "1.0.0"
JUDGE_SCORING = {"kind": "partial", "measures": "the judge's grade of the answer against the "
                 "reference and the key points; unrelated text earns the bottom grade"}
FACTORY = "rlhub_judged.domains:make"

EXPLAIN_RUBRIC = {
    "version": "judged-explain-1",
    "criteria": {
        "correctness": "Every statement is factually right; nothing contradicts the reference.",
        "completeness": "It covers the key points in the grading notes.",
        "clarity": "It is clear, well organised and pitched at the stated audience.",
    },
    "scale": [1, 10],
}
DIALOGUE_RUBRIC = {
    "version": "judged-dialogue-1",
    "criteria": {
        "helpfulness": "It answers the user's last message directly with usable specifics.",
        "accuracy": "Its advice is correct and safe.",
        "tone": "It fits the assistant's role in the system message and the conversation so far.",
    },
    "scale": [1, 10],
}
PREFERENCE_RUBRIC = {
    "version": "judged-preference-1",
    "criteria": {
        "helpfulness": "Gives concrete, actionable advice that answers the question.",
        "accuracy": "Its advice is correct and safe.",
        "completeness": "Covers the key points in the grading notes.",
    },
    "scale": [1, 10],
}
REASONING_RUBRIC = {
    "version": "judged-reasoning-1",
    "criteria": {
        "reasoning": "Each step of the calculation is shown and correct, in order.",
        "clarity": "The explanation is short and easy to follow.",
    },
    "scale": [1, 10],
}


def _components(names: dict[str, float], described: dict[str, str]) -> dict[str, Any]:
    return {n: {"weight": w, "description": described.get(n, "")} for n, w in names.items()}


def _criteria(rubric: dict[str, Any], prefix: str = "judge") -> dict[str, float]:
    return {f"{prefix}_{c}": 0.0 for c in rubric["criteria"]}


def _manifest(name: str, summary: str, tags: list[str], reward: dict[str, float],
              verifier: dict[str, Any], params: dict[str, Any], size: int | None,
              scoring: dict[str, str] = JUDGE_SCORING, version: str = VERSION) -> dict[str, Any]:
    described = {"judge": "the judge's normalised score (weighted mean of criteria)",
                 "correct": "the boxed answer is right (gates the judge)",
                 "format": "a boxed answer is present"}
    return {
        "id": f"judged/{name}-v{version.split('.')[0]}",
        "version": version,
        "summary": summary,
        "license": "Apache-2.0",
        "tags": ["judge", *tags],
        "size": size,
        "determinism": "seeded",
        "reward": {"range": [0, 1], "components": _components(reward, described)},
        "verifier": verifier,
        "scoring": scoring,
        "verify_timeout_s": 45,
        "factory": FACTORY,
        "params": params,
    }


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    explain = {"rubric": EXPLAIN_RUBRIC, "reference": "answer", "notes": "meta.key_points"}
    dialogue = {"rubric": DIALOGUE_RUBRIC, "reference": "answer", "notes": "meta.key_points"}
    # A win must survive swapping positions, and a tie earns nothing: otherwise any fixed,
    # well-written text collected half the reward against a weak baseline.
    preference = {"rubric": PREFERENCE_RUBRIC, "mode": "pairwise", "reference": "answer",
                  "notes": "meta.key_points", "tie_value": 0.0, "aggregate": "majority"}
    reasoning = {"rubric": REASONING_RUBRIC, "reference": "meta.solution"}
    return [
        _manifest("explain", "Explain a concept to a given audience; graded by an LLM judge "
                  "against a reference and key points.", ["open-ended", "explanation"],
                  {"judge": 1.0, **_criteria(EXPLAIN_RUBRIC)},
                  {"name": "judge", "options": explain}, {"kind": "explain"}, None),
        _manifest("dialogue", "Continue a multi-turn conversation as the assistant; graded by "
                  "an LLM judge for helpfulness, accuracy and tone.", ["open-ended", "dialogue"],
                  {"judge": 1.0, **_criteria(DIALOGUE_RUBRIC)},
                  {"name": "judge", "options": dialogue}, {"kind": "dialogue"}, None),
        _manifest("preference", "Answer an advice question; an LLM judge compares the answer "
                  "with a baseline answer (pairwise preference).", ["open-ended", "pairwise"],
                  {"judge": 1.0}, {"name": "judge", "options": preference},
                  {"kind": "preference"}, None, {"kind": "exact"}, "2.0.0"),
        _manifest("reasoned-arithmetic", "Solve a word problem with a boxed answer; a correct "
                  "answer gates an LLM judge that grades the explanation.",
                  ["hybrid", "math", "procedural"],
                  {"correct": 0.5, "format": 0.0, "judge": 0.5, **_criteria(REASONING_RUBRIC)},
                  {"name": "composite", "options": {"parts": [
                      {"name": "math", "gate": True},
                      {"name": "judge", "options": reasoning}]}},
                  {"kind": "reasoned-arithmetic"}, None,
                  {"kind": "partial", "measures": "the judge's grade of the explanation, paid "
                   "only with the right boxed answer"}, "2.0.0"),  # v2: the math gate's hedges
    ]
