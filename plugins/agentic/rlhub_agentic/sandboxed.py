"""Running the plugin's job programs (:mod:`rlhub_agentic.jobs`) in the rlhub sandbox."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

JOB_MARK = '{"rlhub_job"'


@functools.cache
def job_source(name: str) -> str:
    """The source of job module ``name`` (``sqldb``, ``webapi``), sent as the job's program."""
    return resources.files("rlhub_agentic.jobs").joinpath(f"{name}.py").read_text()


def parse_reply(stdout: str) -> Any | None:
    """The job's reply from the last ``{"rlhub_job": ...}`` line of its output, or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(JOB_MARK):
            try:
                return json.loads(line)["rlhub_job"]
            except (ValueError, KeyError):
                return None
    return None


class JobFailed(Exception):
    """The sandbox did not return a reply; the message says why, for the policy to read."""


def run_job(sandboxes: Any, name: str, payload: dict[str, Any], *,
            limits: dict[str, Any] | None = None, backend: str | None = None) -> Any:
    """Run job ``name`` on ``payload`` in the sandbox (a domain's ``self.services.sandboxes``)
    and return its reply.

    Raises :class:`JobFailed` when the job timed out, crashed or the sandbox is unavailable.
    """
    from rlhub import ExecRequest, Limits

    request = ExecRequest(code=job_source(name), language="python", stdin=json.dumps(payload),
                          limits=Limits.from_dict({"wall_s": 10, "cpu_s": 5, "memory_mb": 256,
                                                   **(limits or {})}))
    result = sandboxes.run(request, backend)
    reply = parse_reply(result.stdout) if result.status == "ok" else None
    if reply is None:
        tail = (result.stderr or result.detail).strip()[-300:]
        raise JobFailed(f"the environment could not run this call (sandbox status "
                        f"{result.status})" + (f": {tail}" if tail else ""))
    return reply
