"""Per-language figures for ``bench/sandbox.py``: a trivial job (greet the name on stdin) on a
backend's warm pool, compile included, against running the same toolchain directly on the host
outside any sandbox (same source, same compile and run commands, in a temporary directory).

Jobs alternate with their baseline (direct, sandbox, direct, ...), so a shared machine's drift
hits both alike; the medians and their ratio are reported per language.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

GREETINGS = Path(__file__).resolve().parent.parent / "tests" / "sandbox" / "languages" / "greetings"
STDIN = "bench\n"
WANT = "Hello, bench!\n"


def programs(languages: Any) -> dict[str, str]:
    """Each language's greeting program (the test fixtures written apart from the suite)."""
    found = {}
    for path in sorted(GREETINGS.iterdir()):
        spec = languages.by_suffix(path.suffix)
        if spec is not None:
            found[spec.name] = path.read_text()
    return found


def direct(spec: Any, code: str) -> float:
    """Seconds to compile (if it does) and run ``code`` with the host's toolchain, no sandbox."""
    plan = spec.plan(code, 512)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", **plan["env"]}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        env["HOME"] = env["TMPDIR"] = work
        Path(work, plan["source"]).write_text(code)
        for name, text in plan["support"].items():
            Path(work, name).write_text(text)
        if plan["compile"]:
            subprocess.run(plan["compile"], cwd=work, env=env, check=True, capture_output=True)
        done = subprocess.run(plan["run"], cwd=work, env=env, input=STDIN, text=True,
                              capture_output=True)
        assert done.stdout == WANT, (spec.name, done)
    return time.perf_counter() - started


def sandboxed(backend: Any, language: str, code: str) -> tuple[float, float]:
    """Seconds for the job on ``backend`` (as the caller sees it), and its compile phase."""
    from rlhub.sandbox import ExecRequest, Limits

    request = ExecRequest(code=code, language=language, stdin=STDIN,
                          limits=Limits(wall_s=60, cpu_s=60, compile_wall_s=300,
                                        compile_cpu_s=300))
    started = time.perf_counter()
    result = backend.run(request)
    assert (result.status, result.stdout) == ("ok", WANT), (language, result)
    return time.perf_counter() - started, result.compile_s


def bench_languages(backend: Any, languages: Any, n: int) -> dict[str, Any]:
    """``{language: {direct_ms, sandbox_ms, compile_ms, speedup_vs_direct}}``: medians of ``n``
    interleaved pairs; a speedup above 1 means the warm pool beat the bare toolchain."""
    available = set(backend.info()["languages"])
    out: dict[str, Any] = {}
    for name, code in programs(languages).items():
        if name not in available:
            out[name] = {"skipped": f"no {name} toolchain on this backend"}
            continue
        spec = languages.get(name)
        sandboxed(backend, name, code)  # warm: the pool, the runtime's files in the page cache
        pairs = [(direct(spec, code), *sandboxed(backend, name, code)) for _ in range(n)]
        base = statistics.median(p[0] for p in pairs)
        box = statistics.median(p[1] for p in pairs)
        out[name] = {"direct_ms": round(base * 1000, 1), "sandbox_ms": round(box * 1000, 1),
                     "compile_ms": round(statistics.median(p[2] for p in pairs) * 1000, 1),
                     "speedup_vs_direct": round(base / box, 2), "n": n, "load_avg": os.getloadavg()[0]}
    return out
