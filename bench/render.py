"""Render BENCHMARKS.md from the benches' last results (``bench/results/*.json``).

Each bench keeps its last result with the command that reproduces it, the machine it ran on, the
rows it wants shown and a note (:func:`_util.emit`); this page is those files, nothing typed by
hand, so a figure in it is the last one measured. ``--check`` exits 1 when BENCHMARKS.md is not
what the results render to (the test suite runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "BENCHMARKS.md"
HEAD = """# Benchmarks

Every figure below is the last one a bench measured, rendered from `bench/results/*.json` by
`python bench/render.py` (`make bench` runs the benches, then renders). Figures are medians; a
ratio is against a baseline measured in the same run, on the machine named under each bench.
"""


def machine(m: dict[str, Any]) -> str:
    return f"{m['cpus']} CPUs, {m['memory_gib']} GiB, Python {m['python']}, {m['system']}"


def section(result: dict[str, Any]) -> str:
    lines = [f"## {result['bench']}", "",
             f"`{result['command']}`, measured {result['measured']} on {machine(result['machine'])}.",
             "", "| what | figure | baseline / target |", "| --- | --- | --- |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"
              for row in result["table"]]
    if result.get("note"):
        lines += ["", result["note"]]
    return "\n".join(lines) + "\n"


def render() -> str:
    results = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))]
    return "\n".join([HEAD, *(section(r) for r in results)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="Exit 1 when BENCHMARKS.md differs from what the results render to.")
    args = parser.parse_args()
    page = render()
    if args.check:
        if PAGE.read_text() != page:
            sys.exit("BENCHMARKS.md is not what bench/results/*.json render to: "
                     "run `python bench/render.py`")
        return
    PAGE.write_text(page)


if __name__ == "__main__":
    main()
