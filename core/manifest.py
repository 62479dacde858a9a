"""Domain manifests: the cheap, declarative half of a domain.

A manifest is a JSON-compatible dict validated against ``schemas/manifest.schema.json`` (JSON Schema
draft 2020-12). Plugins return manifests from ``rlhub_domains()``; the code that builds the domain is
named by ``factory`` (``"module:attr"``) and imported only when the domain is first used.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from rlhub.errors import ManifestError

# A verification may take this many times its domain's verify_timeout_s (the server and the
# rollout loop both wait this long).
VERIFY_TIMEOUT_FACTOR = 3.0


def defaults() -> dict[str, Any]:
    """Fresh default values for the optional manifest fields."""
    return {
        "splits": ["train", "test"],
        "determinism": "seeded",
        "gold": True,
        "size": None,
        "sandbox": {"kind": "none"},
        "turns": {"max_turns": 1, "repair_discount": 1.0},
        "verify_timeout_s": 10.0,
        "params": {},
    }


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """Load one of the JSON Schemas shipped in ``rlhub/schemas``."""
    text = resources.files("rlhub").joinpath("schemas", f"{name}.schema.json").read_text()
    return json.loads(text)


@functools.cache
def _validator(name: str) -> Any:
    from rlhub.jsonschemas import validator  # deferred: a listing of known-valid manifests
                                             # never imports jsonschema

    return validator(schema(name))


class ValidCache:
    """Content hashes of manifests already found valid, kept in :func:`rlhub.home.rlhub_cache`.

    Validating a manifest costs milliseconds and a listing validates hundreds; a manifest whose
    canonical JSON, with the plugin and distribution that declare it, hashes to a known-valid
    digest (under the same schema) is not validated again. Only plain JSON data is cached.
    """

    def __init__(self) -> None:
        from rlhub.home import rlhub_cache

        tag = hashlib.sha256(json.dumps(schema("manifest"), sort_keys=True).encode()).hexdigest()
        self.path = rlhub_cache() / f"valid-manifests-{tag[:16]}.txt"
        try:
            self.known = set(self.path.read_text().split())
        except OSError:
            self.known = set()
        self.new: list[str] = []

    @staticmethod
    def key(raw: Any, plugin: str, distribution: str) -> str:
        """The digest of ``raw`` with the plugin and distribution it came from, or "" (never
        cached) when ``raw`` is not plain JSON data: a tuple or an object would encode like a
        list or a string that validates differently."""
        if not _plain(raw):
            return ""
        blob = json.dumps([plugin, distribution, raw], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def add(self, key: str) -> None:
        self.known.add(key)
        self.new.append(key)

    def save(self) -> None:
        if not self.new:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as fh:
                fh.write("\n".join(self.new) + "\n")
        except OSError:
            pass  # a read-only home only costs speed
        self.new.clear()


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON data exactly: dicts with string keys, lists, strings, numbers,
    booleans and None (a quick walk, no recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            if not all(type(k) is str for k in item):
                return False
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        elif type(item) not in (str, int, float, bool, type(None)):
            return False
    return True


def schema_errors(name: str, data: Any) -> list[str]:
    """Return one readable line per violation of schema ``name``, empty when ``data`` is valid."""
    lines = []
    for err in sorted(_validator(name).iter_errors(data), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        lines.append(f"field {where}: {err.message}")
    return lines


@dataclass(frozen=True)
class Manifest:
    """A validated domain manifest, with defaults filled in.

    ``plugin`` and ``distribution`` record where the manifest came from; they are not part of the
    schema and are set by the plugin manager.
    """

    data: dict[str, Any]
    plugin: str = ""
    distribution: str = ""
    source: str = field(default="", compare=False)

    @classmethod
    def parse(cls, raw: Any, *, plugin: str, distribution: str = "", source: str = "",
              cache: ValidCache | None = None) -> Manifest:
        """Validate ``raw`` and fill defaults; raise :class:`ManifestError` naming plugin, domain, field.

        ``raw`` becomes part of the manifest: callers hand over a fresh dict.
        """
        domain = raw.get("id", "<no id>") if isinstance(raw, dict) else "<not a mapping>"
        key = ValidCache.key(raw, plugin, distribution) if cache is not None else ""
        errors = [] if key and key in cache.known else schema_errors("manifest", raw)  # type: ignore[union-attr]
        if not errors and not raw["id"].startswith(f"{plugin}/"):
            errors.append(f"field id: expected the namespace '{plugin}/' of plugin {plugin!r}")
        if not errors:
            errors = _reward_errors(raw["reward"])
        if errors:
            raise ManifestError(f"plugin {plugin!r}, domain {domain!r}: " + "; ".join(errors))
        if cache is not None and key and key not in cache.known:
            cache.add(key)
        data = defaults()
        for name, value in raw.items():
            if isinstance(value, dict) and isinstance(data.get(name), dict):
                data[name] = {**data[name], **value}
            else:
                data[name] = value
        return cls(data, plugin=plugin, distribution=distribution, source=source)

    @property
    def id(self) -> str:
        return self.data["id"]

    @property
    def version(self) -> str:
        return self.data["version"]

    @property
    def tags(self) -> list[str]:
        return list(self.data["tags"])

    @property
    def reward_range(self) -> tuple[float, float]:
        lo, hi = self.data["reward"]["range"]
        return float(lo), float(hi)

    @property
    def components(self) -> dict[str, dict[str, Any]]:
        return self.data["reward"]["components"]

    @property
    def max_turns(self) -> int:
        return int(self.data["turns"]["max_turns"])

    @property
    def repair_discount(self) -> float:
        return float(self.data["turns"]["repair_discount"])

    @property
    def verify_deadline_s(self) -> float:
        """How long a caller waits for one verification before recording it as timed out:
        ``verify_timeout_s`` (10 s when unset) times :data:`VERIFY_TIMEOUT_FACTOR`, so the
        domain's own limits (its sandbox wall time, say) always fire first."""
        return float(self.data.get("verify_timeout_s") or 10.0) * VERIFY_TIMEOUT_FACTOR

    @property
    def hackable(self) -> list[str]:
        """Probe classes the plugin declares this domain still fails (``hackable``)."""
        return list(self.data.get("hackable", []))

    @property
    def scoring(self) -> str | None:
        """``exact`` or ``partial`` as the manifest declares it, or None when it says nothing."""
        scoring = self.data.get("scoring")
        return scoring["kind"] if scoring else None

    def summary_row(self) -> dict[str, Any]:
        """The row ``rlhub list --json`` prints for this domain."""
        return {
            "id": self.id,
            "plugin": self.plugin,
            "distribution": self.distribution,
            "version": self.version,
            "tags": self.tags,
            "summary": self.data["summary"],
            "scoring": self.scoring,
            "hackable": self.hackable,
        }


def _reward_errors(reward: dict[str, Any]) -> list[str]:
    lo, hi = reward["range"]
    errors = [] if lo < hi else [f"field reward.range: expected low < high, found {[lo, hi]}"]
    for name, comp in reward["components"].items():
        clo, chi = comp.get("range", [0, 1])
        if not clo <= chi:
            errors.append(f"field reward.components.{name}.range: expected low <= high")
    return errors
