"""OpenRLHF-style load on `rlhub serve`, against the same verifiers called in-process.

The server runs as a child process on 127.0.0.1. Like OpenRLHF 0.11.2's reward client, every
request carries one sample and opens a new connection (a new ``aiohttp.ClientSession``), with
``--concurrency`` requests in flight. The items alternate math and code domains, gold and wrong
completions. The in-process baseline verifies the same items with ``Domain.verify`` on a thread
pool of the server's size at the same concurrency, in the same run. Prints JSON: req/s, p50/p99
latency, failures (transport errors, non-200 answers, error-flagged rewards, or a reward that
differs from the in-process one; must be 0), and ``ratio`` = server req/s / in-process req/s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _util import Row, emit, ratio, summary
from rlhub import registry
from rlhub.hub.openrlhf.export import label_of
from rlhub.hub.server.process import ServerProcess

DOMAINS = ("math/arithmetic-l1-v1", "code/py-count-v2", "math/fractions-l1-v1", "code/py-roman-v2")
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


async def over_http(url: str, work: list[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    """``work`` posted to ``url``, one sample and one new connection per request."""
    import aiohttp

    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    rewards: list[float | None] = [None] * len(work)
    problems: list[str] = []
    timeout = aiohttp.ClientTimeout(total=180)

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
    await asyncio.gather(*(one(i, it) for i, it in enumerate(work)))
    wall = time.perf_counter() - started
    stats = summary(latencies or [float("nan")])
    return {"req_s": len(work) / wall, "wall_s": wall, "rewards": rewards, "problems": problems,
            "p50_ms": stats["median_ms"], "p99_ms": stats["p99_ms"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=6000, help="requests (at least 5000 to count)")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--workers", type=int, default=8, help="server and baseline threads")
    parser.add_argument("--distinct", type=int, default=64, help="distinct tasks per domain")
    args = parser.parse_args()
    work = items(args.n, args.distinct)
    warm = items(4 * len(DOMAINS), 4)
    with tempfile.TemporaryDirectory(prefix="rlhub-bench-home-") as home, \
            ServerProcess(["--workers", str(args.workers)], env={"RLHUB_HOME": home}) as server:
        url = server.url + "/get_reward"
        asyncio.run(over_http(url, warm, 16))
        http = asyncio.run(over_http(url, work, args.concurrency))
    asyncio.run(in_process(warm, args.workers, 16))
    local = asyncio.run(in_process(work, args.workers, args.concurrency))
    mismatched = sum(1 for a, b in zip(http["rewards"], local["rewards"]) if a != b)
    failures = len(http["problems"]) + mismatched
    result = {
        "bench": "server", "requests": args.n, "concurrency": args.concurrency,
        "workers": args.workers, "cpus": os.cpu_count(), "domains": list(DOMAINS),
        "new_connection_per_request": True,
        "server": {"req_s": http["req_s"], "p50_ms": http["p50_ms"], "p99_ms": http["p99_ms"],
                   "wall_s": http["wall_s"], "failures": failures,
                   "reward_mismatches": mismatched, "first_problems": http["problems"][:5]},
        "in_process": {"req_s": local["req_s"], "wall_s": local["wall_s"]},
        "ratio": http["req_s"] / local["req_s"], "target_ratio": 0.5,
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
             + ratio(r["ratio"], r["target_ratio"]))]


if __name__ == "__main__":
    main()
