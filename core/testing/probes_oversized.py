"""Oversized probes: short answers that denote unbounded work, and documents that expand.

Each probe is small to send and enormous to evaluate naively:

* expressions (in the task's answer slot when its gold has one, else alone): power towers in
  LaTeX and Python (``10^{10^{10}}``, ``9**9**9**9``), factorials, binomials and roots of huge
  numbers, a 5,000-digit literal, 50,000 nested parentheses;
* documents: a YAML "billion laughs" (a few hundred bytes of anchors and aliases expanding to
  ~10^9 nodes), JSON nested 100,000 deep, a 1 MB JSON array, a 1 MB CSV.

Every probe is verified on a separate thread, as a reward server does, and must finish within
the manifest's ``verify_timeout_s`` with the range minimum, a trainable failure class and a
feedback line saying what was wrong. A verification that holds the interpreter lock in C code
freezes the kit itself: that, too, is the finding.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from rlhub.domain import Domain
from rlhub.task import Score, Task
from rlhub.testing.answer_space import answer_slot
from rlhub.testing.probes import Probe, ProbeReport

EXPRESSIONS = {
    "latex power tower": "10^{10^{10^{10}}}",
    "latex double power": "9^{9^{9}}",
    "latex huge exponent": "10^{10000000}",
    "latex factorial": "(10^{8})!",
    "latex binomial": "\\binom{10^{9}}{5 \\cdot 10^{8}}",
    "latex root": "\\sqrt[10^{9}]{2}",
    "python power tower": "9**9**9**9",
    "python factorial": "factorial(10**8)",
    "5,000-digit number": "9" * 5000,
    "deep parentheses": "(" * 50_000 + "987654321" + ")" * 50_000,  # no plausible answer inside
}
BILLION_LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]"
       for i in range(8)]
    + ["laughs: *i"])
DOCUMENTS = {
    "yaml billion laughs": f"```yaml\n{BILLION_LAUGHS}\n```",
    "yaml billion laughs, bare": BILLION_LAUGHS,
    "json nested 100,000 deep": "```json\n" + "[" * 100_000 + "]" * 100_000 + "\n```",
    "json array of 1 MB": "```json\n[" + ",".join(['"x"'] * 250_000) + "]\n```",
    "csv of 1 MB": "```csv\n" + "a,b,c\n" * 170_000 + "```",
}


def oversized_probes(task: Task) -> list[Probe]:
    """The probes for ``task``: expressions in its answer slot (or alone), then documents."""
    slot = answer_slot(task.gold)
    fill = slot.fill if slot is not None else (lambda text: text)
    probes = [Probe(name, fill(text), True) for name, text in EXPRESSIONS.items()]
    return probes + [Probe(name, text, True) for name, text in DOCUMENTS.items()]


def verify_off_thread(domain: Domain, task: Task, completion: str,
                      deadline: float) -> tuple[Score | None, float]:
    """``(score, seconds)`` of a verification on a worker thread; score None past ``deadline``."""
    box: list[Score] = []
    thread = threading.Thread(target=lambda: box.append(domain.verify(task, completion)),
                              name="rlhub-kit-probe", daemon=True)
    started = time.perf_counter()
    thread.start()
    thread.join(deadline)
    return (box[0] if box else None), time.perf_counter() - started


def check_oversized(domain: Domain, tasks: Sequence[Task], space: Sequence[Task]) -> ProbeReport:
    """The ``oversized`` class on the first task."""
    report = ProbeReport("oversized")
    lo, _ = domain.manifest.reward_range
    limit = float(domain.manifest.data["verify_timeout_s"])
    for task in tasks[:1]:
        for probe in oversized_probes(task):
            score, seconds = verify_off_thread(domain, task, probe.completion, limit)
            what = f"the oversized probe {probe.name!r} on task {task.id}"
            report.probes += 1
            if score is None:
                report.problems.append(f"{domain.id}: {what} did not finish within "
                                       f"verify_timeout_s ({limit:g}s)")
                report.max_reward = report.max_reward or lo
                continue
            report.max_reward = max(score.reward, report.max_reward or lo)
            report.problems += _score_problems(domain, what, score, seconds, limit)
    return report


def _score_problems(domain: Domain, what: str, score: Score, seconds: float,
                    limit: float) -> list[str]:
    lo, _ = domain.manifest.reward_range
    if seconds > limit:
        return [f"{domain.id}: {what} took {seconds:.2f}s (limit verify_timeout_s {limit:g}s)"]
    if not score.trainable:
        return [f"{domain.id}: {what} failed with class {score.failure!r}, not the answer's "
                f"(expected 'answer'): {score.error}"]
    if score.passed or score.reward > lo:
        return [f"{domain.id}: {what} earned {score.reward:g} (expected the minimum {lo:g})"]
    if not score.feedback.strip():
        return [f"{domain.id}: {what} got no feedback line; say why the answer was refused"]
    return []
