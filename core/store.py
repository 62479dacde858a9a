"""The trajectory store: Parquet parts on any fsspec filesystem (local, ``memory://``, ``s3://``).

Layout under the store URL::

    run.json                      the run's config (written by eval)
    metrics.json                  eval metrics
    trajectories/part-<time>-<uuid>.parquet

Each :meth:`TrajectoryStore.write` commits one part atomically. On a local disk the part is
written to a hidden temp file, fsynced, then renamed into place; on object stores each part has a
fresh write-once name and becomes visible only when its upload completes. A crash therefore loses
at most the batch not yet written and never leaves a half-written part under a ``part-`` name.
Readers only read ``part-*.parquet``; stray temp files are removed by :meth:`clean_temp`.

One row per trajectory; the schema version is :data:`SCHEMA_VERSION`, stored in every row and in
the Parquet metadata. Turns are a list of structs. A turn's score is one column per field of
:class:`~rlhub.task.Score`, typed by its annotation (:func:`column_type`: ``components`` is a map,
``exec`` JSON text), so a new Score field is a new column: like any change of the layout it bumps
the version, and older parts are upgraded on read. Version 2 added the failure class
(``failure``) of every turn and trajectory; version-1 parts are upgraded on read, their class
inferred from the status (:func:`upgrade_v1`).
"""

from __future__ import annotations

import functools
import json
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import fields
from types import UnionType
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin, get_type_hints

import pyarrow as pa
import pyarrow.parquet as pq

from rlhub.errors import StoreError
from rlhub.parquet import parquet_bytes, parquet_table
from rlhub.rollout import Trajectory
from rlhub.task import Score

if TYPE_CHECKING:
    from rlhub.domain import Domain
    from rlhub.plugins import Registry

SCHEMA_VERSION = 2
PARTS = "trajectories"

_SCALARS: dict[Any, pa.DataType] = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(),
                                     str: pa.string()}


def column_type(annotation: Any) -> tuple[pa.DataType, str]:
    """The Arrow type of a field annotated ``annotation`` and how a value is kept in it: a
    scalar as itself (``"value"``; ``X | None`` as ``X``, every column is nullable), a
    ``dict[str, <scalar>]`` as a map (``"map"``), anything else as JSON text (``"json"``)."""
    args = tuple(a for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1:
        return column_type(args[0])
    if annotation in _SCALARS:
        return _SCALARS[annotation], "value"
    if get_origin(annotation) is dict and len(args) == 2 and args[0] is str \
            and args[1] in _SCALARS:
        return pa.map_(pa.string(), _SCALARS[args[1]]), "map"
    return pa.string(), "json"


@functools.cache
def _score_layout(cls: type[Score]) -> tuple[tuple[str, pa.DataType, str], ...]:
    """``(name, Arrow type, how kept)`` of every field of ``cls``, from its annotations."""
    hints = get_type_hints(cls)
    return tuple((f.name, *column_type(hints[f.name])) for f in fields(cls))


def score_struct(cls: type[Score] = Score) -> list[pa.Field]:
    """The stored columns of a score: one per field of ``cls``, typed by its annotation."""
    return [pa.field(name, arrow) for name, arrow, _ in _score_layout(cls)]


def turn_struct(columns: list[tuple[str, pa.DataType] | str],
                cls: type[Score] = Score) -> pa.StructType:
    """The stored turn: ``columns`` in order, a bare name placing the score column of that name;
    score columns ``columns`` does not place follow at the end."""
    derived = {f.name: f for f in score_struct(cls)}
    placed = [derived.pop(c) if isinstance(c, str) else pa.field(*c) for c in columns]
    return pa.struct(placed + list(derived.values()))


# The score columns sit among the turn's own where rlhub always put them: every part then has the
# same struct, which pyarrow needs to read a directory of parts (or concatenate them) as one table.
TURN = turn_struct([
    ("index", pa.int32()), ("messages", pa.string()), ("completion", pa.string()),
    "reward", "components", "passed", ("attempt", pa.bool_()), ("status", pa.string()),
    "feedback", "error", ("exec_status", pa.string()), "exec", ("observation", pa.string()),
    ("gen_s", pa.float64()), ("verify_s", pa.float64()), ("finish_reason", pa.string()),
    ("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()),
    ("gen_attempts", pa.int32()), "failure",
])
PROVENANCE = ("plugin", "distribution", "plugin_version", "domain_version", "verifier_hash",
              "sandbox_image", "sandbox_image_digest", "rlhub_version", "policy", "seed", "split",
              "run_id", "lock_hash")
SCHEMA = pa.schema([
    ("schema_version", pa.int32()), ("trajectory_id", pa.string()), ("job_key", pa.string()),
    ("domain", pa.string()), ("task_id", pa.string()), ("task", pa.string()),
    ("sample_index", pa.int32()), ("reward", pa.float64()), ("passed", pa.bool_()),
    ("first_pass_attempt", pa.int32()), ("n_turns", pa.int32()), ("status", pa.string()),
    ("error", pa.string()), ("failure", pa.string()), ("started_at", pa.float64()),
    ("wall_s", pa.float64()), ("turns", pa.list_(TURN)),
    ("plugin", pa.string()), ("distribution", pa.string()), ("plugin_version", pa.string()),
    ("domain_version", pa.string()), ("verifier_hash", pa.string()),
    ("sandbox_image", pa.string()), ("sandbox_image_digest", pa.string()),
    ("rlhub_version", pa.string()), ("policy", pa.string()), ("policy_info", pa.string()),
    ("seed", pa.int64()), ("split", pa.string()), ("run_id", pa.string()),
    ("lock_hash", pa.string()),
], metadata={"rlhub.schema_version": str(SCHEMA_VERSION)})


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, default=str)


def score_columns(score: Score, cls: type[Score] | None = None) -> dict[str, Any]:
    """A score as a stored turn holds it: the columns of ``cls`` (default: the score's class;
    see :func:`column_type`: ``components`` as pairs, ``exec`` as JSON text);
    :func:`stored_score` reads it back."""
    return {name: _kept(getattr(score, name), how)
            for name, _, how in _score_layout(cls or type(score))}


def stored_score(turn: dict[str, Any], cls: type[Score] = Score) -> Score:
    """The score a stored turn holds, from a raw row or one :func:`decode_row` decoded."""
    return cls(**{name: _read(turn[name], how) for name, _, how in _score_layout(cls)
                  if name in turn})


def _kept(value: Any, how: str) -> Any:
    if how == "map":
        return list(value.items())
    return _dumps(value) if how == "json" else value


def _read(value: Any, how: str) -> Any:
    if how == "map":
        return dict(value or [])
    if how == "json" and isinstance(value, str):
        return json.loads(value) if value else None
    return value


def turn_row(turn: Any) -> dict[str, Any]:
    """A turn as :data:`TURN` stores it. Its score gives Score's columns whatever its class: a
    plugin's subclass neither writes over the turn's own (a ``completion`` field) nor retypes
    one (``components: dict[str, Any]``)."""
    return {
        "index": turn.index, "messages": _dumps(turn.messages), "completion": turn.completion,
        **score_columns(turn.score, Score), "attempt": turn.attempt, "status": turn.status,
        "exec_status": turn.exec_status, "observation": turn.observation, "gen_s": turn.gen_s,
        "verify_s": turn.verify_s, "finish_reason": turn.finish_reason,
        "prompt_tokens": turn.prompt_tokens, "completion_tokens": turn.completion_tokens,
        "gen_attempts": turn.gen_attempts,
    }


def trajectory_row(traj: Trajectory) -> dict[str, Any]:
    """The Parquet row of one trajectory."""
    prov = traj.provenance
    row = {
        "schema_version": SCHEMA_VERSION, "trajectory_id": traj.trajectory_id,
        "job_key": traj.job_key, "domain": traj.domain, "task_id": traj.task.id,
        "task": _dumps(traj.task.to_dict()), "sample_index": traj.sample_index,
        "reward": traj.reward, "passed": traj.passed,
        "first_pass_attempt": traj.first_pass_attempt, "n_turns": len(traj.turns),
        "status": traj.status, "error": traj.error, "failure": traj.failure,
        "started_at": traj.started_at,
        "wall_s": traj.wall_s, "turns": [turn_row(t) for t in traj.turns],
        "policy_info": _dumps(prov.get("policy_info")),
    }
    for key in PROVENANCE:
        value = prov.get(key)
        row[key] = value if key == "seed" or value is None else str(value)
    return row


def decode_row(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row with JSON columns parsed and components turned back into dicts."""
    out = dict(row)
    out["task"] = json.loads(row["task"]) if row.get("task") else None
    out["policy_info"] = json.loads(row["policy_info"]) if row.get("policy_info") else None
    turns = []
    for t in row.get("turns") or []:
        t = dict(t)
        t["messages"] = json.loads(t["messages"]) if t.get("messages") else []
        t.update(stored_score(t).to_dict())
        turns.append(t)
    out["turns"] = turns
    return out


class TrajectoryStore:
    """Atomic Parquet parts under an fsspec URL (see the module docstring)."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None):
        import fsspec

        self.url = str(url)
        try:
            self.fs, self.root = fsspec.core.url_to_fs(self.url, **(storage_options or {}))
        except (ImportError, ValueError) as exc:
            raise StoreError(f"store {self.url!r}: expected a local path or a supported fsspec "
                             f"URL (memory://, s3://, ...), found: {exc}") from exc
        self.root = self.root.rstrip("/")
        self.local = "file" in _protocols(self.fs)

    def path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    # -- writing ----------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Write and remove a probe file; raise :class:`StoreError` naming the path if it fails."""
        probe = self.path(PARTS, f".probe-{uuid.uuid4().hex}")
        try:
            self.fs.makedirs(self.path(PARTS), exist_ok=True)
            with self.fs.open(probe, "wb") as fh:
                fh.write(b"ok")
            self.fs.rm(probe)
        except Exception as exc:  # noqa: BLE001 - every backend raises its own kinds
            raise StoreError(_write_error(self.path(PARTS), exc)) from exc

    def write(self, trajectories: Iterable[Trajectory]) -> str | None:
        """Commit ``trajectories`` as one part; returns its path (None when there were none)."""
        rows = [trajectory_row(t) for t in trajectories]
        if not rows:
            return None
        data = parquet_bytes(pa.Table.from_pylist(rows, schema=SCHEMA), compression="zstd")
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.parquet"
        final = self.path(PARTS, name)
        try:
            self._commit(final, data)
        except Exception as exc:  # noqa: BLE001
            raise StoreError(_write_error(final, exc)) from exc
        return final

    def _commit(self, final: str, data: bytes) -> None:
        self.fs.makedirs(self.path(PARTS), exist_ok=True)
        if not self.local:
            with self.fs.open(final, "wb") as fh:  # write-once name: visible only when complete
                fh.write(data)
            return
        tmp = self.path(PARTS, f".tmp-{uuid.uuid4().hex}")
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)
        except BaseException:
            _unlink(tmp)
            raise
        _fsync_dir(os.path.dirname(final))

    def write_json(self, name: str, value: Any) -> None:
        """Write a small JSON document next to the parts (atomically on a local disk)."""
        data = json.dumps(value, indent=2, sort_keys=True, default=str).encode()
        target = self.path(name)
        try:
            self.fs.makedirs(self.root, exist_ok=True)
            if self.local:
                tmp = self.path(f".tmp-{uuid.uuid4().hex}-{name}")
                with open(tmp, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, target)
            else:
                with self.fs.open(target, "wb") as fh:
                    fh.write(data)
        except Exception as exc:  # noqa: BLE001
            raise StoreError(_write_error(target, exc)) from exc

    def clean_temp(self) -> int:
        """Remove temp files a crashed writer left behind; returns how many."""
        if not self.fs.exists(self.path(PARTS)):
            return 0
        stale = [p for p in self.fs.ls(self.path(PARTS), detail=False)
                 if p.rsplit("/", 1)[-1].startswith((".tmp-", ".probe-"))]
        for p in stale:
            self.fs.rm(p)
        return len(stale)

    # -- reading ----------------------------------------------------------------------------

    def read_json(self, name: str) -> Any | None:
        target = self.path(name)
        if not self.fs.exists(target):
            return None
        with self.fs.open(target, "rb") as fh:
            return json.loads(fh.read())

    def parts(self) -> list[str]:
        if not self.fs.exists(self.path(PARTS)):
            return []
        names = self.fs.ls(self.path(PARTS), detail=False)
        return sorted(p for p in names if p.rsplit("/", 1)[-1].startswith("part-")
                      and p.endswith(".parquet"))

    def read_table(self) -> pa.Table:
        """Every committed trajectory as one table (empty with :data:`SCHEMA` if none)."""
        tables = [self._read_part(p) for p in self.parts()]
        return pa.concat_tables(tables) if tables else SCHEMA.empty_table()

    def _read_part(self, path: str) -> pa.Table:
        try:
            with self.fs.open(path, "rb") as fh:
                data = fh.read()
            table = parquet_table(data)
        except Exception as exc:  # noqa: BLE001
            raise StoreError(f"part {path}: expected a Parquet file, could not read it: "
                             f"{type(exc).__name__}: {exc}") from exc
        version = int((table.schema.metadata or {}).get(b"rlhub.schema_version", b"0"))
        if version > SCHEMA_VERSION or version < 1:
            raise StoreError(f"part {path}: expected schema version 1..{SCHEMA_VERSION}, found "
                             f"{version}; upgrade rlhub to read it")
        return upgrade_v1(table) if version == 1 else table

    def rows(self) -> list[dict[str, Any]]:
        """Every committed trajectory as a decoded dict (see :func:`decode_row`)."""
        return [decode_row(r) for r in self.read_table().to_pylist()]

    def job_keys(self) -> set[str]:
        return set(self.read_table().column("job_key").to_pylist())


_V1_FAULTS = {"policy_error": "policy", "env_error": "verifier", "verify_timeout": "verifier"}


def _v1_failure(record: dict[str, Any]) -> str:
    """A version-1 turn's or row's failure class, from its status; a failure that recorded an
    error was rlhub's (version 1 gave verifier crashes and judge outages the minimum reward)."""
    if record.get("passed"):
        return "none"
    if record.get("status") in _V1_FAULTS:
        return _V1_FAULTS[record["status"]]
    return "verifier" if record.get("error") else "answer"


def upgrade_v1(table: pa.Table) -> pa.Table:
    """A version-1 table in the current schema, each failure class inferred from its status."""
    rows = table.to_pylist()
    for row in rows:
        row["failure"], row["schema_version"] = _v1_failure(row), SCHEMA_VERSION
        for turn in row.get("turns") or []:
            turn["failure"] = _v1_failure(turn)
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _protocols(fs: Any) -> tuple[str, ...]:
    proto = fs.protocol
    return (proto,) if isinstance(proto, str) else tuple(proto)


def _write_error(path: str, exc: BaseException) -> str:
    cause = f"{type(exc).__name__}: {exc}"
    hint = "choose a writable --out"
    if isinstance(exc, OSError) and exc.errno == 28:
        hint = "free some space, then rerun with --resume"
    return f"could not write {path}: {cause}. Committed parts are intact; {hint}."


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- provenance ------------------------------------------------------------------------------


def sandbox_image_digest(manifest: Any) -> tuple[str | None, str | None]:
    """``(image, digest)`` of a docker-sandboxed domain; the digest is None when unresolvable."""
    sandbox = manifest.data.get("sandbox") or {}
    if sandbox.get("kind") != "docker":
        return None, None
    image = sandbox.get("image")
    if sandbox.get("digest") or not image:
        return image, sandbox.get("digest")
    try:
        import docker

        attrs = docker.from_env(timeout=5).images.get(image).attrs
    except Exception:  # noqa: BLE001 - no engine or no image: provenance says unknown
        return image, None
    digests = attrs.get("RepoDigests") or []
    return image, (digests[0] if digests else attrs.get("Id"))


def trajectory_provenance(registry: Registry, domain: Domain) -> dict[str, Any]:
    """The provenance columns shared by every trajectory of ``domain``.

    ``verifier_hash`` is :func:`rlhub.provenance.verifier_code_hash`, the same hash locks record.
    """
    from rlhub import __version__
    from rlhub.provenance import verifier_code_hash

    manifest = domain.manifest
    info = registry.plugins.get(manifest.plugin)
    image, digest = sandbox_image_digest(manifest)
    return {"plugin": manifest.plugin, "distribution": manifest.distribution,
            "plugin_version": info.version if info else None,
            "domain_version": manifest.version,
            "verifier_hash": verifier_code_hash(manifest, registry.services.verifier_refs(),
                                                registry.services.versions),
            "sandbox_image": image, "sandbox_image_digest": digest, "rlhub_version": __version__}
