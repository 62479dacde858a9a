"""Failure classes: why a score is not a clean pass, and whether that is the model's fault.

Every :class:`~rlhub.task.Score`, rollout turn, stored trajectory and server response carries one
class from :data:`FAILURES`. Only the *trainable* classes (:data:`TRAINABLE`) describe the model's
own behaviour; the others are faults of rlhub, its infrastructure or its inputs, and trainers,
the scheduler and eval metrics leave them out rather than treat them as the minimum reward.
PLUGINS.md defines each class for plugin authors.
"""

from __future__ import annotations

from typing import Any

FAILURES: dict[str, str] = {
    "none": "the answer passed",
    "answer": "the answer was wrong, malformed or over its limits (the model's fault)",
    "timeout": "the model's program ran out of time (the model's fault)",
    "sandbox": "the sandbox failed to start or run the job (infrastructure)",
    "verifier": "the verifier or episode crashed or overran its own time (rlhub's fault)",
    "judge": "the judge or reward model was unreachable, rate-limited or unparseable",
    "label": "the label was refused: malformed, forged, or for a domain not served",
    "policy": "the policy endpoint failed to produce a completion",
}
TRAINABLE = frozenset({"none", "answer", "timeout"})

# What a sandbox result's status says about the run, when the verdict names no class itself.
_EXEC_FAILURES = {"infra_error": "sandbox", "timeout": "timeout"}


def is_trainable(failure: str) -> bool:
    """True when ``failure`` is the model's own outcome, fit for a loss or a scheduler."""
    return failure in TRAINABLE


def check_failure(failure: str) -> str:
    """``failure`` itself, or ValueError naming the classes that exist."""
    if failure not in FAILURES:
        raise ValueError(f"failure class: expected one of {sorted(FAILURES)}, found {failure!r}")
    return failure


def of_exception(exc: BaseException) -> str:
    """The class of a crash: an rlhub error says its own (``SandboxError`` -> ``sandbox``, ...)."""
    return str(getattr(exc, "failure", "verifier"))


def of_verdict(passed: bool, exec_info: dict[str, Any] | None) -> str:
    """The class of a verdict that names none: a pass, a sandbox fault, a timeout or a wrong answer."""
    status = exec_info.get("status") if isinstance(exec_info, dict) else None
    if status == "infra_error":
        return "sandbox"
    if passed:
        return "none"
    return _EXEC_FAILURES.get(str(status), "answer")
