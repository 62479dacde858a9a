"""OpenRLHF-style load on `rlhub serve`, against the same verifiers called in-process.

Two subjects verify the same items, each in a child process of its own started the same way: the
server (``rlhub serve`` on 127.0.0.1) and the in-process baseline (``Domain.verify`` on a thread
pool of the server's size, at the same concurrency). This process is the load generator: like
OpenRLHF 0.11.2's reward client, every request carries one sample and opens a new connection (a
new ``aiohttp.ClientSession``), with ``--concurrency`` requests in flight. The items alternate math
and code domains, gold and wrong completions. The two subjects alternate in ``--rounds`` rounds
over slices of the items (in process then over HTTP, then the other way round), so a load on the
machine that comes and goes weighs on both alike.

In training, the reward client runs in OpenRLHF's vLLM engines, on the GPU nodes, not on the
machine that verifies. So the load generator gets ``--client-cpus`` CPUs of its own (a quarter,
at least one) and both subjects the others (their sandbox jobs inherit that; the bench checks
the subjects' affinity), and ``ratio`` = server req/s / in-process req/s over all rounds compares
what the two make of the same CPUs: throughput per verification CPU. ``colocated`` repeats the
comparison with every process on every CPU, where the load generator's own CPU (``client_cpu_ms``
a request) is taken from the server's: it is quoted, without a target. On a one-CPU machine
every process shares it, and there is no second comparison.

``many`` is a second run with ``--many`` clients at once (2,000 by default; every one a new
connection from 127.0.0.1, so the server's file limit, listen backlog and per-address cap must
hold them), bounded in requests (``--many-requests``) and in time (``--many-deadline``): it
must also end with 0 failures, and quotes its p50/p99 latency.

``limits`` quotes what the server's protections cost per request, measured on the same machine:
reading a body under its deadline (``asyncio.timeout``) against reading it without one, and
counting a connection against its address's cap (admit and release).

Prints JSON: req/s, p50/p99 latency, failures (transport errors, non-200 answers, error-flagged
rewards, or a reward that differs from the in-process one; must be 0), and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _util import Row, emit, ratio, summary
from rlhub import registry
from rlhub.integrations.openrlhf.export import label_of
from rlhub.integrations.server.process import ServerProcess

DOMAINS = ("math/arithmetic-l1-v2", "code/py-count-v2", "math/fractions-l1-v2", "code/py-roman-v2")
PROMPT = "<|im_start|>user\nsolve<|im_end|>\n<|im_start|>assistant\n"
WRONG = {"math": "The answer is \\boxed{-7}.", "code": "```python\ndef f():\n    return 0\n```"}


def items(n: int, distinct: int) -> list[dict[str, Any]]:
    """``n`` reward requests cycling over DOMAINS, gold and wrong answers alternating."""
    tasks = {d: registry().get(d).sample(distinct, seed=11) for d in DOMAINS}
    out = []
    for i in range(n):
        domain = DOMAINS[i % len(DOMAINS)]
        task = tasks[domain][(i // len(DOMAINS)) % distinct]
        completion = task.gold if (i // len(DOMAINS)) % 2 == 0 else WRONG[domain.split("/")[0]]
        out.append({"domain": domain, "task": task, "completion": completion,
                    "body": {"query": [PROMPT + completion + "<|im_end|>"], "prompts": [PROMPT],
                             "labels": [label_of(task)]}})
    return out


async def in_process(work: list[dict[str, Any]], workers: int, concurrency: int) -> dict[str, Any]:
    """The same verifications via ``Domain.verify`` on ``workers`` threads."""
    loop = asyncio.get_running_loop()
    gate = asyncio.Semaphore(concurrency)
    rewards: list[float] = [0.0] * len(work)
    with ThreadPoolExecutor(workers) as pool:
        async def one(i: int, item: dict[str, Any]) -> None:
            async with gate:
                domain = registry().get(item["domain"])
                score = await loop.run_in_executor(pool, domain.verify, item["task"],
                                                   item["completion"])
                rewards[i] = score.reward

        started = time.perf_counter()
        await asyncio.gather(*(one(i, it) for i, it in enumerate(work)))
        wall = time.perf_counter() - started
    return {"req_s": len(work) / wall, "wall_s": wall, "rewards": rewards}


async def over_http(url: str, work: list[dict[str, Any]], concurrency: int,
                    deadline_s: float = 600.0) -> dict[str, Any]:
    """``work`` posted to ``url``, one sample and one new connection per request; what has not
    been answered within ``deadline_s`` counts as failed."""
    import aiohttp

    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    rewards: list[float | None] = [None] * len(work)
    problems: list[str] = []
    timeout = aiohttp.ClientTimeout(total=deadline_s)

    async def one(i: int, item: dict[str, Any]) -> None:
        async with gate:
            started = time.perf_counter()
            try:
                async with aiohttp.ClientSession(timeout=timeout) as s, \
                        s.post(url, json=item["body"]) as resp:
                    resp.raise_for_status()
                    body = await resp.json()
            except Exception as exc:  # noqa: BLE001 - counted as a failure
                problems.append(f"{type(exc).__name__}: {exc}")
                return
            latencies.append(time.perf_counter() - started)
            if body["extra_logs"]["error"][0]:
                problems.append(f"error-flagged reward for {item['domain']}")
            rewards[i] = body["rewards"][0]

    started, cpu = time.perf_counter(), time.process_time()
    try:
        async with asyncio.timeout(deadline_s):
            await asyncio.gather(*(one(i, it) for i, it in enumerate(work)))
    except TimeoutError:
        problems.append(f"{rewards.count(None)} requests unanswered after {deadline_s:g} s")
    wall = time.perf_counter() - started
    return {"wall_s": wall, "rewards": rewards, "problems": problems, "latencies": latencies,
            "client_cpu_s": time.process_time() - cpu}


def joined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs over consecutive slices of the items as one run: rewards in order, walls summed."""
    wall = sum(r["wall_s"] for r in runs)
    rewards = [x for r in runs for x in r["rewards"]]
    return {"wall_s": wall, "req_s": len(rewards) / wall, "rewards": rewards,
            "client_cpu_s": sum(r.get("client_cpu_s", 0.0) for r in runs),
            "problems": [p for r in runs for p in r.get("problems", [])],
            "latencies": [x for r in runs for x in r.get("latencies", [])]}


class _Request:
    """What :func:`read_raw` reads of a request: its headers and a one-chunk body stream."""

    def __init__(self, body: bytes):
        self.headers = {"content-length": str(len(body))}
        self.body = body

    async def stream(self) -> Any:
        yield self.body


class _Transport:
    """What the connection cap reads of a transport: its peer and whether it is closing."""

    def __init__(self, host: str):
        self.peer = (host, 40000)

    def get_extra_info(self, name: str) -> Any:
        return self.peer

    def is_closing(self) -> bool:
        return False


def limits_cost(n: int = 20000) -> dict[str, float]:
    """Microseconds per request of the body deadline and of the per-address connection cap."""
    from rlhub.integrations.server.connections import ConnectionLimits
    from rlhub.integrations.server.guard import read_raw

    body = b'{"query": ["x"], "prompts": [""], "labels": ["{}"]}' * 20

    async def reads(deadline: float | None) -> float:
        started = time.perf_counter()
        for _ in range(n):
            await read_raw(_Request(body), 16 << 20, deadline)
        return (time.perf_counter() - started) / n * 1e6

    plain = min(asyncio.run(reads(None)) for _ in range(3))
    timed = min(asyncio.run(reads(30.0)) for _ in range(3))
    cap = ConnectionLimits(1024, 10.0)
    held = [_Transport("10.0.0.1") for _ in range(64)]  # a busy client's open connections
    for t in held:
        cap.admit(t)
    started = time.perf_counter()
    for _ in range(n):
        t = _Transport("10.0.0.1")
        cap.admit(t)
        cap.release(t)
    admit = (time.perf_counter() - started) / n * 1e6
    return {"body_read_us": plain, "body_read_with_deadline_us": timed,
            "deadline_cost_us": timed - plain, "connection_cap_us": admit}


def client_files(wanted: int) -> None:
    """Let this (client) process open ``wanted`` files: one per concurrent connection."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def checked(http: dict[str, Any], local: list[float]) -> dict[str, Any]:
    """An HTTP run's figures, its failures counting every reward that differs from ``local``."""
    http = joined([http])
    mismatched = sum(1 for a, b in zip(http["rewards"], local) if a != b)
    stats = summary(http["latencies"] or [float("nan")])
    return {"requests": len(http["rewards"]), "req_s": http["req_s"],
            "p50_ms": stats["median_ms"], "p99_ms": stats["p99_ms"], "wall_s": http["wall_s"],
            "client_cpu_ms": http["client_cpu_s"] / len(http["rewards"]) * 1e3,
            "failures": len(http["problems"]) + mismatched, "reward_mismatches": mismatched,
            "first_problems": http["problems"][:5]}


class Baseline:
    """The in-process baseline in a child process of its own (``--baseline-child``): it builds
    the same items, warms its verifiers, then verifies the slices it is sent on stdin."""

    def __init__(self, args: argparse.Namespace, env: dict[str, str]):
        cmd = [sys.executable, __file__, "--baseline-child", "-n", str(args.n),
               "--distinct", str(args.distinct), "--workers", str(args.workers),
               "--concurrency", str(args.concurrency)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env={**os.environ, **env})

    def __enter__(self) -> Baseline:
        try:
            self._answer()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()

    def run(self, start: int, stop: int) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps([start, stop]) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def _answer(self) -> dict[str, Any]:
        """The child's next JSON line (a plugin may print other lines)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith('{"baseline": '):
                return json.loads(line)["baseline"]
        raise RuntimeError(f"the baseline child exited with status {self.proc.wait()}")


def baseline_child(args: argparse.Namespace) -> None:
    """``--baseline-child``: answer ``[start, stop]`` lines with :func:`in_process` runs."""
    work = items(args.n, args.distinct)
    asyncio.run(in_process(items(4 * len(DOMAINS), 4), args.workers, 16))
    print(json.dumps({"baseline": "ready"}), flush=True)
    for line in sys.stdin:
        start, stop = json.loads(line)
        run = asyncio.run(in_process(work[start:stop], args.workers, args.concurrency))
        print(json.dumps({"baseline": run}), flush=True)


def pin(cpus: set[int]) -> None:
    """Every thread of this process onto ``cpus``."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(tid), cpus)


@contextlib.contextmanager
def spawning_on(cpus: set[int]) -> Iterator[None]:
    """Child processes started inside run on ``cpus`` (a child inherits the affinity of the
    thread that starts it); this thread returns to its own CPUs after."""
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, own)


def split_cpus(every: set[int], client: int | None) -> tuple[set[int], set[int]]:
    """``(load generator's CPUs, subjects' CPUs)``: ``client`` of ``every`` CPU (default a
    quarter, at least one) and the rest; all of them for both on a one-CPU machine."""
    cpus = sorted(every)
    if len(cpus) < 2:
        return set(cpus), set(cpus)
    k = max(1, len(cpus) // 4) if client is None else client
    if not 1 <= k < len(cpus):
        raise SystemExit(f"--client-cpus: expected 1 to {len(cpus) - 1} (this process has "
                         f"{len(cpus)} CPUs), found {k}")
    return set(cpus[:k]), set(cpus[k:])


def compare(args: argparse.Namespace, work: list[dict[str, Any]], client: set[int],
            subject: set[int], rounds: int, many: list[dict[str, Any]] | None = None
            ) -> dict[str, Any]:
    """The server and the baseline, started on ``subject``, loaded from ``client``, alternating
    over ``rounds`` slices of ``work`` (and ``many`` at once against the server, when given)."""
    pin(client)
    with contextlib.ExitStack() as stack:
        homes = [stack.enter_context(tempfile.TemporaryDirectory(prefix="rlhub-bench-home-"))
                 for _ in range(2)]
        with spawning_on(subject):
            baseline = stack.enter_context(Baseline(args, {"RLHUB_HOME": homes[0]}))
            server = stack.enter_context(ServerProcess(["--workers", str(args.workers)],
                                                       env={"RLHUB_HOME": homes[1]}))
        for name, proc in (("server", server.proc), ("baseline", baseline.proc)):
            assert proc is not None
            if os.sched_getaffinity(proc.pid) != subject:
                raise RuntimeError(f"the {name} runs on CPUs {os.sched_getaffinity(proc.pid)}, "
                                   f"expected {subject}")
        url = server.url + "/get_reward"
        asyncio.run(over_http(url, items(4 * len(DOMAINS), 4), 16))
        size = -(-len(work) // rounds)
        http, local = [], []
        for k in range(rounds):
            part = slice(k * size, min(len(work), (k + 1) * size))
            order = [("local", lambda p=part: baseline.run(p.start, p.stop)),
                     ("http", lambda p=part: asyncio.run(over_http(url, work[p],
                                                                   args.concurrency)))]
            for kind, run in order if k % 2 == 0 else order[::-1]:
                (local if kind == "local" else http).append(run())
        crowd = asyncio.run(over_http(url, many, args.many, args.many_deadline)) if many \
            else None
    http_run, local_run = joined(http), joined(local)
    found = {"server": checked(http_run, local_run["rewards"]),
             "in_process": {"req_s": local_run["req_s"], "wall_s": local_run["wall_s"]},
             "ratio": http_run["req_s"] / local_run["req_s"],
             "round_ratios": [len(h["rewards"]) / h["wall_s"] / c["req_s"]
                              for h, c in zip(http, local)],
             "pass_rate": sum(r == 1.0 for r in local_run["rewards"]) / len(work)}
    if crowd is not None:
        found["many"] = {"concurrency": args.many, "deadline_s": args.many_deadline,
                         **checked(crowd, local_run["rewards"])}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=6000, help="requests (at least 5000 to count)")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--workers", type=int, default=8, help="server and baseline threads")
    parser.add_argument("--distinct", type=int, default=64, help="distinct tasks per domain")
    parser.add_argument("--rounds", type=int, default=4, help="alternations of the two runs")
    parser.add_argument("--client-cpus", type=int, default=None,
                        help="CPUs of the load generator [a quarter, at least one]")
    parser.add_argument("--many", type=int, default=2000, help="clients at once, second run")
    parser.add_argument("--many-requests", type=int, default=4000,
                        help="second run's requests (the first ones of -n)")
    parser.add_argument("--many-deadline", type=float, default=600.0,
                        help="seconds the second run may take")
    parser.add_argument("--baseline-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline_child:
        baseline_child(args)
        return
    client_files(args.many + 256)
    work = items(args.n, args.distinct)
    every = os.sched_getaffinity(0)
    client, subject = split_cpus(every, args.client_cpus)
    found = compare(args, work, client, subject, args.rounds, work[:args.many_requests])
    shared = None
    if client != subject:  # the same on every CPU, over half the items
        half = work[:len(work) // 2]
        shared = compare(args, half, every, every, 2)  # a prefix of every child's items
    result = {
        "bench": "server", "requests": args.n, "concurrency": args.concurrency,
        "workers": args.workers, "cpus": len(every), "domains": list(DOMAINS),
        "new_connection_per_request": True, "rounds": args.rounds,
        "client_cpus": sorted(client), "subject_cpus": sorted(subject),
        **found, "target_ratio": 0.85,
        "colocated": shared and {"requests": len(half), "rounds": 2,
                                 "server": shared["server"], "in_process": shared["in_process"],
                                 "ratio": shared["ratio"]},
        "limits": limits_cost(),
    }
    emit(result, table(result))


def table(r: dict[str, Any]) -> list[Row]:
    s, shared = r["server"], r["colocated"]
    where = (f"server and baseline each on CPU {_cpus(r['subject_cpus'])}, the load generator "
             f"on CPU {_cpus(r['client_cpus'])}" if shared else "every process on the one CPU")
    rows = [(f"`rlhub serve` /get_reward over HTTP, {r['requests']} requests at concurrency "
             f"{r['concurrency']}, {r['workers']} workers, a new connection per request ({where})",
             f"{s['req_s']:.0f} req/s, p50 {s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms, "
             f"{s['failures']} failures",
             f"the same verifications in process on the same CPUs: "
             f"{r['in_process']['req_s']:.0f} req/s; " + ratio(r["ratio"], r["target_ratio"])
             + " (per round: " + ", ".join(f"{x:.2f}" for x in r["round_ratios"]) + ")")]
    if shared:
        rows.append((f"the same with every process on all {r['cpus']} CPUs "
                     f"({shared['requests']} requests; the load generator, which stands for "
                     "OpenRLHF's reward client in the vLLM engines, spends "
                     f"{shared['server']['client_cpu_ms']:.2f} ms of CPU a request on them)",
                     f"{shared['server']['req_s']:.0f} req/s, {shared['server']['failures']} "
                     "failures",
                     f"in process: {shared['in_process']['req_s']:.0f} req/s; "
                     f"{shared['ratio']:.2f}× (no target)"))
    if "many" in r:
        m = r["many"]
        rows.append((f"the same server with {m['concurrency']} clients at once "
                     f"({m['requests']} requests, a new connection each)",
                     f"{m['req_s']:.0f} req/s, p50 {m['p50_ms']:.0f} ms, p99 {m['p99_ms']:.0f} "
                     f"ms, {m['failures']} failures", f"0 failures within {m['deadline_s']:g} s"))
    return rows + [
        ("reading a request body under its deadline, per request",
         f"{r['limits']['deadline_cost_us']:+.1f} us "
         f"({r['limits']['body_read_with_deadline_us']:.1f} us per read)",
         f"the same read without a deadline: {r['limits']['body_read_us']:.1f} us"),
        ("counting a connection against its address's cap (admit and release)",
         f"{r['limits']['connection_cap_us']:.2f} us", "none: an absolute cost")]


def _cpus(cpus: list[int]) -> str:
    return ", ".join(map(str, cpus))


if __name__ == "__main__":
    main()
