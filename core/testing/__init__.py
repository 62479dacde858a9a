"""The contract kit: small public checks every domain must pass, for plugin authors and CI.

Each ``check_*`` function takes a domain object and returns a list of problems (empty when it
passes); :func:`check_domain` runs them all and :func:`assert_domain_ok` raises ``AssertionError``
listing every problem. :func:`inspect_domain` returns the same problems with what each integrity
probe class found (:mod:`rlhub.testing.probes`): ``rlhub check --json`` prints it. ``rlhub check``
and the bundled pytest plugin (fixtures ``rlhub_registry`` and ``rlhub_sandbox``) use the same
functions. Problem messages are stable; tests match them exactly.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlhub.domain import Domain
from rlhub.errors import RlhubError, VerifierError
from rlhub.task import Score, Task
from rlhub.testing.probes import PROBE_CLASSES, ProbeReport

if TYPE_CHECKING:
    from rlhub.plugins import Registry

GARBAGE_SEED = 1234


def bad_inputs(task: Task) -> dict[str, str]:
    """Completions that must never earn the maximum reward, by name."""
    rng = random.Random(GARBAGE_SEED)
    # one line: a random line break could leave a last line that is, by chance, a right option
    garbage = "".join(rng.choice(string.printable.strip() + " ") for _ in range(300))
    return {
        "empty": "",
        "whitespace": " \n\t \n",
        "echoed prompt": task.prompt_text(),
        "random garbage": garbage,
        "100 kB": ("lorem ipsum dolor sit amet " * 4000)[:100_000],
        "control characters": "".join(chr(c) for c in range(32)) * 10 + "\x7f\ufffd",
    }


def sample_tasks(domain: Domain, n: int) -> list[Task]:
    """``n`` tasks for checking: train seed 0, and the held-out split when there is one."""
    splits = domain.manifest.data["splits"]
    tasks = domain.sample(n, split=splits[0], seed=0)
    if "test" in splits and splits[0] != "test":
        tasks += domain.sample(max(1, n // 2), split="test", seed=1)
    return tasks


def _timed_verify(domain: Domain, task: Task, completion: str) -> tuple[Score, float]:
    started = time.perf_counter()
    score = domain.verify(task, completion)
    return score, time.perf_counter() - started


def _range_problem(domain: Domain, score: Score, what: str) -> list[str]:
    lo, hi = domain.manifest.reward_range
    r = score.reward
    if not isinstance(r, (int, float)) or not math.isfinite(r) or not lo <= r <= hi:
        return [f"{domain.id}: reward {r!r} for {what} is outside the declared range [{lo}, {hi}]"]
    return []


def _time_problem(domain: Domain, seconds: float, what: str) -> list[str]:
    limit = float(domain.manifest.data["verify_timeout_s"])
    if seconds > limit:
        return [f"{domain.id}: verification took {seconds:.2f}s on {what} (limit {limit:g}s)"]
    return []


def check_gold(domain: Domain, tasks: Sequence[Task]) -> list[str]:
    """Gold completions score the maximum (skipped when the manifest says ``gold: false``)."""
    if not domain.manifest.data["gold"]:
        return []
    _, hi = domain.manifest.reward_range
    problems: list[str] = []
    for task in tasks:
        if task.gold is None:
            problems.append(f"{domain.id}: manifest says gold: true but task {task.id} has no "
                            "gold completion")
            break
        score, seconds = _timed_verify(domain, task, task.gold)
        what = f"the gold completion of task {task.id}"
        problems += _range_problem(domain, score, what) + _time_problem(domain, seconds, what)
        if score.error or not score.trainable:
            problems.append(f"{domain.id}: {what} failed with class {score.failure!r} "
                            f"(expected 'none'): {score.error}")
        elif score.reward < hi:
            problems.append(f"{domain.id}: {what} scored {score.reward:g} (expected the maximum "
                            f"{hi:g}); feedback: {score.feedback[:200]!r}")
        if problems:  # one failing task says enough
            break
    return problems


def check_bad_inputs(domain: Domain, tasks: Sequence[Task]) -> list[str]:
    """Empty, whitespace, echoed, garbage, huge and control-character inputs score below max
    (the minimum, when the manifest declares ``scoring: {kind: exact}``)."""
    lo, hi = domain.manifest.reward_range
    exact = domain.manifest.scoring == "exact"
    problems: list[str] = []
    for task in tasks[:2]:
        if problems:  # one failing task says enough
            break
        for name, completion in bad_inputs(task).items():
            score, seconds = _timed_verify(domain, task, completion)
            what = f"the {name} completion of task {task.id}"
            problems += _range_problem(domain, score, what) + _time_problem(domain, seconds, what)
            if score.error or not score.trainable:
                problems.append(f"{domain.id}: {what} failed with class {score.failure!r}, "
                                f"not the answer's (expected 'answer'): {score.error}")
            elif score.reward >= hi:
                problems.append(f"{domain.id}: {what} scored the maximum {hi:g} "
                                "(expected less)")
            elif exact and not score.passed and score.reward > lo:
                problems.append(f"{domain.id}: {what} scored {score.reward:g}, but the manifest "
                                f"declares exact scoring (expected the minimum {lo:g})")
    return problems


def fingerprint(tasks: Sequence[Task]) -> str:
    """A digest of tasks' JSON, to compare sampling across calls and processes."""
    blob = json.dumps([t.to_dict() for t in tasks], sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


def _fingerprint_tasks(domain: Domain) -> list[Task]:
    splits = domain.manifest.data["splits"]
    return [domain.task(split, seed, index) for split in splits for seed in (0, 7)
            for index in (0, 3)]


_CHILD_PRINTS: dict[str, str] = {}
_INFRA = "infrastructure:"  # a child's sampling failed through rlhub's fault, not the domain's


def _child_fingerprints(ids: Sequence[str], domain_files: Sequence[str]) -> dict[str, str]:
    """Fingerprints of ``ids`` computed in a fresh interpreter with a different hash seed, whose
    registry also discovers ``domain_files``."""
    missing = [i for i in ids if i not in _CHILD_PRINTS]
    if missing:
        env = {**os.environ, "PYTHONHASHSEED": str(random.Random().randrange(1, 2**31))}
        code = ("import json,sys; from rlhub.testing import _fingerprints_main; "
                "_fingerprints_main(*map(json.loads, sys.argv[1:3]), sys.argv[3])")
        files = list(domain_files)
        with tempfile.TemporaryDirectory() as tmp:
            result = os.path.join(tmp, "prints.json")
            out = subprocess.run([sys.executable, "-c", code, json.dumps(missing),
                                  json.dumps(files), result],
                                 capture_output=True, text=True, env=env, timeout=600)
            if out.returncode:
                raise RuntimeError(f"fingerprint subprocess failed: {out.stderr[-2000:]}")
            with open(result) as fh:
                _CHILD_PRINTS.update(json.load(fh))
    return {i: _CHILD_PRINTS.get(i, "") for i in ids}


def _domain_files(domain: Domain) -> list[str]:
    """The data-only domain files of the registry that built ``domain`` (none without one)."""
    try:
        registry = domain.registry
    except RlhubError:
        return []
    declared = (registry.catalog.declared(i) for i in registry.ids())
    return sorted({d.source for d in declared if d.source})


def _fingerprints_main(ids: list[str], domain_files: list[str], result: str) -> None:
    from rlhub.plugins import Registry

    reg = Registry(domain_files=domain_files)
    prints = {}
    for domain_id in ids:
        try:
            prints[domain_id] = fingerprint(_fingerprint_tasks(reg.get(domain_id)))
        except VerifierError as exc:  # rlhub's fault (a lost worker): the caller tries again
            prints[domain_id] = f"{_INFRA} {type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - reported by the caller with its text
            prints[domain_id] = f"error: {type(exc).__name__}: {exc}"
    with open(result, "w") as fh:
        json.dump(prints, fh)


def check_determinism(domain: Domain, *, across_processes: bool = True,
                      batch: Sequence[str] = ()) -> list[str]:
    """Seeded sampling gives the same tasks twice in-process and in a fresh process."""
    if domain.manifest.data["determinism"] != "seeded":
        return []
    first = fingerprint(_fingerprint_tasks(domain))
    if fingerprint(_fingerprint_tasks(domain)) != first:
        return [f"{domain.id}: sampling is not deterministic: the same (split, seed, index) gave "
                "different tasks on two calls"]
    if across_processes:
        ids = list(dict.fromkeys([domain.id, *batch]))
        other = _child_fingerprints(ids, _domain_files(domain))[domain.id]
        if other.startswith(_INFRA):  # a worker lost on a loaded machine: once more, alone
            _CHILD_PRINTS.pop(domain.id, None)
            other = _child_fingerprints([domain.id], _domain_files(domain))[domain.id]
        if other.startswith(("error:", _INFRA)):
            return [f"{domain.id}: sampling failed in a fresh interpreter, so determinism across "
                    f"processes could not be checked: {other.split(':', 1)[1].strip()}"]
        if other != first:
            return [f"{domain.id}: sampling is not deterministic across processes: a fresh "
                    "interpreter gave different tasks for the same (split, seed, index)"]
    return []


def check_tasks_unchanged(domain: Domain, tasks: Sequence[Task],
                          before: Sequence[str]) -> list[str]:
    """Verifying leaves each task as it was (``before``: each task's :func:`fingerprint`).

    The server, the rollout and a GRPO group verify every completion of a task against the one
    ``Task`` object, several at once: a verifier that writes into it would let one completion's
    verification change how the next one is judged."""
    for task, print_ in zip(tasks, before):
        if fingerprint([task]) != print_:
            return [f"{domain.id}: verifying completions changed task {task.id} (its prompt, "
                    "answer, gold or meta); every completion of a task is verified against the "
                    "same task, so one verification would change the next one's"]
    return []


def _code_probes(domain: Domain, tasks: Sequence[Task]) -> list[str]:
    if "code" not in domain.manifest.tags:
        return []
    from rlhub.testing.probes_code import check_reward_hacking

    return [p for task in tasks[:1] for p in check_reward_hacking(domain, task)]


def _judge_probes(domain: Domain, tasks: Sequence[Task]) -> list[str]:
    if "judge" not in domain.manifest.tags:
        return []
    from rlhub.testing.probes_judge import judge_probes

    return judge_probes(domain, tasks)


CHECKS: list[Callable[[Domain, Sequence[Task]], list[str]]] = [
    check_gold,
    check_bad_inputs,
    _code_probes,
    _judge_probes,
]


@dataclass
class DomainReport:
    """Everything the kit found on one domain: failing problems, known ones, probe classes."""

    id: str
    problems: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    probes: dict[str, ProbeReport] = field(default_factory=dict)

    @property
    def max_probe_reward(self) -> float | None:
        """The highest reward any probe that did not pass earned, over every class."""
        found = [r.max_reward for r in self.probes.values() if r.max_reward is not None]
        return max(found) if found else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ok": not self.problems, "problems": self.problems,
                "known": self.known, "max_probe_reward": self.max_probe_reward,
                "probes": {name: r.to_dict() for name, r in self.probes.items()}}


def run_probes(domain: Domain, tasks: Sequence[Task]) -> dict[str, ProbeReport]:
    """Every integrity probe class on ``domain`` (see :mod:`rlhub.testing.probes`)."""
    from rlhub.testing.probes import answer_space, check_degenerate, check_hedge
    from rlhub.testing.probes_constant import check_constant
    from rlhub.testing.probes_games import check_players
    from rlhub.testing.probes_labels import check_forged_labels
    from rlhub.testing.probes_oversized import check_oversized
    from rlhub.testing.probes_template import check_template

    space = answer_space(domain, tasks)
    checks = {"degenerate": check_degenerate, "constant": check_constant, "hedge": check_hedge,
              "template": check_template, "players": check_players,
              "oversized": check_oversized, "forged-label": check_forged_labels}
    reports = {name: _timed_class(checks[name], domain, tasks, space) for name in PROBE_CLASSES}
    if "swe" in domain.manifest.tags:  # repository tasks: rlhub.testing.probes_repo
        from rlhub.testing.probes_repo import check_repo

        reports["repo"] = _timed_class(check_repo, domain, tasks, space)
    for name in domain.manifest.hackable:
        reports[name].known = True
    return reports


def _timed_class(check: Callable[..., ProbeReport], domain: Domain, tasks: Sequence[Task],
                 space: Sequence[Task]) -> ProbeReport:
    started = time.perf_counter()
    report = check(domain, tasks, space)
    report.seconds = time.perf_counter() - started
    return report


def _probe_problems(domain: Domain, report: DomainReport) -> None:
    for name, probe_report in report.probes.items():
        if not probe_report.known:
            report.problems += probe_report.problems
        elif probe_report.problems:
            report.known += probe_report.problems
        elif not probe_report.ran:
            report.problems.append(f"{domain.id}: the manifest marks it hackable by {name!r} "
                                   f"probes, but that class cannot run on it "
                                   f"({probe_report.reason}); remove the mark")
        else:
            report.problems.append(f"{domain.id}: the manifest marks it hackable by {name!r} "
                                   "probes, but none found a problem; remove the mark")


def inspect_domain(domain: Domain | str, *, n: int = 4, registry: Registry | None = None,
                   across_processes: bool = True,
                   batch: Sequence[str] | None = None) -> DomainReport:
    """Run every check and probe class on a domain (object or id): a :class:`DomainReport`.

    ``batch``: the domains one fresh interpreter fingerprints along with this one (by default,
    every domain of its plugin, when the domain is given by id); a caller checking only some of
    a plugin's domains names them, so the others are not generated for nothing."""
    if isinstance(domain, str):
        from rlhub.plugins import registry as default_registry

        reg = registry or default_registry()
        try:
            domain = reg.get(domain)
        except Exception as exc:  # noqa: BLE001 - a factory that fails is a contract problem
            return DomainReport(domain, [f"{domain}: could not build the domain: {exc}"])
        if batch is None:  # one fresh interpreter fingerprints the whole plugin, not one at a time
            batch = [i for i in reg.ids()
                     if reg.catalog.declared(i).plugin == domain.manifest.plugin]
    report = DomainReport(domain.id)
    try:
        tasks = sample_tasks(domain, n)
    except Exception as exc:  # noqa: BLE001
        report.problems.append(f"{domain.id}: sampling raised {type(exc).__name__}: {exc}")
        return report
    before = [fingerprint([task]) for task in tasks]
    for check in CHECKS:
        report.problems += check(domain, tasks)
    changed = check_tasks_unchanged(domain, tasks, before)
    report.probes = run_probes(domain, tasks)
    # before the probes' problems, which a changed task may cause
    report.problems += changed or check_tasks_unchanged(domain, tasks, before)
    _probe_problems(domain, report)
    report.problems += check_determinism(domain, across_processes=across_processes,
                                         batch=batch or ())
    return report


def check_domain(domain: Domain | str, **kwargs: Any) -> list[str]:
    """Run every check on a domain (object or id) and return all problems found (the keyword
    arguments of :func:`inspect_domain`)."""
    return inspect_domain(domain, **kwargs).problems


def assert_domain_ok(domain: Domain | str, **kwargs: Any) -> None:
    """Raise ``AssertionError`` listing every contract problem of ``domain``."""
    problems = check_domain(domain, **kwargs)
    if problems:
        raise AssertionError("\n".join(problems))
