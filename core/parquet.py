"""Parquet bytes in and out through memory Arrow owns, never through Python objects.

Arrow's reader drops its last reference to its input on a thread-pool thread, sometimes after
``read_table`` has returned. Were the input a Python object (bytes, a file), that thread would take
the GIL to release it; once the interpreter is finalizing, CPython ends such a thread with
``pthread_exit`` inside a C++ destructor and the process aborts ("terminate called without an
active exception", exit -6) after its work is done. ``rlhub eval`` and ``rlhub reverify`` did so
about once in a hundred runs.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def parquet_bytes(table: pa.Table, **options: Any) -> bytes:
    """``table`` as Parquet (``options`` as for ``pyarrow.parquet.write_table``)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **options)
    return bytes(sink.getvalue().to_pybytes())


def parquet_table(data: bytes) -> pa.Table:
    """The table in Parquet ``data``, read from a copy in memory Arrow owns."""
    owned = pa.allocate_buffer(len(data))
    memoryview(owned).cast("B")[:] = data  # type: ignore[arg-type]  # a mutable Arrow buffer
    return pq.read_table(pa.BufferReader(owned), use_threads=False, pre_buffer=False)
