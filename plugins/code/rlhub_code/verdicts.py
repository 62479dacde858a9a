"""Shared judging for the output-checked code domains (bash, SQL, regex).

Every such domain runs hidden test cases and reduces them the same way as ``python-tests``:
``pass_frac`` (fraction of cases passed), ``all_pass``, and the first failing case's message,
truncated, as feedback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlhub import Manifest, Verdict

if TYPE_CHECKING:
    from rlhub import Limits

FEEDBACK_CHARS = 600
# A program longer than this is not run: every gold is a few hundred bytes, and a megabyte of
# text costs the sandbox seconds per hidden case just to parse (the contract kit's 1 MB probes
# took 5 x 5 s on a loaded machine, past the domain's verification budget).
MAX_PROGRAM_BYTES = 64 * 1024


def tests_verdict(failures: list[str | None], exec_info: dict[str, Any] | None = None) -> Verdict:
    """Reduce per-case outcomes (None for a pass, else the failure message) to a verdict."""
    total = len(failures)
    failed = [f for f in failures if f is not None]
    if not total:
        return Verdict({"pass_frac": 0.0, "all_pass": 0.0}, False, "No test case ran.", exec_info)
    if not failed:
        return Verdict({"pass_frac": 1.0, "all_pass": 1.0}, True, "", exec_info)
    feedback = f"{len(failed)} of {total} tests failed. First failure: {failed[0][:FEEDBACK_CHARS]}"
    return Verdict({"pass_frac": (total - len(failed)) / total, "all_pass": 0.0}, False, feedback,
                   exec_info)


def failed_verdict(message: str, exec_info: dict[str, Any] | None = None) -> Verdict:
    """A verdict with no test passed, e.g. when the program could not run at all."""
    return Verdict({"pass_frac": 0.0, "all_pass": 0.0}, False, message[:FEEDBACK_CHARS], exec_info)


def oversized_program(program: str) -> Verdict | None:
    """A failed verdict for a program over :data:`MAX_PROGRAM_BYTES`, else None (run it)."""
    size = len(program.encode("utf-8", "surrogatepass"))
    if size <= MAX_PROGRAM_BYTES:
        return None
    return failed_verdict(f"The program is {size:,} bytes; expected at most "
                          f"{MAX_PROGRAM_BYTES:,}, so it was not run.")


def manifest_limits(manifest: Manifest) -> Limits:
    """The sandbox limits the domain's manifest declares (``sandbox.limits``)."""
    from rlhub import Limits

    return Limits.from_dict(manifest.data["sandbox"].get("limits"))


def exec_summary(result: Any) -> dict[str, Any]:
    """The sandbox result for ``Score.exec``, with stdout and stderr tails only."""
    info = result.to_dict()
    info["stdout"] = info["stdout"][-2000:]
    info["stderr"] = info["stderr"][-2000:]
    return info

