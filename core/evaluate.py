"""``rlhub eval`` and ``rlhub reverify``: roll a policy out over a mixture, store, score, recheck.

:func:`run_eval` samples ``n`` tasks from every domain the mixture selects (``split``, ``seed``),
rolls each out ``k`` times through :mod:`rlhub.rollout`, commits trajectories to the run's
:class:`~rlhub.store.TrajectoryStore` every ``flush_every`` results, logs them to TensorBoard via
:class:`~rlhub.monitor.Monitor`, and writes ``metrics.json`` (:func:`compute_metrics`). With
``resume`` it skips every (task, sample) already committed, so a killed run neither loses nor
duplicates a committed trajectory. For eval, a mixture only selects domains; every selected
domain gets ``n`` tasks whatever its weight. Pass rates and rewards are taken over the model's own
outcomes only; faults of rlhub (:mod:`rlhub.failures`) are counted on their own.

:func:`reverify` replays every stored trajectory's completions through a fresh episode and reports
each reward or component that differs from what was stored.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rlhub.episodes import EpisodeDriver
from rlhub.errors import RlhubError, StoreError
from rlhub.failures import is_trainable
from rlhub.rollout import RolloutJob, Trajectory, replay, run_rollouts
from rlhub.store import SCHEMA_VERSION, TrajectoryStore, stored_score, trajectory_provenance
from rlhub.task import Task

if TYPE_CHECKING:
    from rlhub.plugins import Registry

TOLERANCE = 1e-9


@dataclass
class EvalConfig:
    """Everything ``rlhub eval`` takes; the ``signature`` fields must match on ``--resume``."""

    mixture: str | dict[str, Any]
    policy: str
    out: str
    n: int = 8
    k: int = 1
    split: str = "test"
    seed: int = 0
    concurrency: int = 32
    temperature: float | None = None
    max_tokens: int | None = None
    resume: bool = False
    flush_every: int = 16
    policy_options: dict[str, Any] = field(default_factory=dict)
    tensorboard: bool = True
    storage_options: dict[str, Any] = field(default_factory=dict)
    locked: str | None = None  # the lock file (`rlhub lock`) the caller checked the run against
    lock_hash: str | None = None  # its hash, which every trajectory carries

    def sampling(self) -> dict[str, Any]:
        values = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        return {key: v for key, v in values.items() if v is not None}


class Progress:
    """What :func:`run_eval` reports as it goes; the CLI draws rich progress bars from it."""

    def start(self, totals: dict[str, tuple[int, int]]) -> None:
        """``totals[domain] = (rollouts in all, rollouts already committed)``."""

    def advance(self, traj: Trajectory) -> None:
        """One more rollout finished."""


# -- running ---------------------------------------------------------------------------------


def _signature(cfg: EvalConfig, domains: list[str]) -> dict[str, Any]:
    return {"domains": domains, "policy": cfg.policy, "n": cfg.n, "k": cfg.k,
            "split": cfg.split, "seed": cfg.seed}


def _prepare_run(cfg: EvalConfig, store: TrajectoryStore, domains: list[str]) -> str:
    """Check ``--resume`` against the stored run and (re)write ``run.json``; returns the run id."""
    existing = store.read_json("run.json")
    signature = _signature(cfg, domains)
    if existing and not cfg.resume:
        raise RlhubError(f"{store.url} already holds a run; pass --resume to continue it, or "
                         "choose another --out")
    if existing and existing.get("signature") != signature:
        raise RlhubError(f"--resume: {store.url} was started with {existing.get('signature')}, "
                         f"found {signature}; use the same options or another --out")
    run_id = existing["run_id"] if existing else uuid.uuid4().hex
    from rlhub import __version__

    store.write_json("run.json", {"run_id": run_id, "signature": signature,
                                  "config": asdict(cfg), "rlhub_version": __version__,
                                  "schema_version": SCHEMA_VERSION,
                                  "created": existing.get("created") if existing else time.time()})
    return run_id


def _jobs(cfg: EvalConfig, registry: Registry, domains: list[str], run_id: str, policy_info: Any,
          done: set[str], lock_hash: str | None) -> tuple[list[RolloutJob], dict[str, tuple[int, int]]]:
    jobs: list[RolloutJob] = []
    totals: dict[str, tuple[int, int]] = {}
    for domain_id in domains:
        domain = registry.get(domain_id)
        splits = domain.manifest.data["splits"]
        split = cfg.split if cfg.split in splits else splits[-1]
        prov = {**trajectory_provenance(registry, domain), "policy": cfg.policy, "seed": cfg.seed,
                "split": split, "run_id": run_id, "policy_info": policy_info,
                "lock_hash": lock_hash}
        todo = [RolloutJob(domain, task, s, prov) for task in domain.sample(cfg.n, split=split,
                                                                            seed=cfg.seed)
                for s in range(cfg.k)]
        fresh = [j for j in todo if j.key not in done]
        totals[domain_id] = (len(todo), len(todo) - len(fresh))
        jobs += fresh
    return jobs, totals


class _Writer:
    """Buffers finished trajectories and commits them every ``flush_every`` (one at a time)."""

    def __init__(self, store: TrajectoryStore, flush_every: int, monitor: Any, progress: Progress):
        self.store, self.flush_every = store, max(1, flush_every)
        self.monitor, self.progress = monitor, progress
        self.buffer: list[Trajectory] = []
        self.errors: list[str] = []
        self.committed = 0
        self._failures = 0
        self._lock = asyncio.Lock()

    async def add(self, traj: Trajectory) -> None:
        self.buffer.append(traj)
        if self.monitor is not None:
            self.monitor.observe(traj)
        self.progress.advance(traj)
        due = self.flush_every * (1 + self._failures)  # back off while the store fails
        if len(self.buffer) >= due and not self._lock.locked():
            await self.flush()

    async def flush(self) -> None:
        async with self._lock:
            batch = list(self.buffer)
            if not batch:
                return
            try:
                await asyncio.to_thread(self.store.write, batch)
            except StoreError as exc:
                self.errors.append(str(exc))
                self._failures += 1
                return
            self._failures = 0
            del self.buffer[: len(batch)]
            self.committed += len(batch)
            if self.monitor is not None:
                self.monitor.flush()


def run_eval(cfg: EvalConfig, *, registry: Registry, progress: Progress | None = None,
             policy: Any = None, mixed: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run (or resume) an eval; returns the metrics also written to ``metrics.json``.

    ``mixed`` is ``cfg.mixture`` as :func:`rlhub.mixture.load_mixture` returns it, when the
    caller has read it already (the mixture is read once per command); else it is read here.
    Raises :class:`StoreError` after the run when some trajectories could not be committed.
    """
    from rlhub.judges import judges_of
    from rlhub.mixture import load_mixture
    from rlhub.policy import make_policy, policy_info

    progress = progress or Progress()
    store = TrajectoryStore(cfg.out, cfg.storage_options)
    store.check_writable()
    mixed = mixed if mixed is not None else load_mixture(cfg.mixture, registry)
    domains = sorted(mixed["domains"])
    origin = None if isinstance(cfg.mixture, dict) else cfg.mixture
    registry.services.use_judges(judges_of(mixed, registry, origin=origin))
    run_id = _prepare_run(cfg, store, domains)
    store.clean_temp()
    done = store.job_keys() if cfg.resume else set()
    options = {**cfg.policy_options, **cfg.sampling()}
    policy = policy if policy is not None else make_policy(cfg.policy, options, registry=registry)
    jobs, totals = _jobs(cfg, registry, domains, run_id, policy_info(policy), done,
                         cfg.lock_hash)
    progress.start(totals)
    monitor = _monitor(cfg, store)
    writer = _Writer(store, cfg.flush_every, monitor, progress)
    asyncio.run(_run_all(policy, jobs, cfg, writer))
    if monitor is not None:
        monitor.close()
    if writer.buffer:
        raise StoreError(f"{len(writer.buffer)} trajectories could not be committed "
                         f"({writer.committed} were): {writer.errors[-1]}")
    metrics = compute_metrics(store.rows(), cfg.k)
    metrics["run"] = {"run_id": run_id, **_signature(cfg, domains), "out": cfg.out}
    store.write_json("metrics.json", metrics)
    return metrics


async def _run_all(policy: Any, jobs: list[RolloutJob], cfg: EvalConfig, writer: _Writer) -> None:
    try:
        await run_rollouts(policy, jobs, sampling=cfg.sampling(), concurrency=cfg.concurrency,
                           on_result=writer.add)
        await writer.flush()
    finally:
        close = getattr(policy, "aclose", None)
        if close is not None:
            await close()


def _monitor(cfg: EvalConfig, store: TrajectoryStore) -> Any:
    if not (cfg.tensorboard and store.local):
        return None
    from rlhub.monitor import Monitor

    return Monitor(store.path("tb"))


# -- metrics ---------------------------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate from ``n`` samples of which ``c`` passed (Chen et al. 2021)."""
    if n <= 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _std(xs: list[float]) -> float:
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs)) if xs else 0.0


def _quantile(xs: list[float], q: float) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def domain_metrics(rows: list[dict[str, Any]], k: int) -> dict[str, Any]:
    """pass@1, pass@k, first-try pass@1, repair gain, pass by attempt, reward, status, latency.

    Outcome metrics (pass rates, rewards) count only trainable trajectories, the model's own
    outcomes: a sandbox, verifier, judge, label or policy fault says nothing about the model and
    is counted on its own (``infra_failures``, and by class in ``failure_counts``). A task with
    no trainable sample is left out of pass@k; pass@k of a task with fewer than k trainable
    samples is taken over the samples it has.
    """
    scored = [r for r in rows if is_trainable(r["failure"])]
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in scored:
        by_task.setdefault(r["task_id"], []).append(r)
    p1 = [pass_at_k(len(s), sum(bool(r["passed"]) for r in s), 1) for s in by_task.values()]
    pk = [pass_at_k(len(s), sum(bool(r["passed"]) for r in s), k) for s in by_task.values()]
    first = [_mean([float(r["first_pass_attempt"] == 0) for r in s]) for s in by_task.values()]
    max_attempts = max((sum(bool(t["attempt"]) for t in r["turns"]) for r in scored), default=1)
    by_attempt = [_mean([float(r["first_pass_attempt"] is not None and
                               r["first_pass_attempt"] <= a and bool(r["passed"])) for r in scored])
                  for a in range(max(1, max_attempts))]
    rewards = [float(r["reward"]) for r in scored]
    failures = _count(r["failure"] for r in rows)
    return {
        "n_tasks": len({r["task_id"] for r in rows}), "n_samples": len(rows),
        "n_scored": len(scored), "infra_failures": len(rows) - len(scored),
        "failure_counts": failures, "k": k,
        "pass@1": _mean(p1), f"pass@{k}": _mean(pk), "pass@k": _mean(pk),
        "first_try_pass@1": _mean(first), "repair_gain": _mean(p1) - _mean(first),
        "pass_by_attempt": by_attempt, "reward_mean": _mean(rewards), "reward_std": _std(rewards),
        "turns_mean": _mean([float(r["n_turns"]) for r in rows]),
        "status_counts": _count(r["status"] for r in rows),
        "exec_status_counts": _count(t["exec_status"] for r in rows for t in r["turns"]
                                     if t.get("exec_status")),
        "latency_s": _latency(rows, [t for r in rows for t in r["turns"]]),
    }


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return out


def _latency(rows: list[dict[str, Any]], turns: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, xs in (("generate", [float(t["gen_s"] or 0) for t in turns]),
                     ("verify", [float(t["verify_s"] or 0) for t in turns]),
                     ("trajectory", [float(r["wall_s"] or 0) for r in rows])):
        out[name] = {"mean": _mean(xs), "p50": _quantile(xs, 0.5), "p95": _quantile(xs, 0.95)}
    return out


def compute_metrics(rows: list[dict[str, Any]], k: int) -> dict[str, Any]:
    """Per-domain metrics plus their macro average over the domains with a trainable outcome."""
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_domain.setdefault(r["domain"], []).append(r)
    domains = {d: domain_metrics(rs, k) for d, rs in sorted(by_domain.items())}
    keys = ("pass@1", "pass@k", "first_try_pass@1", "repair_gain", "reward_mean")
    measured = [m for m in domains.values() if m["n_scored"]]  # a domain of faults only has none
    overall = {key: _mean([m[key] for m in measured]) for key in keys}
    overall.update(n_domains=len(domains), n_samples=len(rows), k=k,
                   n_scored=sum(m["n_scored"] for m in domains.values()),
                   infra_failures=sum(m["infra_failures"] for m in domains.values()),
                   unique_trajectories=len({r["trajectory_id"] for r in rows}))
    return {"schema_version": SCHEMA_VERSION, "domains": domains, "overall": overall}


# -- reverify --------------------------------------------------------------------------------


def reverify(url: str, *, registry: Registry,
             on_row: Callable[[dict[str, Any]], None] | None = None,
             storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Recompute every stored reward; ``{"checked": N, "mismatches": [...]}``."""
    mismatches: list[dict[str, Any]] = []
    rows = TrajectoryStore(url, storage_options).rows()
    for row in rows:
        mismatches += _recheck(row, registry)
        if on_row is not None:
            on_row(row)
    return {"checked": len(rows), "mismatches": mismatches}


def _recheck(row: dict[str, Any], registry: Registry) -> list[dict[str, Any]]:
    where = {"trajectory_id": row["trajectory_id"], "domain": row["domain"]}
    try:
        domain = registry.get(row["domain"])
        task = Task.from_dict(row["task"])
        scored = [t for t in row["turns"] if t["completion"] is not None and t["status"] == "ok"]
        results = replay(domain, task, [t["completion"] for t in scored])
    except Exception as exc:  # noqa: BLE001 - a row that cannot be replayed is a mismatch
        return [{**where, "field": "replay", "stored": None,
                 "recomputed": f"{type(exc).__name__}: {exc}"}]
    found = []
    for turn, result in zip(scored, results):
        found += _compare_turn(where, turn, result)
    if len(results) < len(scored):
        found.append({**where, "field": "turns", "stored": len(scored),
                      "recomputed": len(results)})
    found += _compare_final(where, row, domain, scored, results)
    return found


def _compare_turn(where: dict[str, Any], turn: dict[str, Any], result: Any) -> list[dict]:
    out = []
    score, kept = result.score, stored_score(turn)
    if abs(float(score.reward) - float(kept.reward)) > TOLERANCE:
        out.append({**where, "turn": turn["index"], "field": "reward", "stored": kept.reward,
                    "recomputed": score.reward})
    for name, value in score.components.items():
        stored = kept.components.get(name)
        if stored is None or abs(float(value) - float(stored)) > TOLERANCE:
            out.append({**where, "turn": turn["index"], "field": f"components.{name}",
                        "stored": stored, "recomputed": value})
    return out


def _compare_final(where: dict[str, Any], row: dict[str, Any], domain: Any,
                   scored: list[dict[str, Any]], results: list[Any]) -> list[dict]:
    driver = EpisodeDriver(domain, Task.from_dict(row["task"]))
    for stored, result in zip(scored, results):
        driver.record(driver.turn(stored["completion"]), result)
    reward = driver.value()
    if abs(reward - float(row["reward"])) > TOLERANCE:
        return [{**where, "field": "reward", "stored": row["reward"], "recomputed": reward}]
    return []
