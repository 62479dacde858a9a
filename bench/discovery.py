"""Cold discovery cost: `rlhub list --json` with every plugin installed, against a bare
`python -c "import pluggy"` measured in the same run (interleaved). Target ratio <= 8."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import emit, summary  # noqa: E402

BIN = Path(sys.executable).parent


def timed(argv: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    listing, baseline = [], []
    rlhub = [str(BIN / "rlhub"), "list", "--json"]
    pluggy = [sys.executable, "-c", "import pluggy"]
    timed(rlhub), timed(pluggy)  # warm the page cache, not the interpreter
    for _ in range(args.runs):
        seconds, out = timed(rlhub)
        listing.append(seconds)
        baseline.append(timed(pluggy)[0])
    rows = json.loads(out)
    lst, base = summary(listing), summary(baseline)
    emit({
        "bench": "discovery",
        "domains": len(rows),
        "distributions": len({r["distribution"] for r in rows}),
        "rlhub_list_json": lst,
        "import_pluggy": base,
        "ratio_median": lst["median_ms"] / base["median_ms"],
        "target_ratio": 8.0,
    })


if __name__ == "__main__":
    main()
