"""Discovery cost: `rlhub list --json` against a bare `python -c "import pluggy"`, interleaved in
one run. Targets: a listing costs at most 5x the baseline, a first listing on a fresh home at most
30x, with every installed plugin and again with a generated plugin of 1,000 more domains.

Each run is a fresh process, timed by the wall clock and by its CPU time (user + system, from the
kernel's accounting of the finished child): on a shared, loaded machine the CPU figure is the
steadier one. ``list`` runs in a home whose caches earlier listings filled (the normal case);
``first`` gives every run an empty $RLHUB_HOME and $RLHUB_CACHE. Bytecode is cached in both
(PYTHONDONTWRITEBYTECODE is dropped for the children), as after any first run of an install.
The generated plugin is a throwaway distribution (dist-info with its entry point, and a module)
in a temporary folder put on PYTHONPATH for its runs only."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _util import Row, emit, ratio, summary  # noqa: E402

BIN = Path(sys.executable).parent
GENERATED = 1000
TARGETS = {"list": 5.0, "first": 30.0}
PLUGIN = '''
"""A generated plugin of {n} domains (bench/discovery.py)."""
from rlhub import hookimpl

def _manifest(i):
    return {{
        "id": f"gen/task{{i:04d}}-v1", "version": "1.0.0", "license": "MIT",
        "summary": f"generated domain {{i}}: add two numbers of {{i % 9 + 1}} digits",
        "tags": ["generated", f"level-{{i % 9 + 1}}"], "factory": "gen_plugin:make",
        "reward": {{"range": [0, 1], "components": {{
            "correct": {{"weight": 1.0, "description": "the sum is right"}},
            "format": {{"weight": 0.0, "description": "answered in the format (logged)"}}}}}},
        "turns": {{"max_turns": 1, "repair_discount": 1.0}},
        "params": {{"digits": i % 9 + 1, "operands": 2}}, "scoring": {{"kind": "exact"}},
    }}

@hookimpl
def rlhub_domains():
    return [_manifest(i) for i in range({n})]
'''


def generated_plugin(root: Path, n: int = GENERATED) -> Path:
    """A distribution ``rlhub-bench-gen`` declaring ``n`` domains, laid out in ``root``."""
    info = root / "rlhub_bench_gen-1.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rlhub-bench-gen\nVersion: 1.0.0\n")
    (info / "entry_points.txt").write_text("[rlhub.plugins]\ngen = gen_plugin\n")
    (root / "gen_plugin.py").write_text(textwrap.dedent(PLUGIN.format(n=n)))
    return root


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds and stdout of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, out.stdout


def fresh(env: dict[str, str]) -> tuple[dict[str, str], tempfile.TemporaryDirectory[str]]:
    home = tempfile.TemporaryDirectory()
    return {**env, "RLHUB_HOME": home.name, "RLHUB_CACHE": f"{home.name}/cache"}, home


def run(cases: dict[str, tuple[list[str], dict[str, str], bool]], runs: int) -> dict[str, dict]:
    """Each case ``runs`` times, the cases interleaved; per case wall and CPU lists, rows seen."""
    seen: dict[str, dict] = {name: {"wall": [], "cpu": [], "rows": None} for name in cases}
    for _ in range(runs):
        for name, (argv, env, first) in cases.items():
            env, home = fresh(env) if first else (env, None)
            wall, cpu, out = timed(argv, env)
            if home is not None:
                home.cleanup()
            seen[name]["wall"].append(wall)
            seen[name]["cpu"].append(cpu)
            seen[name]["rows"] = json.loads(out) if out.startswith("[") else None
    return seen


def figures(seen: dict[str, dict]) -> dict[str, object]:
    base = {k: summary(seen["import_pluggy"][k]) for k in ("wall", "cpu")}
    result: dict[str, object] = {"import_pluggy": base}
    for name, data in seen.items():
        if name == "import_pluggy":
            continue
        wall, cpu = summary(data["wall"]), summary(data["cpu"])
        rows = data["rows"] or []
        result[name] = {
            "domains": len(rows), "deferred": sum(bool(r.get("deferred")) for r in rows),
            "wall": wall, "cpu": cpu,
            "ratio_wall": wall["median_ms"] / base["wall"]["median_ms"],
            "ratio_cpu": cpu["median_ms"] / base["cpu"]["median_ms"],
            "target_ratio": TARGETS[name.split("_")[0]]}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    rlhub = [str(BIN / "rlhub"), "list", "--json"]
    with tempfile.TemporaryDirectory() as gen:
        paths = [str(generated_plugin(Path(gen))), env.get("PYTHONPATH", "")]
        big = {**env, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
        cases = {"import_pluggy": ([sys.executable, "-c", "import pluggy"], env, False),
                 "list": (rlhub, env, False), "first": (rlhub, env, True),
                 f"list_{GENERATED}": (rlhub, big, False), f"first_{GENERATED}": (rlhub, big, True)}
        run(cases, 1)  # warm: bytecode, the page cache and each home's caches, not the processes
        seen = run(cases, args.runs)
    result = figures(seen)
    emit({"bench": "discovery", "runs": args.runs, **result}, table(result))


def table(result: dict[str, Any]) -> list[Row]:
    base = result["import_pluggy"]
    rows = []
    for name, what in [("list", "`rlhub list --json`"),
                       ("first", "`rlhub list --json`, first listing on a fresh home"),
                       (f"list_{GENERATED}", f"`rlhub list --json` with {GENERATED:,} more domains"),
                       (f"first_{GENERATED}", f"first listing with {GENERATED:,} more domains")]:
        row = result[name]
        rows.append((f"{what}: {row['domains']} domains",
                     f"{row['wall']['median_ms']:.0f} ms wall, {row['cpu']['median_ms']:.0f} ms CPU",
                     f"`python -c \"import pluggy\"` {base['wall']['median_ms']:.0f} ms wall, "
                     f"{base['cpu']['median_ms']:.0f} ms CPU; CPU ratio "
                     + ratio(row["ratio_cpu"], row["target_ratio"], at_most=True)))
    return rows


if __name__ == "__main__":
    main()
