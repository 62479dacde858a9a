"""OpenRLHF-style load on `rlhub serve`, against the same verifiers called in-process.

The server runs as a child process on 127.0.0.1. Like OpenRLHF 0.11.2's reward client, every
request carries one sample and opens a new connection (a new ``aiohttp.ClientSession``), with
``--concurrency`` requests in flight. The items alternate math and code domains, gold and wrong
completions. The in-process baseline verifies the same items with ``Domain.verify`` on a thread
pool of the server's size at the same concurrency, in the same run. The two alternate in
``--rounds`` rounds over slices of the items (in process then over HTTP, then the other way
round), so a load on the machine that comes and goes weighs on both alike. Prints JSON: req/s,
p50/p99 latency, failures (transport errors, non-200 answers, error-flagged rewards, or a reward
that differs from the in-process one; must be 0), and ``ratio`` = server req/s / in-process req/s
over all rounds.

``many`` is a second run with ``--many`` clients at once (2,000 by default; every one a new
connection from 127.0.0.1, so the server's file limit, listen backlog and per-address cap must
hold them), bounded in requests (``--many-requests``) and in time (``--many-deadline``): it
must also end with 0 failures, and quotes its p50/p99 latency.

``limits`` quotes what the server's protections cost per request, measured on the same machine:
reading a body under its deadline (``asyncio.timeout``) against reading it without one, and
counting a connection against its address's cap (admit and release).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
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

    started = time.perf_counter()
    try:
        async with asyncio.timeout(deadline_s):
            await asyncio.gather(*(one(i, it) for i, it in enumerate(work)))
    except TimeoutError:
        problems.append(f"{rewards.count(None)} requests unanswered after {deadline_s:g} s")
    wall = time.perf_counter() - started
    return {"wall_s": wall, "rewards": rewards, "problems": problems, "latencies": latencies}


def joined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs over consecutive slices of the items as one run: rewards in order, walls summed."""
    wall = sum(r["wall_s"] for r in runs)
    rewards = [x for r in runs for x in r["rewards"]]
    return {"wall_s": wall, "req_s": len(rewards) / wall, "rewards": rewards,
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
            "failures": len(http["problems"]) + mismatched, "reward_mismatches": mismatched,
            "first_problems": http["problems"][:5]}


def rounds(url: str, work: list[dict[str, Any]], count: int, workers: int, concurrency: int
           ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(over HTTP, in process)`` on ``count`` consecutive slices of ``work``, alternating."""
    size = -(-len(work) // count)
    http, local = [], []
    for k in range(count):
        part = work[k * size:(k + 1) * size]
        order = [("local", in_process(part, workers, concurrency)),
                 ("http", over_http(url, part, concurrency))]
        for kind, run in order if k % 2 == 0 else order[::-1]:
            (local if kind == "local" else http).append(asyncio.run(run))
    return joined(http), joined(local)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=6000, help="requests (at least 5000 to count)")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--workers", type=int, default=8, help="server and baseline threads")
    parser.add_argument("--distinct", type=int, default=64, help="distinct tasks per domain")
    parser.add_argument("--rounds", type=int, default=4, help="alternations of the two runs")
    parser.add_argument("--many", type=int, default=2000, help="clients at once, second run")
    parser.add_argument("--many-requests", type=int, default=4000,
                        help="second run's requests (the first ones of -n)")
    parser.add_argument("--many-deadline", type=float, default=600.0,
                        help="seconds the second run may take")
    args = parser.parse_args()
    client_files(args.many + 256)
    work = items(args.n, args.distinct)
    many = work[:args.many_requests]
    warm = items(4 * len(DOMAINS), 4)
    asyncio.run(in_process(warm, args.workers, 16))
    with tempfile.TemporaryDirectory(prefix="rlhub-bench-home-") as home, \
            ServerProcess(["--workers", str(args.workers)], env={"RLHUB_HOME": home}) as server:
        url = server.url + "/get_reward"
        asyncio.run(over_http(url, warm, 16))
        http, local = rounds(url, work, args.rounds, args.workers, args.concurrency)
        crowd = asyncio.run(over_http(url, many, args.many, args.many_deadline))
    result = {
        "bench": "server", "requests": args.n, "concurrency": args.concurrency,
        "workers": args.workers, "cpus": os.cpu_count(), "domains": list(DOMAINS),
        "new_connection_per_request": True, "rounds": args.rounds,
        "server": checked(http, local["rewards"]),
        "in_process": {"req_s": local["req_s"], "wall_s": local["wall_s"]},
        "ratio": http["req_s"] / local["req_s"], "target_ratio": 0.85,
        "many": {"concurrency": args.many, "deadline_s": args.many_deadline,
                 **checked(crowd, local["rewards"])},
        "limits": limits_cost(),
        "pass_rate": sum(r == 1.0 for r in local["rewards"]) / len(work),
    }
    emit(result, table(result))


def table(r: dict[str, Any]) -> list[Row]:
    s = r["server"]
    return [(f"`rlhub serve` /get_reward over HTTP, {r['requests']} requests at concurrency "
             f"{r['concurrency']}, {r['workers']} workers, a new connection per request",
             f"{s['req_s']:.0f} req/s, p50 {s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms, "
             f"{s['failures']} failures",
             f"the same verifications in process: {r['in_process']['req_s']:.0f} req/s; "
             + ratio(r["ratio"], r["target_ratio"])),
            (f"the same server with {r['many']['concurrency']} clients at once "
             f"({r['many']['requests']} requests, a new connection each)",
             f"{r['many']['req_s']:.0f} req/s, p50 {r['many']['p50_ms']:.0f} ms, "
             f"p99 {r['many']['p99_ms']:.0f} ms, {r['many']['failures']} failures",
             f"0 failures within {r['many']['deadline_s']:g} s"),
            ("reading a request body under its deadline, per request",
             f"{r['limits']['deadline_cost_us']:+.1f} us "
             f"({r['limits']['body_read_with_deadline_us']:.1f} us per read)",
             f"the same read without a deadline: {r['limits']['body_read_us']:.1f} us"),
            ("counting a connection against its address's cap (admit and release)",
             f"{r['limits']['connection_cap_us']:.2f} us", "none: an absolute cost")]


if __name__ == "__main__":
    main()
