"""Datasets are read in bounded batches: a few kilobytes that decode to gigabytes are refused
with a clear error at low peak memory, and a domain keeps only the columns it maps."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from rlhub import ManifestError, Registry
from rlhub.datasets import DatasetCaps, decoded_bytes, read_dataset

FIELDS = {"id": "qid", "prompt": "question", "answer": "ans"}
# Runs `rlhub ARGS` in a fresh interpreter and reports its own peak resident memory.
CHILD = """
import resource, sys
from rlhub.cli import app
try:
    app(sys.argv[1:], prog_name="rlhub")
except SystemExit:
    pass
print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def domain_file(folder: Path, dataset: str) -> Path:
    path = folder / "bomb.yaml"
    path.write_text(yaml.safe_dump({"id": "mydata/bomb-v1", "dataset": dataset,
                                    "fields": FIELDS, "verifier": "exact"}))
    return path


def gzip_stream(line: bytes, copies: int) -> bytes:
    """``line`` repeated ``copies`` times, gzip-compressed without holding the expansion."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = line * 65536
    out = [packer.compress(chunk) for _ in range(copies // 65536)]
    return b"".join([*out, packer.compress(line * (copies % 65536)), packer.flush()])


def dictionary_bomb(path: Path, rows: int = 3000, width: int = 1_000_000) -> None:
    """One string of ``width`` bytes in every row, stored once in a dictionary page."""
    question = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()),
                                              pa.array(["x" * width]))
    table = pa.table({"qid": [f"q{i}" for i in range(rows)], "question": question,
                      "ans": ["1"] * rows})
    pq.write_table(table, path, compression="zstd", use_dictionary=True)


def sample_in_child(tmp_path: Path, domain: Path, *args: str) -> tuple[str, int]:
    """``(stderr, peak KiB)`` of ``rlhub --domains-file DOMAIN ARGS`` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", CHILD, "--domains-file", str(domain), *args],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         env={**_env(tmp_path)})
    peak = int(out.stderr.rsplit("PEAK_KB", 1)[1].split()[0])
    return out.stderr, peak


def _env(tmp_path: Path) -> dict[str, str]:
    import os

    return {**os.environ, "RLHUB_DISABLE_AUTOLOAD": "1", "RLHUB_HOME": str(tmp_path / "home")}


def test_a_49_kb_gzip_of_empty_objects_is_refused_at_low_peak_memory(tmp_path):
    data = tmp_path / "rows.jsonl.gz"
    data.write_bytes(gzip_stream(b"{}\n", 16_000_000))
    assert len(data.read_bytes()) < 60_000  # 48 MB and 16 million rows once expanded
    honest = tmp_path / "honest"
    honest.mkdir()
    (honest / "rows.jsonl").write_text("".join(
        json.dumps({"qid": f"q{i}", "question": f"{i}?", "ans": str(i)}) + "\n" for i in range(50)))
    _, baseline = sample_in_child(tmp_path, domain_file(honest, "rows.jsonl"),
                                  "sample", "mydata/bomb-v1", "-n", "2")
    stderr, peak = sample_in_child(tmp_path, domain_file(tmp_path, "rows.jsonl.gz"),
                                   "sample", "mydata/bomb-v1", "-n", "2")
    assert f"dataset {data} line 1: expected the columns ['ans', 'qid', 'question']" in stderr
    assert peak - baseline < 64 * 1024, (peak, baseline)  # was 2.35 GiB


def test_a_7_kb_parquet_file_of_one_dictionary_string_is_refused_at_low_peak_memory(tmp_path):
    data = tmp_path / "rows.parquet"
    dictionary_bomb(data)
    assert data.stat().st_size < 16_000  # 3 GB once decoded
    honest = tmp_path / "honest"
    honest.mkdir()
    dictionary_bomb(honest / "rows.parquet", rows=50, width=10)
    _, baseline = sample_in_child(tmp_path, domain_file(honest, "rows.parquet"),
                                  "sample", "mydata/bomb-v1", "-n", "2")
    stderr, peak = sample_in_child(tmp_path, domain_file(tmp_path, "rows.parquet"),
                                   "sample", "mydata/bomb-v1", "-n", "2")
    assert (f"error: domain 'mydata/bomb-v1': dataset {data}: expected at most 1073741824 bytes "
            "once decoded (max_bytes, datasets: in ") in stderr
    assert peak - baseline < 64 * 1024, (peak, baseline)  # was 3.08 GiB


def test_rows_past_the_users_cap_are_refused_naming_the_setting(tmp_path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"datasets": {"max_rows": 1000}}))
    monkeypatch.setenv("RLHUB_CONFIG", str(config))
    data = tmp_path / "rows.jsonl.gz"
    data.write_bytes(gzip_stream(b'{"qid": "", "question": "", "ans": ""}\n', 100_000))
    domain = Registry(domain_files=[domain_file(tmp_path, data.name)], autoload=False)
    with pytest.raises(ManifestError) as err:
        domain.get("mydata/bomb-v1").task("train", 0, 0)
    assert str(err.value) == (
        f"domain 'mydata/bomb-v1': dataset {data}: expected at most 1000 rows (max_rows, "
        f"datasets: in {config}), found more; split it into several domains or raise the cap")


def test_decoded_bytes_count_every_row_of_a_dictionary_column_at_full_length():
    column = pa.array(["x" * 1000] * 300).dictionary_encode()
    assert column.nbytes < 3000
    assert decoded_bytes(column) == 300 * 1000 + 4 * 300
    nested = pa.array([["ab", "c"], [], ["d"]])
    assert decoded_bytes(nested) == decoded_bytes(nested.flatten()) + 8 * 3


def test_a_domain_reads_only_the_columns_it_maps(tmp_path):
    data = tmp_path / "rows.parquet"
    rows = 200
    pq.write_table(pa.table({"qid": [f"q{i}" for i in range(rows)],
                             "question": [f"{i}?" for i in range(rows)],
                             "ans": [str(i) for i in range(rows)],
                             "unused": ["y" * 100_000] * rows}),  # 20 MB never read
                   data, use_dictionary=False)
    caps = DatasetCaps(max_bytes=1_000_000)
    kept = read_dataset(data.name, str(tmp_path), ["qid", "question", "ans"], caps)
    assert len(kept) == rows and kept[3] == {"qid": "q3", "question": "3?", "ans": "3"}
    assert kept.nbytes < 20_000
    with pytest.raises(ManifestError, match="expected at most 1000000 bytes once decoded"):
        read_dataset(data.name, str(tmp_path), ["qid", "unused"], caps)
