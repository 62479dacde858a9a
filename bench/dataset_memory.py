"""Peak memory of ``rlhub sample`` on small datasets that decode to gigabytes, against an honest
one.

Each case runs ``rlhub --domains-file F sample ID -n 2`` in a fresh interpreter that reports its
own peak resident memory (``ru_maxrss``): the baseline is an honest 50-row dataset; the bombs are
a 49 KB ``.jsonl.gz`` of 16 million empty objects, the same size of rows that carry every mapped
column (refused by the row cap), and a 7.5 KB Parquet file holding one 1 MB string,
dictionary-encoded, in 3,000 rows (refused by the decoded-bytes cap). Before rlhub read datasets
in bounded batches these peaked at 2.35 GiB and 3.08 GiB (issue 23).

    python bench/dataset_memory.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from _util import emit

CHILD = """
import resource, sys
from rlhub.cli import app
try:
    app(sys.argv[1:], prog_name="rlhub")
except SystemExit:
    pass
print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""
FIELDS = {"id": "qid", "prompt": "question", "answer": "ans"}


def gzip_of(line: bytes, copies: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [packer.compress(line * 65536) for _ in range(copies // 65536)]
    return b"".join([*out, packer.flush()])


def write_cases(root: Path) -> dict[str, Path]:
    cases = {"honest": root / "honest.jsonl", "empty_objects_gz": root / "empty.jsonl.gz",
             "mapped_rows_gz": root / "rows.jsonl.gz", "dictionary_parquet": root / "dict.parquet"}
    cases["honest"].write_text("".join(
        json.dumps({"qid": f"q{i}", "question": f"{i}?", "ans": str(i)}) + "\n" for i in range(50)))
    cases["empty_objects_gz"].write_bytes(gzip_of(b"{}\n", 16_000_000))
    cases["mapped_rows_gz"].write_bytes(gzip_of(b'{"qid":"","question":"","ans":""}\n', 8_000_000))
    rows = 3000
    question = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()),
                                              pa.array(["x" * 1_000_000]))
    pq.write_table(pa.table({"qid": [f"q{i}" for i in range(rows)], "question": question,
                             "ans": ["1"] * rows}), cases["dictionary_parquet"], compression="zstd")
    return cases


def peak_mib(root: Path, dataset: Path) -> tuple[float, str]:
    spec = root / f"{dataset.stem}.yaml"
    spec.write_text(json.dumps({"id": "bench/bomb-v1", "dataset": dataset.name, "fields": FIELDS,
                                "verifier": "exact"}))
    env = {**os.environ, "RLHUB_DISABLE_AUTOLOAD": "1", "RLHUB_HOME": str(root / "home"),
           "RLHUB_CONFIG": str(root / "none.yaml")}
    out = subprocess.run([sys.executable, "-c", CHILD, "--domains-file", str(spec), "sample",
                          "bench/bomb-v1", "-n", "2"], capture_output=True, text=True, env=env,
                         timeout=600)
    peak = int(out.stderr.rsplit("PEAK_KB", 1)[1].split()[0]) / 1024
    error = next((line for line in out.stderr.splitlines() if line.startswith("error:")), "")
    return peak, error


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cases = write_cases(root)
        results = {}
        for name, path in cases.items():
            peak, error = peak_mib(root, path)
            results[name] = {"file_bytes": path.stat().st_size, "peak_mib": round(peak, 1),
                             "refused": bool(error), "error": error[:160]}
    baseline = results["honest"]["peak_mib"]
    for name, row in results.items():
        row["peak_over_baseline_mib"] = round(row["peak_mib"] - baseline, 1)
    emit({"bench": "dataset_memory", "baseline": "honest", "cases": results,
          "before_issue_23_gib": {"empty_objects_gz": 2.35, "dictionary_parquet": 3.08}})


if __name__ == "__main__":
    main()
