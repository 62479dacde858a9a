"""The ``local`` backend (first cut): one subprocess per job with rlimits, a private work dir,
a wall-clock timeout, output caps, a clean environment and a process-group kill.

Namespaces (network, read-only root) are not applied by this first cut; every result says so in
``missing``. The pre-forked, namespaced pool replaces this module.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlhub.sandbox import ExecRequest, ExecResult, Limits

MISSING = ["network_namespace", "readonly_root", "pid_namespace", "user_namespace"]
COMMANDS = {
    "python": [sys.executable, "-I", "main.py"],
    "bash": ["/bin/bash", "main.sh"],
    "javascript": ["node", "main.js"],
}
SOURCE = {"python": "main.py", "bash": "main.sh", "javascript": "main.js", "c": "main.c",
          "cpp": "main.cpp"}


def _limits(limits: Limits) -> Any:
    def apply() -> None:
        os.setsid()
        cpu = max(1, int(limits.cpu_s + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        mem = limits.memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, 16 << 20))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    return apply


def _status(code: int | None, timed_out: bool, over: bool, stderr: str) -> str:
    if timed_out:
        return "timeout"
    if over:
        return "output_limit"
    if code == 0:
        return "ok"
    if code in (-signal.SIGXCPU, -signal.SIGKILL) and "MemoryError" not in stderr:
        return "timeout" if code == -signal.SIGXCPU else "killed"
    if "MemoryError" in stderr or "Cannot allocate memory" in stderr:
        return "memory"
    return "error"


class LocalBackend:
    """Subprocess-per-job backend; see the module docstring."""

    name = "local"

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "active": ["rlimits", "private_workdir", "wall_timeout",
                                                  "output_caps", "clean_env", "process_group_kill"],
                "missing": MISSING}

    def run(self, request: ExecRequest) -> ExecResult:
        work = Path(tempfile.mkdtemp(prefix="rlhub-job-"))
        try:
            return self._run_in(work, request)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _run_in(self, work: Path, request: ExecRequest) -> ExecResult:
        lang = request.language
        (work / SOURCE[lang]).write_text(request.code)
        for name, text in request.files.items():
            (work / name).write_text(text)
        if lang in ("c", "cpp"):
            compiler = "gcc" if lang == "c" else "g++"
            build = subprocess.run([compiler, "-O1", "-o", "main", SOURCE[lang], "-lm"], cwd=work,
                                   capture_output=True, text=True, timeout=60)
            if build.returncode:
                return ExecResult("error", build.returncode, "", build.stderr[-4000:], 0.0,
                                  backend=self.name, missing=MISSING, detail="compile error")
            argv = ["./main"]
        else:
            argv = COMMANDS[lang]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "LANG": "C.UTF-8", **request.env}
        started = time.monotonic()
        proc = subprocess.Popen(argv + request.argv, cwd=work, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_limits(request.limits))
        timed_out = False
        try:
            out, err = proc.communicate(request.stdin.encode(), timeout=request.limits.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        cap = request.limits.output_bytes
        over = len(out) > cap or len(err) > cap
        stderr = err[:cap].decode(errors="replace")
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ExecResult(_status(proc.returncode, timed_out, over, stderr), proc.returncode,
                          out[:cap].decode(errors="replace"), stderr, time.monotonic() - started,
                          usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, self.name, MISSING)

    async def run_batch(self, requests: Sequence[ExecRequest]) -> list[ExecResult]:
        return list(await asyncio.gather(*(asyncio.to_thread(self.run, r) for r in requests)))

    def close(self) -> None:
        pass
