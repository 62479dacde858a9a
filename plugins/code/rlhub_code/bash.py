"""Bash tasks checked by their exact output.

Each task has hidden cases (stdin and input files); the candidate script runs once per case in the
sandbox (``language="bash"``, ``LC_ALL=C``) and its stdout must equal the expected output, which is
computed here and never enters the sandbox. A missing or extra final newline is ignored; the exit
status must be 0. A program over ``MAX_PROGRAM_BYTES`` is refused unrun
(:func:`~rlhub_code.verdicts.oversized_program`), and a script that hits a sandbox limit (time,
memory, output) on one case is not run on the rest (they count as failed): neither changes a
reward, since only a script that passes every case earns one.
"""

from __future__ import annotations

import collections
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict, code_of
from rlhub_code.families.rand import word
from rlhub_code.verdicts import (
    exec_summary,
    failed_verdict,
    manifest_limits,
    oversized_program,
    tests_verdict,
)

CASES = 5
OVER_LIMIT = ("timeout", "memory", "output_limit")


@dataclass
class Case:
    """One run: stdin, input files, and the exact expected stdout."""

    stdin: str = ""
    files: dict[str, str] = field(default_factory=dict)
    expected: str = ""


@dataclass
class BashTask:
    """A statement, a gold script, and a case maker (the first case is shown in the prompt)."""

    statement: str
    gold: str
    make_case: Callable[[random.Random], Case]


def _wordfreq(rng: random.Random) -> BashTask:
    top = rng.randint(2, 5)
    pool = [word(rng, 1, 2) for _ in range(7)]

    def make_case(r: random.Random) -> Case:
        lines = []
        for _ in range(r.randint(1, 6)):
            ws = [w.upper() if r.random() < 0.2 else w for w in r.choices(pool, k=r.randint(1, 8))]
            lines.append(" ".join(w + r.choice(["", "", ",", ".", "!"]) for w in ws))
        text = "\n".join(lines) + "\n"
        counts = collections.Counter(w.lower() for w in "".join(
            c if c.isalpha() else " " for c in text).split())
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        return Case(stdin=text, expected="".join(f"{n} {w}\n" for w, n in ranked))

    return BashTask(
        f"Read text from standard input. A word is a maximal run of ASCII letters, compared "
        f"case-insensitively (print it in lowercase). Print the {top} most frequent words, one "
        f"per line as `COUNT WORD` (a single space between), by decreasing count and, for equal "
        f"counts, alphabetically. Print fewer lines when there are fewer distinct words.",
        f"tr -cs 'A-Za-z' '\\n' | tr 'A-Z' 'a-z' | grep -v '^$' | sort | uniq -c \\\n"
        f"  | sort -k1,1nr -k2,2 | head -n {top} | awk '{{print $1, $2}}'",
        make_case)


CSV_COLUMNS = ["region", "product", "units", "price"]


def _csvsum(rng: random.Random) -> BashTask:
    group = rng.choice(["region", "product"])
    total = rng.choice(["units", "price"])
    g, v = CSV_COLUMNS.index(group) + 1, CSV_COLUMNS.index(total) + 1
    regions, products = [word(rng, 1, 2) for _ in range(3)], [word(rng, 1, 2) for _ in range(4)]

    def make_case(r: random.Random) -> Case:
        rows = [[r.choice(regions), r.choice(products), str(r.randint(1, 50)),
                 str(r.randint(1, 900))] for _ in range(r.randint(1, 9))]
        sums: dict[str, int] = collections.defaultdict(int)
        for row in rows:
            sums[row[g - 1]] += int(row[v - 1])
        csv = ",".join(CSV_COLUMNS) + "\n" + "".join(",".join(row) + "\n" for row in rows)
        return Case(files={"data.csv": csv},
                    expected="".join(f"{k},{sums[k]}\n" for k in sorted(sums)))

    return BashTask(
        f"The file `data.csv` in the current directory has the header line "
        f"`{','.join(CSV_COLUMNS)}` and then one row per line (no quoting, integer units and "
        f"price). For each distinct {group}, print `{group.upper()},TOTAL` where TOTAL is the sum "
        f"of the {total} column over its rows, one line per {group}, sorted by {group}.",
        f"tail -n +2 data.csv | awk -F, '{{s[${g}] += ${v}}} END {{for (k in s) print k \",\" "
        f"s[k]}}' | sort -t, -k1,1", make_case)


LEVELS = ["DEBUG", "INFO", "WARN", "ERROR"]


def _logfilter(rng: random.Random) -> BashTask:
    level = rng.choice(["WARN", "ERROR"])
    components = [word(rng, 1, 2) for _ in range(4)]

    def make_case(r: random.Random) -> Case:
        lines, counts = [], collections.Counter()
        for i in range(r.randint(1, 12)):
            lvl, comp = r.choice(LEVELS), r.choice(components)
            lines.append(f"2024-0{r.randint(1, 9)}-1{r.randint(0, 9)} 12:{i:02d}:0{r.randint(0, 9)}"
                         f" {lvl} {comp}: {word(r)} {word(r)}\n")
            counts[comp] += lvl == level
        ranked = sorted(((c, n) for c, n in counts.items() if n), key=lambda cn: (-cn[1], cn[0]))
        return Case(files={"app.log": "".join(lines)},
                    expected="".join(f"{c} {n}\n" for c, n in ranked))

    return BashTask(
        f"The file `app.log` in the current directory has lines `DATE TIME LEVEL COMPONENT: "
        f"MESSAGE` with LEVEL one of {', '.join(LEVELS)}. For every component with at least one "
        f"{level} line, print `COMPONENT COUNT` (the number of its {level} lines), by decreasing "
        f"count and, for equal counts, alphabetically by component.",
        f"awk '$3 == \"{level}\" {{sub(/:$/, \"\", $4); print $4}}' app.log | sort | uniq -c \\\n"
        f"  | sort -k1,1nr -k2,2 | awk '{{print $2, $1}}'", make_case)


TASKS: dict[str, Callable[[random.Random], BashTask]] = {
    "wordfreq": _wordfreq, "csvsum": _csvsum, "logfilter": _logfilter}


def _informative_case(spec: BashTask, rng: random.Random, tries: int = 50) -> Case:
    """A case with non-empty expected output, so that a script printing nothing cannot pass."""
    for _ in range(tries):
        case = spec.make_case(rng)
        if case.expected.strip():
            return case
    raise RuntimeError(f"no case with a non-empty expected output in {tries} tries")


def _show_case(case: Case) -> str:
    parts = [f"File `{name}`:\n```\n{text}```" for name, text in case.files.items()]
    if case.stdin:
        parts.append(f"Standard input:\n```\n{case.stdin}```")
    parts.append(f"Expected output:\n```\n{case.expected}```")
    return "\n".join(parts)


class BashDomain(Domain):
    """Write a bash script whose stdout matches exactly; see the module docstring."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.make_task = TASKS[self.params["task"]]
        self.limits = manifest_limits(manifest)

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        spec = self.make_task(rng)
        cases = [_informative_case(spec, rng) for _ in range(CASES)]
        prompt = (f"Write a bash script for this task.\n\n{spec.statement}\n\nExample:\n"
                  f"{_show_case(cases[0])}\n\nThe script runs with bash, coreutils, grep, sed and "
                  "awk available, LC_ALL=C, and no network. Hidden tests run it on other inputs "
                  "and compare its standard output exactly; it must exit with status 0. Answer "
                  "with the script in a single ```bash code block.")
        return {"prompt": prompt, "answer": None, "gold": f"```bash\n{spec.gold}\n```",
                "meta": {"language": "bash", "cases": [vars(c) for c in cases]}}

    def check(self, task: Task, completion: str) -> Verdict:
        from rlhub import ExecRequest

        script = code_of(completion, ("bash", "sh", "shell"))
        refused = oversized_program(script)
        if refused is not None:
            return refused
        cases = [Case(**c) for c in task.meta["cases"]]
        failures: list[str | None] = []
        last = None
        for case in cases:
            last = self.services.sandboxes.run(ExecRequest(
                code=script, language="bash", files=case.files, stdin=case.stdin,
                limits=self.limits, env={"LC_ALL": "C"}))
            if last.status == "infra_error":
                return failed_verdict(f"The sandbox failed: {last.detail}", exec_summary(last))
            failures.append(_case_failure(case, last))
            if last.status in OVER_LIMIT:
                break
        failures += ["not run: an earlier case hit a sandbox limit"] * (len(cases) - len(failures))
        return tests_verdict(failures, exec_summary(last) if last else None)


def _case_failure(case: Case, result: Any) -> str | None:
    inputs = ", ".join(case.files) or "the given standard input"
    if result.status != "ok":
        tail = result.stderr.strip()[-300:]
        return (f"on {inputs}: the script ended with status {result.status} (exit code "
                f"{result.exit_code})" + (f"; stderr: {tail}" if tail else ""))
    if result.stdout.rstrip("\n") == case.expected.rstrip("\n"):
        return None
    return (f"on {inputs}: expected output {case.expected[:250]!r}, got "
            f"{result.stdout[:250]!r}")


def make(manifest: Manifest) -> BashDomain:
    """Factory named by the ``code/bash-*`` manifests."""
    return BashDomain(manifest)
