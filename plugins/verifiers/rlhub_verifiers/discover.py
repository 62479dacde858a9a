"""Find the installed verifiers environments and their manifests without importing verifiers.

An installed verifiers environment is a distribution that requires ``verifiers`` and whose module
(the distribution name, ``-`` replaced by ``_``: the module ``vf-eval NAME`` imports) exists. Its
manifest comes from :mod:`rlhub_verifiers.describe`, which imports the environment and verifiers
(seconds); so descriptions are cached in ``vf-envs.json`` in :func:`rlhub.rlhub_cache`, keyed by the
taskset, the distribution's name and version, the content of its module files and the describer
(verifiers' version, this plugin's describing code), and a new or changed environment is
described in a child interpreter. ``rlhub list`` therefore never imports verifiers.

The list of distributions is itself cached, keyed by the mtimes of the ``sys.path`` folders
(installing or removing a distribution changes its folder's mtime), so a listing reads no
distribution metadata unless something was installed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from rlhub import rlhub_cache

SELF = {"rlhub-verifiers", "rlhub"}
REQUIRES = re.compile(r"^Requires-Dist:\s*verifiers\s*($|[<>=!~;\[(\s])",
                      re.IGNORECASE | re.MULTILINE)
MAX_FILES = 2000
DESCRIBE_TIMEOUT_S = 900
_memo: dict[str, list[dict[str, Any]]] = {}  # by sys.path fingerprint and $RLHUB_HOME


@dataclass(frozen=True)
class Source:
    """One installed verifiers environment: what ``vf-eval`` calls it and where it comes from."""

    taskset: str
    module: str
    distribution: str
    version: str
    license: str
    summary: str


def module_name(taskset: str) -> str:
    """The module verifiers imports for a taskset id (``owner/name@1.0`` -> ``name``)."""
    return taskset.rsplit("/", 1)[-1].split("@", 1)[0].replace("-", "_").lower()


def _license(meta: Any) -> str:
    text = meta.get("License-Expression") or meta.get("License") or ""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if first and len(first) <= 64 else "NOASSERTION"


def _source(dist: metadata.Distribution) -> Source | None:
    if not REQUIRES.search(dist.read_text("METADATA") or ""):  # a plain read: no email parsing
        return None
    meta = dist.metadata
    name = meta["Name"]
    if not name or name.lower() in SELF:
        return None
    module = module_name(name)
    if importlib.util.find_spec(module) is None:
        return None
    return Source(name, module, name, dist.version, _license(meta), (meta["Summary"] or "").strip())


def _path_fingerprint() -> str:
    parts = []
    for entry in sys.path:
        try:
            parts.append(f"{entry}:{os.stat(entry or '.').st_mtime_ns}")
        except OSError:
            parts.append(f"{entry}:-")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _scan() -> list[Source]:
    found: dict[str, Source] = {}
    for dist in metadata.distributions():
        source = _source(dist)
        if source is not None:
            found.setdefault(source.distribution.lower(), source)
    return sorted(found.values(), key=lambda s: s.taskset)


def _module_files(module: str) -> list[Path]:
    spec = importlib.util.find_spec(module)
    if spec is None:
        return []
    if spec.submodule_search_locations:
        files: list[Path] = []
        for root in spec.submodule_search_locations:
            files += sorted(Path(root).rglob("*.py"))[:MAX_FILES]
        return files
    return [Path(spec.origin)] if spec.origin else []


def _describer() -> str:
    """What describes an environment: verifiers' version and this plugin's describing code."""
    try:
        version = metadata.version("verifiers")
    except metadata.PackageNotFoundError:
        version = None
    code = (Path(__file__).parent / "describe.py").read_bytes()
    return json.dumps([version, hashlib.sha256(code).hexdigest()])


def stamp(source: Source) -> str:
    """The cache key of a description: the environment (its taskset id, distribution, version)
    and the content of every module file (not their sizes and times, which a copy keeps while
    the code changes), with the describer that produced it."""
    digest = hashlib.sha256(json.dumps([asdict(source), _describer()], sort_keys=True).encode())
    for path in _module_files(source.module):
        try:
            content = path.read_bytes()
        except OSError:
            continue
        digest.update(f"{path}\0{hashlib.sha256(content).hexdigest()}\n".encode())
    return digest.hexdigest()


class Cache:
    """``$RLHUB_HOME/cache/vf-envs.json``: the last scan and every description, by stamp."""

    def __init__(self) -> None:
        self.path = rlhub_cache() / "vf-envs.json"
        try:
            self.data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.data = {}
        self.dirty = False

    def sources(self) -> list[Source]:
        fingerprint = _path_fingerprint()
        scan = self.data.get("scan", {})
        if scan.get("fingerprint") == fingerprint:
            return [Source(**row) for row in scan["sources"]]
        sources = _scan()
        self.data["scan"] = {"fingerprint": fingerprint, "sources": [asdict(s) for s in sources]}
        self.dirty = True
        return sources

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self.data))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only home only costs speed


def described(*, refresh: bool = False) -> list[dict[str, Any]]:
    """Every installed environment as ``{"id", "manifest"}`` or ``{"id", "excluded"}``."""
    key = f"{_path_fingerprint()}:{rlhub_cache()}"
    if key in _memo and not refresh:
        return _memo[key]
    cache = Cache()
    known = cache.data.setdefault("described", {})
    sources = cache.sources()
    stamps = {s.taskset: stamp(s) for s in sources}
    fresh: dict[str, dict[str, Any]] = {}
    missing = [s for s in sources if refresh or stamps[s.taskset] not in known]
    for source, entry in zip(missing, describe_in_child(missing) if missing else []):
        fresh[source.taskset] = entry
        if entry.pop("cache", True):  # a crashed or timed-out child is retried next time
            known[stamps[source.taskset]] = entry
    cache.data["described"] = {stamps[s.taskset]: known[stamps[s.taskset]] for s in sources
                               if stamps[s.taskset] in known}
    cache.dirty = cache.dirty or bool(missing) or len(known) != len(cache.data["described"])
    cache.save()
    _memo[key] = [fresh.get(s.taskset) or known[stamps[s.taskset]] for s in sources]
    return _memo[key]


def describe_in_child(sources: list[Source]) -> list[dict[str, Any]]:
    """Describe ``sources`` in a fresh interpreter (it imports verifiers; this process does not)."""
    import subprocess

    payload = json.dumps([asdict(s) for s in sources])
    try:
        out = subprocess.run([sys.executable, "-m", "rlhub_verifiers.describe"], input=payload,
                             capture_output=True, text=True, timeout=DESCRIBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return [_failed(s, f"describing it took over {DESCRIBE_TIMEOUT_S} s") for s in sources]
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
        return [_failed(s, f"describing it failed: {tail}") for s in sources]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _failed(source: Source, reason: str) -> dict[str, Any]:
    from rlhub_verifiers.naming import domain_id

    return {"id": domain_id(source.taskset), "excluded": reason, "cache": False}
