"""Sandbox throughput and latency, against baselines measured in the same run; prints JSON.

For a trivial Python job (``print(1)``, checked on every result) it measures, at concurrency 1
and at full concurrency (one job in flight per core unless ``--concurrency``):

* ``spawn``: the baseline of starting ``python -I -S -c pass`` per job (no sandbox at all);
* ``local``: the local backend with every protection it can apply on this machine;
* ``docker_exec``: the baseline of one ``docker exec`` (``exec_run``) per job in a warm container;
* ``docker``: the docker backend's warm pool of resident workers;
* ``ray`` (with ``--ray``): the ray backend on a private local Ray instance;
* ``local.typical_job``: a job that imports what solutions usually import, against spawning the
  same program (one round);
* ``languages``: per registered language and backend, a trivial job (greet stdin) on the warm
  pool, compile included, against the same toolchain run directly on the host
  (``sandbox_languages.py``; ``--language-pairs``, 0 to skip);
* ``local.protection_costs`` / ``docker.protection_costs``: what each isolation protection (and
  ``all`` of them) costs a job, measured by turning it off (``disable=``) in blocks alternating
  with the backend that has every protection on (c=1, ``--rounds`` rounds, median round):
  ``per_job_ms`` is the difference of the two mean job times, ``p50_delta_ms`` of the medians.

Each row reports jobs/s, p50 and p99 latency; ``ratios`` divide a backend's jobs/s by its
baseline's, measured in blocks alternating with its own, and ``targets`` says whether the
goals (local >= 4x spawn at c=1, docker >= 15x docker exec) are met. Runs are closed loops of ``c``
threads. On a shared machine each baseline/backend pair waits (``--quiet-wait``) for the CPUs to
go idle first, records how busy they were, and is repeated ``--rounds`` times; the median-ratio
round is reported.

    python bench/sandbox.py [--jobs 400] [--concurrency N] [--no-docker] [--ray] [--no-costs]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _util import emit  # noqa: E402
from sandbox_languages import bench_languages  # noqa: E402

JOB = "print(1)"
# What a solution under test typically starts with; the spawn baseline runs the same program.
TYPICAL_JOB = (
    "import collections, heapq, itertools, math, re\n"
    "from typing import List\n"
    "print(sum(math.isqrt(i) for i in itertools.islice(collections.Counter(range(200)), 100)))\n"
)
TYPICAL_OUT = "{}\n".format(sum(__import__("math").isqrt(i) for i in range(100)))


def busy_fraction(window_s: float = 0.5) -> float:
    """System-wide CPU busy fraction over ``window_s`` (from /proc/stat)."""

    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields) - idle, sum(fields)

    busy0, total0 = sample()
    time.sleep(window_s)
    busy1, total1 = sample()
    return (busy1 - busy0) / max(1, total1 - total0)


def wait_for_quiet(max_wait_s: float, threshold: float = 0.25) -> float:
    """Wait (at most ``max_wait_s``) until other tenants leave the CPUs mostly idle.

    Returns the busy fraction last seen, so the report shows how quiet each pair really was.
    """
    deadline = time.monotonic() + max_wait_s
    busy = busy_fraction()
    while busy > threshold and time.monotonic() < deadline:
        busy = busy_fraction()
    return round(busy, 3)


QUIET_WAIT_S = [20.0]


def closed_loop(call: Callable[[], None], n: int, concurrency: int) -> tuple[list[float], float]:
    """Run ``call`` ``n`` times with ``concurrency`` in flight; the latencies and the wall time."""
    latencies: list[float] = []
    lock = threading.Lock()
    remaining = [n]

    def worker() -> None:
        while True:
            with lock:
                if remaining[0] <= 0:
                    return
                remaining[0] -= 1
            started = time.perf_counter()
            call()
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, time.perf_counter() - started


def summary(latencies: list[float], wall: float, concurrency: int) -> dict[str, float]:
    latencies = sorted(latencies)
    return {
        "n": len(latencies),
        "concurrency": concurrency,
        "jobs_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 3),
        "p99_ms": round(latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1000, 3),
    }


def measure(
    call: Callable[[], None], n: int, concurrency: int, warmup: int = 20
) -> dict[str, float]:
    closed_loop(call, warmup, concurrency)
    return summary(*closed_loop(call, n, concurrency), concurrency)


def interleaved(
    calls: dict[str, tuple[Callable[[], None], int]], concurrency: int, blocks: int = 8
) -> dict[str, dict[str, float]]:
    """Measure several calls in alternating blocks, so a shared machine's drift hits them alike.

    ``calls`` maps a name to (call, total jobs); each block runs 1/``blocks`` of every call's jobs
    in turn (after a few unrecorded calls, so each block measures the steady state), and each
    call's jobs/s is its jobs over the time its own blocks took."""
    runs = {name: ([], 0.0) for name in calls}
    for name, (call, _) in calls.items():
        closed_loop(call, 10, concurrency)  # warm-up
    for block in range(blocks):
        order = list(calls.items())
        for name, (call, n) in order if block % 2 == 0 else order[::-1]:  # no order favoured
            closed_loop(call, 2 * concurrency, concurrency)  # back to steady state, unrecorded
            latencies, wall = closed_loop(call, max(concurrency, n // blocks), concurrency)
            runs[name] = (runs[name][0] + latencies, runs[name][1] + wall)
    return {name: summary(lat, wall, concurrency) for name, (lat, wall) in runs.items()}


def spawn_call(python: str, code: str = "pass") -> Callable[[], None]:
    def call() -> None:
        done = subprocess.run([python, "-I", "-S", "-c", code], capture_output=True)
        assert done.returncode == 0, done

    return call


def backend_call(backend: Any, code: str = JOB, out: str = "1\n") -> Callable[[], None]:
    from rlhub.sandbox import ExecRequest

    request = ExecRequest(code=code)

    def call() -> None:
        result = backend.run(request)
        assert (result.status, result.stdout) == ("ok", out), result

    return call


def docker_exec_call(container: Any) -> Callable[[], None]:
    def call() -> None:
        code, out = container.exec_run(["python3", "-I", "-S", "-c", JOB])
        assert (code, out) == (0, b"1\n"), (code, out)

    return call


def pair(
    name: str,
    base_name: str,
    base: Callable[[], None],
    call: Callable[[], None],
    n: int,
    concurrency: list[int],
    n_base: int,
    rounds: int,
) -> dict[str, Any]:
    """Measure a baseline and a backend in alternating blocks, ``rounds`` times per concurrency.

    The machine may be shared, so absolute figures drift between seconds; each round's ratio
    compares blocks interleaved with each other, and the reported round is the median-ratio one.
    """
    out: dict[str, Any] = {}
    for c in concurrency:
        trials = []
        for _ in range(rounds):
            busy = wait_for_quiet(QUIET_WAIT_S[0])
            rows = interleaved({base_name: (base, n_base), name: (call, n)}, c)
            rows[base_name]["cpu_busy_before"] = busy
            ratio = rows[name]["jobs_per_s"] / rows[base_name]["jobs_per_s"]
            trials.append((ratio, rows[base_name], rows[name]))
        trials.sort(key=lambda t: t[0])
        ratio, base_row, row = trials[len(trials) // 2]
        out[f"c{c}"] = {
            base_name: base_row,
            name: row,
            "ratio": round(ratio, 2),
            "round_ratios": [round(t[0], 2) for t in trials],
        }
    return out


def protection_costs(
    make: Callable[..., Any], names: list[str], n: int, rounds: int
) -> dict[str, Any]:
    """Per protection (and for all of them together, when there are several): the backend with
    every protection on against one with it turned off."""
    out: dict[str, Any] = {}
    toggles = {name: [name] for name in names}
    if len(names) > 1:
        toggles["all"] = list(names)
    for name, disable in toggles.items():
        on, off = make(), make(disable=disable)  # both fresh, so neither is warmer
        try:
            trials = []
            for _ in range(rounds):
                calls = {"on": (backend_call(on), n), "off": (backend_call(off), n)}
                rows = interleaved(calls, 1)
                per_job = 1000 / rows["on"]["jobs_per_s"] - 1000 / rows["off"]["jobs_per_s"]
                trials.append((per_job, rows))
            trials.sort(key=lambda t: t[0])
            per_job, rows = trials[len(trials) // 2]
            out[name] = {
                "per_job_ms": round(per_job, 3),
                "p50_delta_ms": round(rows["on"]["p50_ms"] - rows["off"]["p50_ms"], 3),
                "round_per_job_ms": [round(t[0], 3) for t in trials],
                "on": rows["on"],
                "off": rows["off"],
                "missing_when_off": off.info()["missing"],
            }
        finally:
            on.close()
            off.close()
    return out


def bench_local(n: int, concurrency: list[int], rounds: int, costs: bool = True) -> dict[str, Any]:
    from rlhub.sandbox.local import LocalBackend

    backend = LocalBackend()
    try:
        out = pair(
            "local",
            "spawn",
            spawn_call(backend.support.python),
            backend_call(backend),
            n,
            concurrency,
            n,
            rounds,
        )
        out["missing"] = backend.info()["missing"]
        out["typical_job"] = pair(
            "local",
            "spawn",
            spawn_call(backend.support.python, TYPICAL_JOB),
            backend_call(backend, TYPICAL_JOB, TYPICAL_OUT),
            n // 2,
            concurrency,
            n // 2,
            1,
        )
    finally:
        backend.close()
    if costs:
        from rlhub.sandbox.channel import JOB_ISOLATION

        toggles = [p for p in JOB_ISOLATION if p != "job_disk_quota"]  # a job's tmpfs: not optional
        out["protection_costs"] = protection_costs(LocalBackend, toggles, n // 2, rounds)
    return out


def bench_docker(n: int, concurrency: list[int], rounds: int, costs: bool = True
                 ) -> dict[str, Any]:
    from rlhub.sandbox.docker_backend import DockerBackend, engine_problem

    problem = engine_problem()
    if problem:
        return {"skipped": f"no Docker engine reachable: {problem}"}
    backend = DockerBackend()
    container = backend.client.containers.run(
        backend.image,
        ["sleep", "infinity"],
        detach=True,
        network_mode="none",
        labels={"rlhub.sandbox": "1"},
    )
    try:
        out = pair(
            "docker",
            "docker_exec",
            docker_exec_call(container),
            backend_call(backend),
            n,
            concurrency,
            max(40, n // 5),
            rounds,
        )
        out["missing"] = backend.info()["missing"]
    finally:
        container.remove(force=True)
        backend.close()
    if costs:  # the other new protections are a seccomp rule or a tmpfs: nothing per job
        out["protection_costs"] = protection_costs(DockerBackend, ["job_memory_limit"], n // 2,
                                                   rounds)
    return out


def bench_ray(n: int, concurrency: list[int]) -> dict[str, Any]:
    from rlhub.sandbox.ray_backend import RayBackend

    backend = RayBackend()
    try:
        call = backend_call(backend)
        return {"rows": {"ray": {f"c{c}": measure(call, n, c) for c in concurrency}}}
    finally:
        backend.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quiet-wait", type=float, default=20.0,
                        help="Seconds to wait for idle CPUs before each measured pair.")
    parser.add_argument("--no-docker", action="store_true")
    parser.add_argument("--ray", action="store_true")
    parser.add_argument("--no-costs", action="store_true",
                        help="Skip measuring each isolation protection's per-job cost.")
    parser.add_argument("--language-pairs", type=int, default=3,
                        help="Interleaved pairs per language (0: no per-language figures).")
    args = parser.parse_args()
    levels = sorted({1, args.concurrency})
    QUIET_WAIT_S[0] = args.quiet_wait
    report: dict[str, Any] = {
        "bench": "sandbox",
        "job": JOB,
        "typical_job": TYPICAL_JOB,
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "kernel": platform.release(),
        "load_avg_before": os.getloadavg(),
    }
    report["local"] = bench_local(args.jobs, levels, args.rounds, not args.no_costs)
    if not args.no_docker:
        report["docker"] = bench_docker(args.jobs, levels, args.rounds, not args.no_costs)
    if args.ray:
        report["ray"] = bench_ray(args.jobs // 2, levels)
    if args.language_pairs:
        report["languages"] = per_language(args.language_pairs, not args.no_docker)
    report["targets"] = targets(report)
    report["load_avg_after"] = os.getloadavg()
    emit(report)


def per_language(pairs: int, docker: bool) -> dict[str, Any]:
    """Each registered language's trivial job per backend (``sandbox_languages.py``)."""
    from rlhub.sandbox.languages import builtin
    from rlhub.sandbox.local import LocalBackend

    languages = builtin()
    makers: dict[str, Callable[[], Any]] = {"local": lambda: LocalBackend(workers=1, slots=4)}
    if docker:
        from rlhub.sandbox.docker_backend import DockerBackend, engine_problem

        if engine_problem() is None:
            makers["docker"] = lambda: DockerBackend(containers=1, slots=4)
    out = {}
    for name, make in makers.items():
        backend = make()
        try:
            out[name] = bench_languages(backend, languages, pairs)
        finally:
            backend.close()
    return out


# jobs/s against the baseline, per concurrency ("c<N>"; the last entry for higher ones)
GOALS = {"local": ("spawn", {"c1": 4.0, "c2": 2.5}), "docker": ("docker_exec", {"c1": 15.0})}


def targets(report: dict[str, Any]) -> dict[str, Any]:
    """The goals, with every protection on: local >= 4x the spawn baseline at c=1 and 2.5x at
    c=2 (two cores busy), the docker pool >= 15x ``docker exec``."""
    out: dict[str, Any] = {"goals": {name: goals for name, (_, goals) in GOALS.items()}}
    for name, (baseline, goals) in GOALS.items():
        section = report.get(name, {})
        ratios = {k: v["ratio"] for k, v in section.items() if k[:1] == "c" and k[1:].isdigit()}
        if ratios:
            out[f"{name}_vs_{baseline}"] = ratios
            last = list(goals.values())[-1]
            out[f"{name}_met"] = {k: v >= goals.get(k, last) for k, v in ratios.items()}
    return out


if __name__ == "__main__":
    main()
