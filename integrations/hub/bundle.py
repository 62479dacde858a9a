"""Environment bundles: everything needed to train on exactly the same environment, hashed.

A bundle is a folder::

    README.md                         the environment card (rlhub.integrations.hub.card)
    manifests/<plugin>--<name>.json   each domain's manifest
    data/<plugin>--<name>/test.parquet   the held-out task set; train.parquet: a train sample
    wheels/<dist>-<version>-*.whl     the plugin's wheel (plugin domains), or
    domains/<file>.yaml + datasets    the data-only domain files, with their datasets beside them
    docker/<sha256[:16]>/Dockerfile   each sandbox Dockerfile a manifest names
    rlhub.lock                        sha256 and size of every other file, each domain's record
                                      (rlhub.integrations.hub.lock.domain_record) and image digest

The bundle's id is its lock hash (:func:`rlhub.integrations.hub.lock.lock_hash`), so two bundles with the same
id hold the same bytes. :func:`build_bundle` makes one from installed domains;
:func:`verify_bundle` checks a downloaded one before anything of it is used.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from rlhub.errors import DomainNotFound, did_you_mean
from rlhub.integrations.hub.card import render_card, slug
from rlhub.integrations.hub.errors import HubError, IntegrityError
from rlhub.integrations.hub.fetching import lock_key
from rlhub.integrations.hub.lock import (
    LOCK_FILE,
    LOCK_VERSION,
    domain_record,
    dumps,
    parse_lock,
    portable_manifest,
    seal,
)
from rlhub.manifest import Manifest
from rlhub.provenance import sha256_file

if TYPE_CHECKING:
    from rlhub.plugins import Registry
    from rlhub.task import Task


@dataclass(frozen=True)
class Bundle:
    """A bundle folder and its (verified or freshly written) lock."""

    root: Path
    lock: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.lock["lock_hash"])

    @property
    def name(self) -> str:
        return str(self.lock["name"])

    def paths(self) -> list[str]:
        """Every file of the bundle, relative to its root, the lock last."""
        return sorted(self.lock["files"]) + [LOCK_FILE]


@dataclass(frozen=True)
class BuildOptions:
    """How many tasks to export, where the bundle will live, and an explicit wheel source."""

    test_size: int = 100
    train_size: int = 20
    ref: str | None = None
    source: Path | None = None


# -- choosing what to bundle -----------------------------------------------------------------


def select(registry: Registry, target: str) -> tuple[str, list[Manifest]]:
    """``(bundle name, manifests)`` for a domain id, a glob, or a plugin name."""
    if "/" in target:
        ids = registry.match([target])
        plugins = {registry.catalog.declared(i).plugin for i in ids}
        if len(ids) == 1 and not any(c in target for c in "*?["):
            return slug(ids[0]), [registry.manifest(ids[0])]
        if len(plugins) != 1:
            raise HubError(
                f"push {target!r}: expected domains of one plugin, found "
                f"{sorted(plugins)}; push each plugin separately"
            )
        return plugins.pop(), [registry.manifest(i) for i in ids]
    declared = [registry.catalog.declared(i) for i in registry.ids()]  # nothing validated yet
    ids = [d.id for d in declared if d.plugin == target]
    if not ids:
        known = {d.plugin for d in declared}
        raise DomainNotFound(
            did_you_mean(target, known, what="plugin or domain id", listing="rlhub list")
        )
    return target, [registry.manifest(i) for i in ids]


# -- writing ---------------------------------------------------------------------------------


class _Writer:
    """Adds files under a bundle root and remembers their hashes."""

    def __init__(self, root: Path):
        self.root = root
        self.files: dict[str, dict[str, Any]] = {}

    def add_bytes(self, rel: str, data: bytes) -> str:
        rel = safe_relpath(rel)
        path = self.root / rel
        if rel in self.files:
            if path.read_bytes() != data:
                raise HubError(f"bundle file {rel}: two different files map to this path")
            return rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return self._record(rel, path)

    def add_file(self, rel: str, src: Path) -> str:
        return self.add_bytes(rel, src.read_bytes())

    def adopt(self, rel: str) -> str:
        """Record a file already written under the root (e.g. a built wheel)."""
        rel = safe_relpath(rel)
        return self._record(rel, self.root / rel)

    def _record(self, rel: str, path: Path) -> str:
        self.files[rel] = {"sha256": sha256_file(path), "size": path.stat().st_size}
        return rel


def build_bundle(
    target: str,
    out_dir: str | os.PathLike[str],
    *,
    registry: Registry,
    options: BuildOptions = BuildOptions(),
) -> Bundle:
    """Build the bundle of ``target`` (domain id, glob or plugin name of ``registry``) in the
    empty ``out_dir``."""
    root = Path(out_dir)
    if root.exists() and any(root.iterdir()):
        raise HubError(f"bundle folder {root}: expected an empty folder, found files in it")
    root.mkdir(parents=True, exist_ok=True)
    name, manifests = select(registry, target)
    writer = _Writer(root)
    domains = {m.id: _domain_entry(writer, registry, m, options) for m in manifests}
    wheels = _add_wheels(
        writer, registry, [m for m in manifests if not m.source], options.source, domains
    )
    domain_files = _add_domain_files(writer, [m for m in manifests if m.source], domains)
    code = _code_line(wheels, domain_files)
    tasks = {d: {s: t["path"] for s, t in e["tasks"].items()} for d, e in domains.items()}
    writer.add_bytes("README.md", render_card(name, manifests, tasks, code, options.ref).encode())
    from rlhub import __version__

    lock = seal(
        {
            "rlhub_lock": LOCK_VERSION,
            "kind": "bundle",
            "name": name,
            "rlhub_version": __version__,
            "domains": domains,
            "wheels": wheels,
            "domain_files": domain_files,
            "files": writer.files,
        }
    )
    (root / LOCK_FILE).write_text(dumps(lock))
    return Bundle(root, lock)


def _code_line(wheels: list[dict[str, Any]], domain_files: list[str]) -> str:
    parts = [
        f"`{w['path']}`: the wheel of {w['distribution']} {w['version']} (installed by "
        "`rlhub pull --trust-remote-code`)"
        for w in wheels
    ]
    if domain_files:
        parts.append(
            "`domains/`: the data-only domain files and their datasets (registered by "
            "`rlhub pull` at once)"
        )
    return "; ".join(parts)


def _domain_entry(
    writer: _Writer, registry: Registry, manifest: Manifest, options: BuildOptions
) -> dict[str, Any]:
    entry = domain_record(manifest, registry)
    name = slug(manifest.id)
    entry["manifest"] = writer.add_bytes(
        f"manifests/{name}.json",
        (json.dumps(portable_manifest(manifest), indent=2, sort_keys=True) + "\n").encode(),
    )
    entry["tasks"] = _add_tasks(writer, registry.get(manifest.id), options)
    entry["code"] = None
    entry["dockerfile"] = _add_dockerfile(writer, manifest)
    entry["image_digest"] = image_digest(manifest)
    return entry


# -- task sets -------------------------------------------------------------------------------


def _add_tasks(writer: _Writer, domain: Any, options: BuildOptions) -> dict[str, Any]:
    manifest = domain.manifest
    splits = manifest.data["splits"]
    chosen = {
        "test": "test" if "test" in splits else splits[-1],
        "train": "train" if "train" in splits else splits[0],
    }
    sizes = {"test": options.test_size, "train": options.train_size}
    out: dict[str, Any] = {}
    for role, split in chosen.items():
        n = _cap(domain, manifest, split, sizes[role])
        try:
            tasks = domain.sample(n, split=split, seed=0)
        except Exception as exc:  # noqa: BLE001 - any failure to sample stops the push, named
            raise HubError(
                f"push: sampling {n} {split} tasks of {manifest.id} raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        rel = f"data/{slug(manifest.id)}/{role}.parquet"
        writer.add_bytes(rel, task_parquet(tasks, split))
        out[role] = {"path": rel, "split": split, "seed": 0, "n": len(tasks)}
    return out


def _cap(domain: Any, manifest: Manifest, split: str, n: int) -> int:
    """At most the number of distinct tasks the split holds, when that is known."""
    rows = getattr(domain, "rows", None)
    if callable(rows):
        return max(1, min(n, len(rows(split))))
    size = manifest.data.get("size")
    return max(1, min(n, int(size))) if size else max(1, n)


def task_parquet(tasks: Iterable[Task], split: str) -> bytes:
    """Tasks as Parquet bytes: one row per task, structured fields as JSON text."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for index, task in enumerate(tasks):
        chat = not isinstance(task.prompt, str)
        rows.append(
            {
                "id": task.id,
                "domain": task.domain,
                "split": split,
                "seed": 0,
                "index": index,
                "prompt": json.dumps(task.prompt) if chat else task.prompt,
                "prompt_format": "chat" if chat else "text",
                "answer": json.dumps(task.answer),
                "gold": task.gold,
                "meta": json.dumps(task.meta, sort_keys=True),
            }
        )
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("domain", pa.string()),
            ("split", pa.string()),
            ("seed", pa.int64()),
            ("index", pa.int64()),
            ("prompt", pa.string()),
            ("prompt_format", pa.string()),
            ("answer", pa.string()),
            ("gold", pa.string()),
            ("meta", pa.string()),
        ]
    )
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), sink)
    return sink.getvalue()


# -- code: wheels and domain files -----------------------------------------------------------


def _add_wheels(
    writer: _Writer,
    registry: Registry,
    manifests: list[Manifest],
    source: Path | None,
    domains: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    from rlhub.integrations.hub.wheel import build_wheel, source_dir

    dists: dict[str, str] = {}
    for m in manifests:
        info = registry.plugins.get(m.plugin)
        if info is None or not info.version:
            raise HubError(
                f"push: domain {m.id} comes from {m.distribution or 'code'}, which is "
                "not an installed distribution, so it cannot be bundled; package it "
                "(`rlhub new plugin NAME`) and install it with `pip install -e DIR`"
            )
        dists[info.distribution] = info.version
    if source is not None and len(dists) != 1:
        raise HubError(
            f"push: --source names one project, but the domains come from {sorted(dists)}"
        )
    wheels = []
    for dist, version in sorted(dists.items()):
        wheel = build_wheel(source or source_dir(dist), writer.root / "wheels")
        rel = writer.adopt(f"wheels/{wheel.name}")
        wheels.append({"path": rel, "distribution": dist, "version": version})
        for m in manifests:
            if registry.plugins[m.plugin].distribution == dist:
                domains[m.id]["code"] = rel
    return wheels


def _add_domain_files(
    writer: _Writer, manifests: list[Manifest], domains: dict[str, dict[str, Any]]
) -> list[str]:
    added = []
    for m in manifests:
        rel = _add_domain_file(writer, Path(m.source))
        domains[m.id]["code"] = rel
        added.append(rel)
    return sorted(set(added))


def _add_domain_file(writer: _Writer, path: Path) -> str:
    """Copy a domain file and its dataset; a dataset outside the file's folder is pulled in."""
    import yaml

    from rlhub.datadomain import read_domain_file

    raw = read_domain_file(path)
    dataset: str = raw["dataset"]
    local = None if "://" in dataset else path.parent / dataset
    if local is not None and not Path(dataset).is_absolute() and _within(local, path.parent):
        rel_data = posixpath.normpath(Path(dataset).as_posix())
        writer.add_file(f"domains/{rel_data}", local)
        return writer.add_file(f"domains/{path.name}", path)
    data = _read_dataset(dataset, path.parent)
    rel_data = f"data/{PurePosixPath(dataset.split('://', 1)[-1]).name}"
    writer.add_bytes(f"domains/{rel_data}", data)
    raw["dataset"] = rel_data
    return writer.add_bytes(f"domains/{path.name}", yaml.safe_dump(raw, sort_keys=False).encode())


def _read_dataset(dataset: str, base: Path) -> bytes:
    import fsspec

    url = dataset if "://" in dataset else str(base / dataset)
    try:
        with fsspec.open(url, "rb") as fh:
            return fh.read()
    except (OSError, ValueError) as exc:
        raise HubError(f"push: cannot read the dataset {url}: {exc}") from exc


def _within(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def _add_dockerfile(writer: _Writer, manifest: Manifest) -> str | None:
    dockerfile = (manifest.data.get("sandbox") or {}).get("dockerfile")
    if not dockerfile:
        return None
    path = Path(dockerfile)
    if not path.is_file():
        raise HubError(
            f"push: domain {manifest.id} names sandbox.dockerfile {dockerfile}, which is not a file"
        )
    return writer.add_file(f"docker/{sha256_file(path)[:16]}/Dockerfile", path)


def image_digest(manifest: Manifest) -> str | None:
    """The local Docker image id of a docker-sandboxed domain, when that image was built."""
    sandbox = manifest.data.get("sandbox") or {}
    if sandbox.get("kind") != "docker":
        return None
    if sandbox.get("image") or sandbox.get("digest"):
        from rlhub.store import sandbox_image_digest

        return sandbox_image_digest(manifest)[1]
    if not sandbox.get("dockerfile"):
        return None
    try:
        import docker

        from rlhub.sandbox.docker_backend import context_hash

        dockerfile = Path(sandbox["dockerfile"])
        tag = f"rlhub-sandbox:{context_hash(dockerfile, dockerfile.parent)}"
        return str(docker.from_env(timeout=5).images.get(tag).id)
    except Exception:  # noqa: BLE001 - no engine or image not built: the lock records None
        return None


# -- verifying -------------------------------------------------------------------------------


def safe_relpath(rel: str) -> str:
    """``rel`` as a normalised relative POSIX path; refuse absolute paths and ``..``."""
    norm = posixpath.normpath(rel)
    if rel.startswith("/") or norm.startswith("..") or norm in (".", "") or "\\" in rel:
        raise IntegrityError(f"bundle path {rel!r}: expected a relative path inside the bundle")
    return norm


def verify_bundle(
    root: str | os.PathLike[str], expected: str | None = None, where: str | None = None
) -> Bundle:
    """Check every file of a downloaded bundle against its lock; raise :class:`IntegrityError`.

    :param expected: The bundle id the reference pointed at, when known; the lock must hash to it.
    :param where: How to name the bundle in errors (its URL); defaults to the folder.
    """
    root = Path(root)
    where = where or str(root)
    lock_path = root / LOCK_FILE
    if lock_path.is_symlink():
        raise IntegrityError(
            f"bundle at {where}: {LOCK_FILE} is a symbolic link; a bundle holds regular files only"
        )
    if not lock_path.is_file():
        raise IntegrityError(
            f"bundle at {where}: expected {LOCK_FILE}, found none; it is not an "
            "rlhub bundle, or its push did not finish"
        )
    try:
        lock = parse_lock(lock_path.read_text(), f"bundle file {LOCK_FILE} at {where}")
    except HubError as exc:
        raise IntegrityError(str(exc)) from None
    if lock.get("kind") != "bundle":
        raise IntegrityError(
            f"{LOCK_FILE} at {where}: expected a bundle lock, found kind {lock.get('kind')!r}"
        )
    if expected is not None and lock["lock_hash"] != expected:
        raise IntegrityError(
            f"bundle file {LOCK_FILE} at {where}: expected the bundle "
            f"{expected}, found a lock hashing to {lock['lock_hash']}"
        )
    problems = [
        p for rel, info in sorted(lock["files"].items()) if (p := _file_problem(root, rel, info))
    ]
    if problems:
        raise IntegrityError(f"bundle at {where} failed verification: " + "; ".join(problems))
    return Bundle(root, lock)


def _file_problem(root: Path, rel: str, info: dict[str, Any]) -> str | None:
    """What is wrong with one listed file, or None. A link is never followed, so a bundle can
    neither smuggle in a file from outside itself nor learn its hash from the error."""
    try:
        path = root / lock_key(rel)
    except IntegrityError as exc:
        return str(exc)
    link = _first_link(root, path)
    if link is not None:
        return f"file {rel} is a symbolic link ({link}); a bundle holds regular files only"
    if not path.is_file():
        return f"file {rel} is listed in {LOCK_FILE} but missing"
    size = path.stat().st_size
    if size != info.get("size"):
        return f"file {rel} has the wrong size: expected {info.get('size')} bytes, found {size}"
    digest = sha256_file(path)
    if digest != info.get("sha256"):
        return f"file {rel} was tampered with: expected sha256 {info.get('sha256')}, found {digest}"
    return None


def _first_link(root: Path, path: Path) -> str | None:
    """The first part of ``path`` below ``root`` that is a symbolic link, as a relative path."""
    rel = path.relative_to(root)
    for depth in range(1, len(rel.parts) + 1):
        if (root / Path(*rel.parts[:depth])).is_symlink():
            return Path(*rel.parts[:depth]).as_posix()
    return None
