"""The contract kit's integrity probes over a sample of domains (or all): what each probe class
earned on each domain, and what the whole kit costs per domain.

``--label NAME`` files the run under that name in ``bench/results/probes.json`` (runs under other
labels are kept), so one file can hold, say, a run on main's plugins (``before``) beside a run on
this branch's (``after``): ``rlhub check --json`` reports the same classes per domain. With both,
``version_changes`` lists every domain whose version changed between them and, per probe class,
the highest reward a probe earned on it before and after (``null``: the class ran no probe).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).parent))
from _util import RESULTS, Row, emit  # noqa: E402

import rlhub  # noqa: E402
from rlhub.testing import inspect_domain  # noqa: E402
from rlhub.testing.judge_server import judge_env  # noqa: E402

if TYPE_CHECKING:
    from rlhub.plugins import Registry

#: A few domains of every first-party plugin.
SAMPLE = (
    "math/arithmetic-l1", "math/fractions-l2", "math/number-theory-l1", "rg/coin_flip",
    "rg/basic_arithmetic", "rg/ab", "rg/arc_1d", "rg/letter_counting", "rcore/arithmetics",
    "rcore/code-analysis", "code/py-roman", "code/bash-csvsum", "instruct/bullets",
    "instruct/combo3", "instruct/highlights", "structured/json-schema-l4", "structured/format-date",
    "structured/csv-records", "agentic/calculator", "agentic/guess-number",
    "textarena/2048-super-easy", "textarena/tic-tac-toe", "gem/guess-the-number-easy",
    "gem/sudoku-easy", "judged/reasoned-arithmetic",
)


NOTE = ("`before` ran this kit on main's plugins and core (PYTHONPATH over main's tree), `after` on "
        "this branch's; `version_changes` lists what each class earned on each changed domain.")


def sample_ids(registry: Registry, names: tuple[str, ...]) -> list[str]:
    """The installed id of each ``plugin/name`` (whatever its version)."""
    ids = registry.ids()
    return [i for name in names for i in ids if i.rsplit("-v", 1)[0] == name]


def probe_row(report: Any, seconds: float) -> dict[str, Any]:
    """What one domain's report shows: problems and known ones counted, and each class's highest
    reward (``null``: the class ran no probe; ``rlhub check --json`` gives the details)."""
    data = report.to_dict()
    return {"seconds": round(seconds, 3), "ok": data["ok"], "problems": len(data["problems"]),
            "known": len(data["known"]),
            "max_reward": {name: p["max_reward"] for name, p in data["probes"].items()}}


def version_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Domains whose id changed version between two runs, with each class's highest reward."""
    old = {i.rsplit("-v", 1)[0]: i for i in before["results"]}
    rows = []
    for new_id, new in after["results"].items():
        old_id = old.get(new_id.rsplit("-v", 1)[0])
        if old_id is None or old_id == new_id:
            continue
        was = before["results"][old_id]
        rows.append({"before": old_id, "after": new_id, "ok": [was["ok"], new["ok"]],
                     "probes": {name: [was["max_reward"].get(name), reward]
                                for name, reward in new["max_reward"].items()}})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--all", action="store_true", help="every installed domain")
    parser.add_argument("--names-from", type=Path, metavar="FILE",
                        help="the domains named in FILE, one id a line (its version ignored)")
    parser.add_argument("--label", default="current", help="the run's name in probes.json")
    parser.add_argument("-n", type=int, default=3, help="tasks per domain (CI uses 3)")
    args = parser.parse_args()
    registry = rlhub.registry()
    names = SAMPLE
    if args.names_from:
        names = tuple(line.strip().rsplit("-v", 1)[0]
                      for line in args.names_from.read_text().splitlines() if line.strip())
    ids = registry.ids() if args.all else sample_ids(registry, names)
    rows: dict[str, Any] = {}
    with judge_env():  # judged domains are checked against the scripted judge, as in CI
        for domain_id in ids:
            started = time.perf_counter()
            try:
                report = inspect_domain(domain_id, n=args.n, registry=registry,
                                        across_processes=False)
            except Exception as exc:  # noqa: BLE001 - one domain's crash is its row, not the run's
                rows[domain_id] = {"seconds": round(time.perf_counter() - started, 3),
                                   "ok": False, "error": f"{type(exc).__name__}: {exc}",
                                   "max_reward": {}}
                continue
            rows[domain_id] = probe_row(report, time.perf_counter() - started)
            print(f"{rows[domain_id]['seconds']:8.2f} s  {domain_id}", file=sys.stderr)
    times = [r["seconds"] for r in rows.values()]
    run = {"domains": len(rows), "kit_total_s": round(sum(times), 2),
           "kit_median_s": round(statistics.median(times), 3), "results": rows}
    with open(Path(tempfile.gettempdir()) / "rlhub-bench-probes.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two labels may be run side by side
        path = RESULTS / "probes.json"
        runs = json.loads(path.read_text()).get("runs", {}) if path.exists() else {}
        runs[args.label] = run
        result: dict[str, Any] = {"bench": "probes", "runs": runs}
        if {"before", "after"} <= set(runs):
            result["version_changes"] = version_changes(runs["before"], runs["after"])
        emit(result, table(result), NOTE)


def table(r: dict[str, Any]) -> list[Row]:
    """Per run, what the kit costs; with both runs, on how many changed domains each class paid."""
    rows: list[Row] = [(f"contract kit, every check and probe class, per domain ({label}, "
                        f"{run['domains']} domains)", f"{run['kit_median_s']:.2f} s median",
                        f"{run['kit_total_s']:.0f} s in all") for label, run in r["runs"].items()]
    changes = r.get("version_changes", [])
    for name in sorted({n for c in changes for n in c["probes"]}):
        paid = [sum(bool(c["probes"][name][i]) for c in changes if name in c["probes"])
                for i in (0, 1)]
        rows.append((f"`{name}` probes earned reward on a domain whose version changed",
                     f"{paid[1]} of {len(changes)} after", f"{paid[0]} before"))
    return rows


if __name__ == "__main__":
    main()
