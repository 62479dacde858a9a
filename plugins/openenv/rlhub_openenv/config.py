"""Which OpenEnv environments to bridge, and their manifests.

OpenEnv environments are servers, not installed packages, so they are declared: one YAML file
each, found in the ``os.pathsep``-separated ``RLHUB_OPENENV_ENVS`` (files or folders of ``*.yaml``)
and in ``$RLHUB_HOME/openenv/``::

    name: guess                    # the domain is openenv/guess-v1
    url: http://127.0.0.1:8001     # a running server, or:
    image: guess-env:latest        # a container image, started on first use (docker run -p)
    license: BSD-3-Clause          # the environment's license (SPDX)
    max_turns: 8                   # steps per episode [8]
    reward_range: [0, 1]           # what the summed step rewards can reach [0, 1]
    reset: {difficulty: easy}      # extra reset arguments [none]

A server is described once (``GET /metadata`` for name, version and description; ``GET /schema``
for the action field that carries the completion: the action's only required string field) and
the description cached in ``openenv-envs.json`` under :func:`rlhub.rlhub_cache` by the file's
content, so a listing makes no network call. A server that cannot be reached when first described is left out
with the reason, and tried again at the next listing. An image is described from its YAML alone
(``version`` there, default ``0``) since starting it to ask would make listing slow.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from rlhub import rlhub_cache, rlhub_home

ENV_VAR = "RLHUB_OPENENV_ENVS"
DESCRIBE_TIMEOUT_S = 10.0
_memo: dict[str, list[dict[str, Any]]] = {}  # by the declared files and $RLHUB_HOME


def spec_files() -> list[Path]:
    roots = [Path(p) for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    roots.append(rlhub_home() / "openenv")
    files: list[Path] = []
    for root in roots:
        files += sorted(root.glob("*.yaml")) if root.is_dir() else [root] if root.exists() else []
    return files


def domain_id(name: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9_.+-]+", "-", str(name)).strip("-._+") or "env"
    return f"openenv/{clean}" if re.search(r"-v[0-9]+$", clean) else f"openenv/{clean}-v1"


def described() -> list[dict[str, Any]]:
    """Every declared environment as ``{"id", "manifest"}`` or ``{"id", "excluded"}``."""
    files = spec_files()
    key = json.dumps([str(rlhub_home()), *map(str, files)])
    if key in _memo:
        return _memo[key]
    cache_path = rlhub_cache() / "openenv-envs.json"
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    entries, fresh = [], {}
    for path in files:
        text = path.read_text()
        key = hashlib.sha256(text.encode()).hexdigest()
        entry = cache.get(key) or describe(path, text)
        if "manifest" in entry:
            fresh[key] = entry
        entries.append(entry)
    if fresh != cache:
        _save(cache_path, fresh)
    _memo[key] = entries
    return entries


def _save(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass


def describe(path: Path, text: str) -> dict[str, Any]:
    """The manifest of the environment declared in ``path``, or why it is left out."""
    import yaml  # only for a file not described yet: a cached listing never imports it

    try:
        spec = yaml.safe_load(text)
        if not isinstance(spec, dict) or not spec.get("name"):
            return {"id": f"openenv/{path.stem}", "excluded": f"{path}: expected a mapping with "
                    "'name' and 'url' or 'image'"}
        did = domain_id(spec["name"])
        if bool(spec.get("url")) == bool(spec.get("image")):
            return {"id": did, "excluded": f"{path}: expected exactly one of 'url' and 'image'"}
        info = _server_info(spec["url"]) if spec.get("url") else {}
    except Exception as exc:  # noqa: BLE001 - an unreachable or broken server is reported
        return {"id": domain_id(Path(path).stem), "excluded": f"describing it failed: "
                f"{type(exc).__name__}: {exc}"[:400]}
    return {"id": did, "manifest": manifest(did, spec, info)}


def _server_info(url: str) -> dict[str, Any]:
    import httpx

    base = url.rstrip("/")
    with httpx.Client(timeout=DESCRIBE_TIMEOUT_S, trust_env=False) as client:
        meta = client.get(f"{base}/metadata").raise_for_status().json()
        schema = client.get(f"{base}/schema").raise_for_status().json()
    return {"metadata": meta, "action": action_field(schema.get("action") or {})}


def action_field(schema: dict[str, Any]) -> str:
    """The action field that carries the completion: the only required string field."""
    props = schema.get("properties") or {}
    fields = [f for f in schema.get("required") or [] if props.get(f, {}).get("type") == "string"]
    if len(fields) != 1:
        raise ValueError(f"expected an action schema with exactly one required string field, "
                         f"found required {schema.get('required')}")
    return fields[0]


def manifest(did: str, spec: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    meta = info.get("metadata") or {}
    lo, hi = (float(x) for x in spec.get("reward_range", [0, 1]))
    version = str(spec.get("version") or meta.get("version") or "0")
    summary = str(spec.get("summary") or meta.get("description") or f"OpenEnv {spec['name']}")
    return {
        "id": did, "version": version, "summary": summary[:300],
        "license": str(spec.get("license") or "NOASSERTION"),
        "tags": ["openenv", "bridged", "multi-turn"], "determinism": "seeded", "gold": False,
        "size": None,
        "reward": {"range": [lo, hi], "components": {"reward": {
            "weight": 1.0, "range": [lo, hi], "description": "the sum of OpenEnv step rewards"}}},
        "turns": {"max_turns": int(spec.get("max_turns", 8)), "repair_discount": 1.0},
        "verify_timeout_s": 60, "factory": "rlhub_openenv.domain:make",
        "params": {"url": spec.get("url"), "image": spec.get("image"),
                   "action": spec.get("action") or info.get("action") or "message",
                   "reset": spec.get("reset") or {},
                   "bridge": {"plugin": "rlhub-openenv", "source": meta.get("name") or spec["name"],
                              "source_version": version}},
    }
