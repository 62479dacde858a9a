"""Domain manifests: the cheap, declarative half of a domain.

A manifest is a JSON-compatible dict validated against ``schemas/manifest.schema.json`` (JSON Schema
draft 2020-12). Plugins return manifests from ``rlhub_domains()``; the code that builds the domain is
named by ``factory`` (``"module:attr"``) and imported only when the domain is first used.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from rlhub.errors import ManifestError

DEFAULTS: dict[str, Any] = {
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
    import jsonschema  # deferred: listing pays for it only once, when it validates

    cls = jsonschema.Draft202012Validator
    return cls(schema(name), format_checker=cls.FORMAT_CHECKER)


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
    def parse(cls, raw: Any, *, plugin: str, distribution: str = "", source: str = "") -> Manifest:
        """Validate ``raw`` and fill defaults; raise :class:`ManifestError` naming plugin, domain, field."""
        domain = raw.get("id", "<no id>") if isinstance(raw, dict) else "<not a mapping>"
        errors = schema_errors("manifest", raw)
        if not errors and not raw["id"].startswith(f"{plugin}/"):
            errors.append(f"field id: expected the namespace '{plugin}/' of plugin {plugin!r}")
        if not errors:
            errors = _reward_errors(raw["reward"])
        if errors:
            raise ManifestError(f"plugin {plugin!r}, domain {domain!r}: " + "; ".join(errors))
        data = copy.deepcopy(DEFAULTS)
        for key, value in raw.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **copy.deepcopy(value)}
            else:
                data[key] = copy.deepcopy(value)
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

    def summary_row(self) -> dict[str, Any]:
        """The row ``rlhub list --json`` prints for this domain."""
        return {
            "id": self.id,
            "plugin": self.plugin,
            "distribution": self.distribution,
            "version": self.version,
            "tags": self.tags,
            "summary": self.data["summary"],
        }


def _reward_errors(reward: dict[str, Any]) -> list[str]:
    lo, hi = reward["range"]
    errors = [] if lo < hi else [f"field reward.range: expected low < high, found {[lo, hi]}"]
    for name, comp in reward["components"].items():
        clo, chi = comp.get("range", [0, 1])
        if not clo <= chi:
            errors.append(f"field reward.components.{name}.range: expected low <= high")
    return errors
