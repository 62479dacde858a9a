"""Hook implementations of rlhub-code: the manifests of every ``code/*`` domain (cheap: no imports
beyond the standard library, no task generation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlhub import hookimpl

DOCKERFILE = str(Path(__file__).with_name("Dockerfile"))
# v2: exact-only. Another task's program collected 3-27% for the hidden tests it passed by chance
# (empty inputs, zero counts), so the fraction of tests passed is logged, not paid.
VERSION = "2.0.0"
TESTS_REWARD = {"range": [0, 1], "components": {
    "pass_frac": {"weight": 0.0, "description": "fraction of hidden tests passed (logged)"},
    "all_pass": {"weight": 1.0, "description": "1 when every hidden test passed"}}}
PYTHON_LIMITS = {"wall_s": 10, "cpu_s": 8, "memory_mb": 512, "processes": 16}
SHELL_LIMITS = {"wall_s": 5, "cpu_s": 4, "memory_mb": 256, "processes": 32,
                "output_bytes": 1 << 16}
REPAIR_TURNS = {"max_turns": 3, "repair_discount": 0.8}

PY_FAMILIES = {
    "caesar": "shift letters with wrap-around, keeping case",
    "words": "word-level rewrites of a sentence (reverse, dedupe, capitalise)",
    "count": "count words with a length bound and a property",
    "parse": "parse key/value records with given separators into a dict",
    "rle": "run-length encoding and decoding",
    "roman": "roman numerals to and from integers",
    "chunks": "aggregate consecutive chunks of a list",
    "groupby": "aggregate (key, amount) records into a dict",
    "sortkey": "sort words with composite keys",
    "intervals": "merge closed intervals with a gap tolerance",
    "matrix": "transpose, rotate or spiral-walk a matrix",
    "bsearch": "binary-search variants on sorted lists with duplicates",
    "numtheory": "divisor sums, totients, prime counts, digital roots",
    "base": "integers to and from another base",
    "dates": "ISO date arithmetic and weekdays",
    "coins": "coin change: fewest coins or number of ways",
    "subseq": "longest increasing / non-decreasing / common subsequence",
    "editdist": "edit distance with a substitution cost",
    "grid": "shortest S-to-E path on a grid by breadth-first search",
}
BASH_TASKS = {
    "wordfreq": "print the most frequent words of stdin with their counts",
    "csvsum": "sum one CSV column per group of another",
    "logfilter": "filter, count and sort log lines by level",
}
SQL_TASKS = {
    "filter": "a filtered, ordered SELECT over one table",
    "aggregate": "GROUP BY aggregates with HAVING",
    "join": "joins across two or three tables",
}
# The families rendered in many languages (multilang.py): MultiPL-E style and stdin/stdout.
MULTILANG_FAMILIES = {
    "coins": "coin change: fewest coins or number of ways",
    "editdist": "edit distance with a substitution cost",
}
MULTILANG_VERSION = "1.0.0"
# Compiled languages compile inside the job, under its own budget (Limits.compile_*).
MULTILANG_LIMITS = {"wall_s": 10, "cpu_s": 8, "memory_mb": 512, "processes": 32,
                    "compile_wall_s": 40, "compile_cpu_s": 40}
REGEX_TASKS = {
    "formats": "a regex for structured tokens (codes, ids, versions) from examples",
    "words": "a regex for a word class (prefix, suffix, letters) from examples",
}


def _manifest(name: str, summary: str, tags: list[str], factory: str, params: dict[str, Any],
              limits: dict[str, Any], version: str = VERSION, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"code/{name}-v{version.split('.')[0]}", "version": version, "summary": summary,
        "license": "Apache-2.0", "tags": ["code", *tags], "size": None,
        "reward": TESTS_REWARD, "scoring": {"kind": "exact"}, "factory": factory,
        "params": params,
        "sandbox": {"kind": "local", "dockerfile": DOCKERFILE, "limits": limits},
        "turns": {"max_turns": 2, "repair_discount": 0.8}, "verify_timeout_s": 20, **extra,
    }


def _python(family: str, summary: str) -> dict[str, Any]:
    return _manifest(f"py-{family}", f"Python function synthesis, hidden tests: {summary}",
                     ["python", "synthesis"], "rlhub_code.pyfunc:make", {"family": family},
                     PYTHON_LIMITS,
                     verifier={"name": "python-tests",
                               "options": {"limits": PYTHON_LIMITS, "call_timeout_s": 3}})


@hookimpl
def rlhub_domains() -> list[dict[str, Any]]:
    """Every ``code/*`` domain: Python synthesis families, repair, bash, SQL and regex."""
    domains = [_python(family, summary) for family, summary in PY_FAMILIES.items()]
    domains.append(_manifest(
        "py-repair", "Fix a buggy Python function given a failing test's output; hidden tests",
        ["python", "repair"], "rlhub_code.repair:make", {}, PYTHON_LIMITS,
        verifier={"name": "python-tests",
                  "options": {"limits": PYTHON_LIMITS, "call_timeout_s": 3}},
        turns=REPAIR_TURNS))
    domains += [_manifest(f"bash-{name}", f"Bash script checked by its exact output: {summary}",
                          ["bash", "shell"], "rlhub_code.bash:make", {"task": name}, SHELL_LIMITS)
                for name, summary in BASH_TASKS.items()]
    domains += [_manifest(f"sql-{name}", f"SQLite query over a generated database: {summary}",
                          ["sql"], "rlhub_code.sql:make", {"task": name}, SHELL_LIMITS)
                for name, summary in SQL_TASKS.items()]
    domains += [_manifest(f"regex-{name}", f"Regex synthesis from examples: {summary}",
                          ["regex"], "rlhub_code.regex:make", {"task": name}, SHELL_LIMITS)
                for name, summary in REGEX_TASKS.items()]
    return domains + _multilang()


def _multilang() -> list[dict[str, Any]]:
    """``code/poly-<family>`` (one of nine languages per task) and ``code/cp-<family>`` (any
    registered language, stdin to stdout); their sandbox is the default image (every
    toolchain), not the Python Dockerfile."""
    domains = []
    for fam, summary in MULTILANG_FAMILIES.items():
        for kind, what, factory in (
                ("poly", "Function synthesis in one of nine languages, MultiPL-E style",
                 "make_polyglot"),
                ("cp", "Competitive programming, stdin to stdout, in any sandbox language",
                 "make_competitive")):
            manifest = _manifest(f"{kind}-{fam}", f"{what}: {summary}",
                                 ["multilingual", "synthesis", kind], f"rlhub_code.multilang:{factory}",
                                 {"family": fam}, MULTILANG_LIMITS, version=MULTILANG_VERSION)
            manifest["sandbox"] = {"kind": "local", "limits": MULTILANG_LIMITS}
            manifest["verify_timeout_s"] = 90  # a compile (40 s at most) and a run
            domains.append(manifest)
    return domains
