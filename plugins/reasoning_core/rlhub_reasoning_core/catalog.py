"""The static table of Reasoning Core tasks, the manifests made from it, and its generator.

Listing domains must not import Reasoning Core (it imports sympy, z3, duckdb and problog), so the
plugin reads ``catalog.json``, generated from the installed Reasoning Core by::

    python -m rlhub_reasoning_core.catalog --write    # regenerate catalog.json
    python -m rlhub_reasoning_core.catalog --check    # exit 1 and print the differences

The generator takes Reasoning Core's roster (``task_catalog()``: the curated tasks, not its
machine-generated or mutated ones) and runs each task in two fresh interpreters with the workers'
hash seed (:data:`rlhub_reasoning_core.domain.HASH_SEED`), generating the examples of
:data:`PROBE_SEEDS` in each, in opposite orders (an example must not depend on what was generated
before it in the same worker). A task is a domain when both interpreters made the same examples,
its canonical answer scores 1 and an empty answer 0. The others are left out with the reason: a
package or download generation needs (no network here), an example that changes between
interpreters for the same seed (rlhub tasks are deterministic), a canonical answer the task's own
scorer does not accept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

NAMESPACE = "rcore"
PACKAGE = "reasoning-core"
# v2: a pass needs the gold's agreement too, not the scorer's full marks alone.
VERSION = "2.0.0"
MAJOR = VERSION.split(".", 1)[0]
TABLE = "catalog.json"
# Randomness left unpinned shows on some examples only, so enough seeds that a task showing it on
# one in ten examples is caught with odds of 19 in 20.
PROBE_SEEDS = (*range(24), 123_456_789, 987_654_321, 2**30 + 11, 2**31 - 1)
NONDETERMINISTIC = ("the same seed gave different examples in two fresh interpreters (the seeds in "
                    "opposite orders): generation draws randomness that seeding the global random "
                    "and numpy generators, pinning their reseeding from the OS and the hash seed "
                    "does not fix, and rlhub's tasks must be deterministic")
# Tasks that pass the generator's checks but not rlhub's contract, from reading their scorers.
LEFT_OUT: dict[str, str] = {
    "grid_navigation": ("its scorer takes the first direction pair or distance found anywhere in "
                        "the answer, so an answer padded with other candidates ('2 (right, "
                        "above)') gets full marks: rlhub check's hedge probes fail it"),
    "reference_tracking": ("its scorer accepts any answer holding exactly one token shaped like "
                           "the gold ('x3'), so 'x3 Yes' gets full marks: rlhub check's hedge "
                           "probes fail it"),
}
REASONS = [  # (pattern in the error, reason)
    (r"No module named '(\w+)'", "generating needs the package {0!r}, which reasoning-core does "
                                 "not install (not even its [gen] extra)"),
    (r"URLError|ConnectionError|Name or service not known",
     "generation downloads data from the network, which is not reachable here"),
]


@functools.cache
def load() -> dict[str, Any]:
    """The shipped table: ``{"reasoning_core": version, "license", "domains", "left_out"}``."""
    text = resources.files("rlhub_reasoning_core").joinpath(TABLE).read_text(encoding="utf-8")
    return json.loads(text)


def domain_name(task: str) -> str:
    """``graph_pathfinding`` -> ``graph-pathfinding``."""
    return task.replace("_", "-")


def manifest(row: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """The rlhub manifest of one table row."""
    return {
        "id": f"{NAMESPACE}/{domain_name(row['task'])}-v{MAJOR}", "version": VERSION,
        "summary": f"Reasoning Core {row['task']}: {row['summary']}"[:300],
        "license": table["license"], "tags": ["reasoning-core", row["category"]],
        "gold": True, "determinism": "seeded", "size": None,
        "reward": {"range": [0, 1], "components": {
            "correct": {"weight": 1.0, "description":
                        "1 when Reasoning Core's own score_answer gives full marks"},
            "score": {"weight": 0.0, "description": "Reasoning Core's score_answer, logged only"},
            "format": {"weight": 0.0,
                       "description": "1 when the answer is inside <answer></answer> tags"},
        }},
        "scoring": {"kind": "exact"},
        "verify_timeout_s": 10,
        "factory": "rlhub_reasoning_core.domain:make",
        "params": {"task": row["task"]},
        "requires": {PACKAGE: f"=={table['reasoning_core']}"},
    }


def manifests() -> list[dict[str, Any]]:
    table = load()
    return [manifest(row, table) for row in table["domains"]]


def left_out() -> list[dict[str, str]]:
    """``{id, source, reason}`` of every roster task that is not a domain."""
    return [{"id": f"{NAMESPACE}/{domain_name(task)}-v{MAJOR}", "source": task,
             "reason": reason}
            for task, reason in sorted(load()["left_out"].items())]


# -- the generator ----------------------------------------------------------------------------


def build(names: list[str] | None = None) -> dict[str, Any]:
    """The table from the installed Reasoning Core (``names``: only those roster tasks)."""
    from importlib import metadata

    roster = {row["name"]: row for row in _roster()}
    names = sorted(roster) if names is None else names
    runs = [_probe_in_child(names, seeds) for seeds in (PROBE_SEEDS, PROBE_SEEDS[::-1])]
    domains, left = [], {}
    for name in names:
        reason = LEFT_OUT.get(name) or _reason(runs[0][name], runs[1][name])
        if reason:
            left[name] = reason
        else:
            domains.append({"task": name, "summary": roster[name]["summary"],
                            "category": Path(roster[name]["source"]).stem})
    license_text = metadata.distribution(PACKAGE).read_text("licenses/LICENSE") or ""
    return {"reasoning_core": metadata.version(PACKAGE),
            "license": "MIT" if license_text.startswith("MIT License") else "NOASSERTION",
            "domains": domains, "left_out": left}


def _roster() -> list[dict[str, Any]]:
    import reasoning_core

    return [row for row in reasoning_core.task_catalog() if row["status"] == "active"]


def _reason(first: dict[str, Any], second: dict[str, Any]) -> str | None:
    """Why a task is left out, from its probes in two interpreters (None: it is a domain)."""
    error = first.get("error") or second.get("error")
    if error:
        for pattern, reason in REASONS:
            found = re.search(pattern, error)
            if found:
                return reason.format(*found.groups())
        return f"generation fails: {error[:160]}"
    if first["digest"] != second["digest"]:
        return NONDETERMINISTIC
    if first["gold"] < 1:
        return "its own scorer does not give the canonical answer full marks"
    if first["empty"] > 0:
        return "its own scorer pays an empty answer"
    return None


def _probe_in_child(names: list[str], seeds: tuple[int, ...]) -> dict[str, dict[str, Any]]:
    from rlhub_reasoning_core.domain import HASH_SEED

    out = subprocess.run([sys.executable, "-m", "rlhub_reasoning_core.catalog", "--probe",
                          json.dumps(names), json.dumps(seeds)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": str(HASH_SEED)},
                         timeout=1800, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def probe(name: str, seeds: list[int]) -> dict[str, Any]:
    """Generate the examples of ``seeds`` here, in that order: digest (of the examples by seed),
    gold and empty scores."""
    from rlhub_reasoning_core import work

    made_by_seed, gold, empty = {}, 1.0, 0.0
    try:
        for seed in seeds:
            made = made_by_seed[seed] = work.generate(name, seed)
            gold = min(gold, work.score(name, made["example"], made["answer"])[0])
            empty = max(empty, work.score(name, made["example"], "")[0])
    except Exception as exc:  # noqa: BLE001 - every failure is a reason to leave the task out
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
    digest = hashlib.sha256()
    for seed in sorted(made_by_seed):
        made = made_by_seed[seed]
        digest.update(f"{made['prompt']}\x00{made['answer']}\x00".encode())
    return {"digest": digest.hexdigest(), "gold": gold, "empty": empty}


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per difference between two tables."""
    from rlhub.bridges import table_differences

    return table_differences(old, new, ("reasoning_core", "license"), row_key="task")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--probe"]:
        seeds = json.loads(argv[2])
        print(json.dumps({name: probe(name, seeds) for name in json.loads(argv[1])}))
        return 0
    from rlhub.bridges import catalog_main

    return catalog_main(__doc__ or "", build, Path(__file__).with_name(TABLE), differences, argv)


if __name__ == "__main__":
    sys.exit(main())
