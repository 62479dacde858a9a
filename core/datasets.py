"""The datasets of data-only domains, read in bounded batches with what they cost counted.

A dataset's size on disk says little about what reading it costs: 49 KB of ``.jsonl.gz`` can hold
16 million empty rows, and a 7.8 KB Parquet file one dictionary-encoded string repeated over 3,000
rows, gigabytes once decoded. So a dataset is never read whole: :func:`read_dataset` streams it
(JSON Lines line by line, at most :data:`MAX_ROW_BYTES` a line; Parquet in batches of
:data:`BATCH_ROWS` rows, only the columns the domain maps, string columns kept
dictionary-encoded), counts rows and decoded bytes as it goes, and stops with a clear error as
soon as either passes the user's caps (:class:`DatasetCaps`, ``datasets:`` in the user config).
What it keeps is compact (each row's mapped columns as one JSON string, or the Arrow batches); a
row becomes Python objects only when a task is made from it (:class:`Rows`).

Local paths are opened by the operating system (never through fsspec, whose ``::`` chains could
reach other filesystems); a URL is read through fsspec, and only a trusted domain file may name
one (:mod:`rlhub.trust`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from rlhub.errors import ManifestError

if TYPE_CHECKING:
    import pyarrow as pa

    from rlhub.userconfig import UserConfig

DEFAULT_MAX_ROWS = 1_000_000
DEFAULT_MAX_BYTES = 1 << 30
MAX_ROW_BYTES = 64 << 20  # one JSON Lines row
BATCH_ROWS = 1024
RowHook = Callable[[int, dict[str, Any]], None]


@dataclass(frozen=True)
class DatasetCaps:
    """The most one dataset may hold: rows, and bytes once decoded (mapped columns only, for
    Parquet; whole lines, for JSON Lines). ``where`` names the setting in errors."""

    max_rows: int = DEFAULT_MAX_ROWS
    max_bytes: int = DEFAULT_MAX_BYTES
    where: str = "the datasets: section of your rlhub config"

    @classmethod
    def from_config(cls, config: UserConfig) -> DatasetCaps:
        section = config.section("datasets")
        return cls(int(section.get("max_rows", DEFAULT_MAX_ROWS)),
                   int(section.get("max_bytes", DEFAULT_MAX_BYTES)),
                   f"datasets: in {config.path}")


class Rows(Sequence[dict[str, Any]]):
    """A dataset's rows, kept compact; ``rows[i]`` is row ``i``'s mapped columns as a dict."""

    def __init__(self, n: int, get: Callable[[int], dict[str, Any]], nbytes: int):
        self._n, self._get, self.nbytes = n, get, nbytes

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: int) -> dict[str, Any]:  # type: ignore[override]
        if not -self._n <= index < self._n:
            raise IndexError(index)
        return self._get(index % self._n)


class _Budget:
    """Rows and decoded bytes read so far, against the caps."""

    def __init__(self, where: str, caps: DatasetCaps):
        self.where, self.caps, self.rows, self.bytes = where, caps, 0, 0

    def add(self, rows: int, nbytes: int) -> None:
        self.rows += rows
        self.bytes += nbytes
        if self.rows > self.caps.max_rows:
            raise ManifestError(f"dataset {self.where}: expected at most {self.caps.max_rows} "
                                f"rows (max_rows, {self.caps.where}), found more; split it into "
                                "several domains or raise the cap")
        if self.bytes > self.caps.max_bytes:
            raise ManifestError(f"dataset {self.where}: expected at most {self.caps.max_bytes} "
                                f"bytes once decoded (max_bytes, {self.caps.where}), found more "
                                f"after {self.rows} rows; split it into several domains or "
                                "raise the cap")


def read_dataset(dataset: str, base_dir: str, columns: Sequence[str], caps: DatasetCaps,
                 keys: Sequence[str] = (), on_row: RowHook | None = None) -> Rows:
    """The rows of a .jsonl, .jsonl.gz or .parquet dataset, local or (trusted) through fsspec.

    :param columns: The columns the domain maps; every row must have each of them.
    :param keys: The columns ``on_row`` sees (the id and split columns, say); those that are
        not in ``columns`` are read but not kept.
    :param on_row: Called as ``on_row(index, {key: value})`` for each row, in order, as the
        dataset is read.
    """
    where = dataset if "://" in dataset else str(Path(base_dir, dataset))
    budget = _Budget(where, caps)
    if where.endswith(".parquet"):
        return _read_parquet(where, list(columns), list(keys), budget, on_row)
    return _read_json_lines(where, list(columns), list(keys), budget, on_row)


# -- JSON Lines ------------------------------------------------------------------------------


def _open(where: str) -> BinaryIO:
    if "://" in where:
        import fsspec

        fh: BinaryIO = fsspec.open(where, "rb").open()
    else:
        fh = open(where, "rb")  # noqa: SIM115 - closed by the caller
    return gzip.GzipFile(fileobj=fh) if where.endswith(".gz") else fh  # type: ignore[return-value]


def _lines(where: str, budget: _Budget) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of every line, each bounded, their bytes counted."""
    limit = min(MAX_ROW_BYTES, budget.caps.max_bytes)
    with _open(where) as fh:
        for number in range(1, 1 << 62):
            line = fh.readline(limit + 1)
            if not line:
                return
            if len(line) > limit:
                raise ManifestError(f"dataset {where} line {number}: expected a row of at most "
                                    f"{limit} bytes, found a longer one")
            budget.add(0, len(line))
            yield number, line


def _read_json_lines(where: str, columns: list[str], keys: list[str], budget: _Budget,
                     on_row: RowHook | None) -> Rows:
    import pyarrow as pa

    chunks: list[pa.Array] = []
    batch: list[str] = []
    wanted = list(dict.fromkeys(columns + keys))
    for number, line in _lines(where, budget):
        if not line.strip():
            continue
        row = _json_row(where, number, line, wanted)
        budget.add(1, 0)
        if on_row is not None and keys:
            on_row(budget.rows - 1, {k: row[k] for k in keys})
        batch.append(json.dumps({c: row[c] for c in columns}, ensure_ascii=False))
        if len(batch) == BATCH_ROWS:
            chunks.append(pa.array(batch, pa.large_string()))
            batch = []
    if batch:
        chunks.append(pa.array(batch, pa.large_string()))
    kept = pa.chunked_array(chunks, pa.large_string())
    return Rows(len(kept), lambda i: json.loads(kept[i].as_py()), kept.nbytes)


def _json_row(where: str, number: int, line: bytes, wanted: list[str]) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ManifestError(f"dataset {where} line {number}: expected a JSON object: "
                            f"{exc}") from None
    if not isinstance(row, dict):
        raise ManifestError(f"dataset {where} line {number}: expected a JSON object, found "
                            f"{type(row).__name__}")
    missing = [c for c in wanted if c not in row]
    if missing:
        raise ManifestError(f"dataset {where} line {number}: expected the columns {missing} "
                            f"(from fields and split), found {sorted(row)[:20]}")
    return row


# -- Parquet ---------------------------------------------------------------------------------


def _parquet_file(where: str, read_dictionary: list[str] | None = None) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if "://" not in where:
        return pq.ParquetFile(where, read_dictionary=read_dictionary, pre_buffer=False)
    import fsspec

    with fsspec.open(where, "rb") as fh:  # into memory Arrow owns (see rlhub.parquet)
        data = fh.read()
    owned = pa.allocate_buffer(len(data))
    memoryview(owned).cast("B")[:] = data  # type: ignore[arg-type]
    return pq.ParquetFile(pa.BufferReader(owned), read_dictionary=read_dictionary,
                          pre_buffer=False)


def _byte_array_leaves(parquet: Any, names: list[str]) -> list[str]:
    """The dotted paths of every string/binary leaf under ``names`` (kept dictionary-encoded)."""
    schema = parquet.schema
    return [schema.column(i).path for i in range(len(schema))
            if schema.column(i).path.split(".")[0] in names
            and schema.column(i).physical_type == "BYTE_ARRAY"]


def _check_parquet(where: str, parquet: Any, wanted: list[str], budget: _Budget) -> None:
    """Refuse, from the metadata alone, missing columns and what the caps already exclude."""
    names = parquet.schema_arrow.names
    missing = [c for c in wanted if c not in names]
    if missing:
        raise ManifestError(f"dataset {where}: expected the columns {missing} (from fields and "
                            f"split), found {names[:20]}")
    meta = parquet.metadata
    if meta.num_rows > budget.caps.max_rows:
        budget.add(meta.num_rows, 0)
    stored = sum(meta.row_group(g).column(c).total_uncompressed_size
                 for g in range(meta.num_row_groups) for c in range(meta.num_columns)
                 if meta.row_group(g).column(c).path_in_schema.split(".")[0] in wanted)
    if stored > budget.caps.max_bytes:
        budget.add(0, stored)


def _read_parquet(where: str, columns: list[str], keys: list[str], budget: _Budget,
                  on_row: RowHook | None) -> Rows:
    import pyarrow as pa

    wanted = list(dict.fromkeys(columns + keys))
    probe = _parquet_file(where)
    _check_parquet(where, probe, wanted, budget)
    parquet = _parquet_file(where, _byte_array_leaves(probe, wanted))
    kept: list[pa.RecordBatch] = []
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=wanted, use_threads=False):
        budget.add(batch.num_rows, sum(decoded_bytes(c) for c in batch.columns))
        if on_row is not None and keys:
            for i, row in enumerate(batch.select(keys).to_pylist(), budget.rows - batch.num_rows):
                on_row(i, row)
        kept.append(batch.select(columns))
    table = pa.Table.from_batches(kept) if kept else pa.table({c: [] for c in columns})
    return Rows(table.num_rows, lambda i: table.slice(i, 1).to_pylist()[0], table.nbytes)


def decoded_bytes(array: pa.Array) -> int:
    """What ``array`` takes once decoded to plain values, without decoding it: a dictionary
    column counts each row's value at its full length."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_dictionary(kind):
        values = array.dictionary
        if pa.types.is_string(values.type) or pa.types.is_binary(values.type) or \
                pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type):
            lengths = pc.take(pc.binary_length(values), array.indices)
            return int(pc.sum(lengths).as_py() or 0) + 4 * len(array)
        return int(array.nbytes)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return decoded_bytes(array.flatten()) + 8 * len(array)
    if pa.types.is_struct(kind):
        return sum(decoded_bytes(field) for field in array.flatten()) + len(array)
    return int(array.nbytes)
