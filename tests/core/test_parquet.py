"""``rlhub.parquet``: Parquet in and out through memory Arrow owns.

Arrow's reader releases its input on a thread-pool thread, sometimes after ``read_table`` has
returned; releasing a Python object there takes the GIL, and during interpreter shutdown CPython
ends that thread inside a C++ destructor: ``rlhub eval`` and ``rlhub reverify`` aborted at exit
("terminate called without an active exception", exit -6) about once in a hundred runs.
"""

from __future__ import annotations

import array
import weakref

import pyarrow as pa
import pyarrow.parquet as pq

from rlhub.parquet import parquet_bytes, parquet_table

ROWS = [{"id": i, "text": "x" * i} for i in range(50)]


def test_parquet_written_and_read_back_keeps_every_row():
    data = parquet_bytes(pa.Table.from_pylist(ROWS), compression="zstd")
    assert data[:4] == b"PAR1" and parquet_table(data).to_pylist() == ROWS


def test_a_read_leaves_arrow_no_python_object_to_release_later():
    data = array.array("B", parquet_bytes(pa.Table.from_pylist(ROWS)))  # weakly referenceable
    alive = weakref.ref(data)
    assert parquet_table(data).num_rows == len(ROWS)
    del data
    assert alive() is None  # nothing of Arrow's, on any thread, still holds the caller's bytes


def test_the_written_bytes_are_the_same_as_pyarrows_own_file_writer(tmp_path):
    table = pa.Table.from_pylist(ROWS)
    pq.write_table(table, tmp_path / "ref.parquet")
    assert parquet_bytes(table) == (tmp_path / "ref.parquet").read_bytes()
