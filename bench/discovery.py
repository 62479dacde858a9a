"""Cold discovery cost: `rlhub list --json` with every plugin installed, against a bare
`python -c "import pluggy"` measured in the same run (interleaved). Target ratio <= 8.

Each run is a fresh process. ``rlhub_list_json`` keeps $RLHUB_HOME's cache of manifests already
validated (the normal case after the first listing); ``rlhub_list_json_first`` gives every run an
empty $RLHUB_HOME, so all manifests are validated with jsonschema again."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import emit, summary  # noqa: E402

BIN = Path(sys.executable).parent


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    return time.perf_counter() - started, out.stdout


def first_listing(argv: list[str]) -> float:
    with tempfile.TemporaryDirectory() as home:
        return timed(argv, {**os.environ, "RLHUB_HOME": home, "RLHUB_CACHE": f"{home}/cache"})[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    listing, first, baseline = [], [], []
    rlhub = [str(BIN / "rlhub"), "list", "--json"]
    pluggy = [sys.executable, "-c", "import pluggy"]
    timed(rlhub), timed(pluggy)  # warm the page cache, not the interpreter
    for _ in range(args.runs):
        seconds, out = timed(rlhub)
        listing.append(seconds)
        baseline.append(timed(pluggy)[0])
        first.append(first_listing(rlhub))
    rows = json.loads(out)
    lst, base, fst = summary(listing), summary(baseline), summary(first)
    emit({
        "bench": "discovery",
        "domains": len(rows),
        "distributions": len({r["distribution"] for r in rows}),
        "rlhub_list_json": lst,
        "rlhub_list_json_first": fst,
        "import_pluggy": base,
        "ratio_median": lst["median_ms"] / base["median_ms"],
        "ratio_median_first": fst["median_ms"] / base["median_ms"],
        "target_ratio": 8.0,
    })


if __name__ == "__main__":
    main()
