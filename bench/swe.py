"""Repository tasks (rlhub-swe) on this machine: workspaces, tool steps, grading, concurrency.

Measured on the ``local`` workspace backend (bwrap namespaces over an overlay of the task's
snapshot), in one run:

* ``workspace``: opening a workspace of a level-``m`` repository from its snapshot, and
  resetting it, p50/p99;
* ``tool_step``: an agent episode's step latency per tool (``read_file``, ``search``,
  ``run_tests``), p50/p99;
* ``grading``: the time to grade a reference patch (a fresh workspace, the hidden tests, pytest)
  per synthetic level and per real project, median over distinct tasks (the grader caches a
  verdict per patch, so every task is new to it);
* ``concurrency``: whole episodes (read a file, run the tests, submit the reference) played by
  ``c`` threads at once: episodes/s and p50 episode time, against ``c = 1`` in the same run; and
  the proportional set size (PSS) of each open episode's workspace server and its processes
  between commands, and the peak RSS of a grading run;
* ``node_estimate``: what a ``--node-cores`` node would sustain, with its arithmetic: the CPU
  seconds an episode costs (the sandboxed runs' CPU as their ``ExecResult`` reports it, plus
  this process's own CPU per episode) against the cores, and the PSS per open episode against
  ``--node-memory-gib``.

The machine is shared: figures measured while others work are noisy, and the ratios against the
``c = 1`` baseline of the same run are what to compare.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from _util import Row, emit, summary
from rlhub import registry
from rlhub.sandbox import leases

if TYPE_CHECKING:
    from rlhub.plugins import Registry

LEVELS = ("s", "m", "l", "xl", "xxl")
REAL = ("inflection", "iniconfig", "toolz")
AGENT = "swe/syn-fix-test-s-agent-v1"


def call(name: str, **arguments: Any) -> str:
    import json

    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def workspace_figures(reg: Registry, n: int) -> dict[str, Any]:
    """Open and reset of a level-m repository's workspace."""
    task = reg.get("swe/syn-fix-test-m-v1").task("test", 0, 0)
    files = dict(task.meta["files"])
    opens, resets = [], []
    for _ in range(n):
        start = time.perf_counter()
        workspace = reg.services.workspaces.open(files, backend="local")
        opens.append(time.perf_counter() - start)
        with workspace:
            workspace.write(f"{task.meta['package']}/scratch.py", "x = 1\n")
            start = time.perf_counter()
            workspace.reset()
            resets.append(time.perf_counter() - start)
    return {"files": len(files), "characters": sum(map(len, files.values())),
            "open": summary(opens), "reset": summary(resets)}


def tool_figures(reg: Registry, n: int) -> dict[str, Any]:
    """Step latency of an agent episode per tool."""
    domain = reg.get(AGENT)
    task = domain.task("test", 0, 0)
    path = f"{task.meta['package']}/__init__.py"
    steps = {"read_file": call("read_file", path=path, start=1, end=40),
             "search": call("search", pattern="def "), "run_tests": call("run_tests")}
    times: dict[str, list[float]] = {name: [] for name in steps}
    episode = domain.start(task)
    try:
        for _ in range(n):
            for name, completion in steps.items():
                start = time.perf_counter()
                episode.step(completion)
                times[name].append(time.perf_counter() - start)
            episode.turn = 0  # the episode's turn budget is not what is measured
    finally:
        episode.close()
    return {name: summary(t) for name, t in times.items()}


def grading_figures(reg: Registry, n: int) -> dict[str, Any]:
    """Grading a reference patch per level and per real project, over ``n`` distinct tasks."""
    ids = {f"syn-{lv}": f"swe/syn-fix-test-{lv}-v1" for lv in LEVELS}
    ids |= {f"real-{p}": f"swe/real-{p}-fix-test-v1" for p in REAL}
    out = {}
    for name, domain_id in ids.items():
        domain = reg.get(domain_id)
        seconds, cpu, chars = [], [], []
        for index in range(n):
            task = domain.task("test", 101, index)
            start = time.perf_counter()
            score = domain.verify(task, task.gold)
            seconds.append(time.perf_counter() - start)
            assert score.reward == 1.0, (domain_id, index, score.feedback)
            cpu.append((score.exec or {}).get("cpu_s", 0.0))
            chars.append(len(task.prompt_text()))
        out[name] = {**summary(seconds), "sandbox_cpu_s_median": statistics.median(cpu),
                     "prompt_characters_median": statistics.median(chars)}
    return out


def episode(reg: Registry, index: int, cpu: list[float], rss: list[float]) -> float:
    """One whole agent episode; appends the CPU seconds and peak RSS of its grading run to
    ``cpu`` and ``rss``."""
    domain = reg.get(AGENT)
    task = domain.task("train", 7, index)
    start = time.perf_counter()
    played = domain.start(task)
    try:
        played.step(call("read_file", path=f"{task.meta['package']}/__init__.py"))
        played.step(call("run_tests"))
        done = played.step(task.gold)
    finally:
        played.close()
    assert done.done and done.score.reward == 1.0, done.score.feedback
    cpu.append((done.score.exec or {}).get("cpu_s", 0.0))
    rss.append((done.score.exec or {}).get("max_rss_mb", 0.0))
    return time.perf_counter() - start


def concurrency_figures(reg: Registry, levels: list[int], per: int) -> dict[str, Any]:
    """Episodes played by ``c`` threads at once, for each ``c`` in ``levels``."""
    out, counter = {}, iter(range(10**6))
    lock = threading.Lock()

    def next_index() -> int:
        with lock:
            return next(counter)

    for c in levels:
        cpu: list[float] = []
        rss: list[float] = []
        n = per * c
        own = time.process_time()
        start = time.perf_counter()
        with ThreadPoolExecutor(c) as pool:
            times = list(pool.map(lambda _: episode(reg, next_index(), cpu, rss), range(n)))
        wall = time.perf_counter() - start
        out[str(c)] = {"episodes": n, "episodes_per_s": n / wall, **summary(times),
                       "grading_cpu_s_per_episode": statistics.fmean(cpu),
                       "own_cpu_s_per_episode": (time.process_time() - own) / n,
                       "grading_peak_rss_mb_max": max(rss)}
    base = out[str(levels[0])]["episodes_per_s"]
    for row in out.values():
        row["ratio_to_c1"] = row["episodes_per_s"] / base
    return out


def memory_per_episode(reg: Registry, k: int) -> dict[str, Any]:
    """PSS of the workspace servers (and their processes) of ``k`` open episodes, after each
    ran the tests once."""
    domain = reg.get(AGENT)
    episodes = [domain.start(domain.task("train", 9, i)) for i in range(k)]
    try:
        for played in episodes:
            played.step(call("run_tests"))
        labels = {f"swe episode {p.task.id}" for p in episodes}
        pids = [r.server_pid for r in leases.records() if r.label in labels and r.server_pid]
        pss = [_tree_pss(pid) for pid in pids]
    finally:
        for played in episodes:
            played.close()
    return {"open_episodes": k, "servers_found": len(pids),
            "pss_mib_median": statistics.median(pss) if pss else None,
            "pss_mib_max": max(pss) if pss else None}


def _tree_pss(pid: int) -> float:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
        return sum(p.memory_full_info().pss for p in procs) / 2**20
    except psutil.Error:
        return 0.0


def estimate(conc: dict[str, Any], memory: dict[str, Any], cores: int,
             memory_gib: float) -> dict[str, Any]:
    """A ``cores``-core node's sustained episodes, with the arithmetic spelled out."""
    row = conc[max(conc, key=int)]
    cpu = row["grading_cpu_s_per_episode"] * 2 + row["own_cpu_s_per_episode"]  # tests twice
    pss = memory["pss_mib_median"] or 0.0
    per_s = cores / cpu
    open_by_memory = int(memory_gib * 1024 * 0.8 / pss) if pss else None
    return {"cores": cores, "memory_gib": memory_gib,
            "cpu_s_per_episode": cpu, "episodes_per_s": per_s,
            "open_episodes_by_memory": open_by_memory,
            "arithmetic": (f"{cores} cores / {cpu:.3f} CPU-s per episode (its run_tests and its "
                           f"grading, each ~{row['grading_cpu_s_per_episode']:.3f} s, plus "
                           f"{row['own_cpu_s_per_episode']:.3f} s of the driver) = "
                           f"{per_s:.0f} episodes/s; 80% of {memory_gib:g} GiB / "
                           f"{pss:.1f} MiB PSS per open episode = {open_by_memory} open "
                           "episodes (an agent waiting on its model holds memory, not CPU)")}


def table(r: dict[str, Any]) -> list[Row]:
    """The rows BENCHMARKS.md shows: each figure against its same-run baseline."""
    ws, steps, conc = r["workspace"], r["tool_step"], r["concurrency"]
    rows: list[Row] = [
        (f"workspace open, level-m repository ({ws['files']} files)",
         f"p50 {ws['open']['median_ms']:.1f} ms, p99 {ws['open']['p99_ms']:.1f} ms",
         f"reset: p50 {ws['reset']['median_ms']:.1f} ms, p99 {ws['reset']['p99_ms']:.1f} ms")]
    rows += [(f"tool step `{name}`", f"p50 {t['median_ms']:.1f} ms, p99 {t['p99_ms']:.1f} ms",
              "") for name, t in steps.items()]
    base = r["grading"]["syn-s"]["median_ms"]
    rows += [(f"grading a reference patch, {name} ({g['prompt_characters_median']:,.0f}-char "
              "prompt)", f"{g['median_ms']:.0f} ms, {g['sandbox_cpu_s_median']:.2f} CPU-s",
              f"{g['median_ms'] / base:.1f}× level s") for name, g in r["grading"].items()]
    one = conc[min(conc, key=int)]
    rows += [(f"whole agent episodes, {c} at once", f"{row['episodes_per_s']:.2f} episodes/s, "
              f"p50 {row['median_ms']:.0f} ms", f"{row['ratio_to_c1']:.2f}× of 1 at once "
              f"({one['episodes_per_s']:.2f}/s)") for c, row in conc.items()]
    mem, est = r["memory"], r["node_estimate"]
    rows.append(("memory per open episode (PSS of its workspace server)",
                 f"{mem['pss_mib_median']:.1f} MiB", f"{mem['open_episodes']} episodes open"))
    rows.append((f"estimate for a {est['cores']}-core node",
                 f"{est['episodes_per_s']:.0f} episodes/s", est["arithmetic"]))
    return rows


NOTE = ("Local workspace backend on a shared 2-core machine (other engineers' jobs running): "
        "the ratios against the same run's baselines are what to compare. An episode here is "
        "read a file, run the visible tests, submit the reference patch.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=30, help="repetitions of open/reset, tool steps")
    parser.add_argument("--tasks", type=int, default=3, help="distinct tasks graded per level")
    parser.add_argument("--concurrency", default="1,2,4", help="threads playing episodes")
    parser.add_argument("--per", type=int, default=3, help="episodes per thread")
    parser.add_argument("--open", type=int, default=8, help="open episodes for memory")
    parser.add_argument("--node-cores", type=int, default=64)
    parser.add_argument("--node-memory-gib", type=float, default=256.0)
    args = parser.parse_args()
    reg = registry()
    try:
        result: dict[str, Any] = {"bench": "swe", "backend": "local"}
        result["workspace"] = workspace_figures(reg, args.n)
        result["tool_step"] = tool_figures(reg, max(3, args.n // 3))
        result["grading"] = grading_figures(reg, args.tasks)
        levels = [int(c) for c in args.concurrency.split(",")]
        result["concurrency"] = concurrency_figures(reg, levels, args.per)
        result["memory"] = memory_per_episode(reg, args.open)
        result["node_estimate"] = estimate(result["concurrency"], result["memory"],
                                           args.node_cores, args.node_memory_gib)
    finally:
        reg.services.close()
    emit(result, table(result), NOTE)


if __name__ == "__main__":
    main()
