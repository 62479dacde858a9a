"""Domain manifests: the cheap, declarative half of a domain.

A manifest is a JSON-compatible dict validated against ``schemas/manifest.schema.json`` (JSON Schema
draft 2020-12). Plugins return manifests from ``rlhub_domains()``; the code that builds the domain is
named by ``factory`` (``"module:attr"``) and imported only when the domain is first used.

Listing a domain reads only the fields :func:`listing_problems` checks (id, version, summary, tags,
scoring, hackable); the whole manifest is validated by :meth:`Manifest.parse` when the domain is
first used or checked (:mod:`rlhub.catalog`).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
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
    return json.loads(Path(__file__).with_name("schemas").joinpath(f"{name}.schema.json")
                      .read_text(encoding="utf-8"))


@functools.cache
def _validator(name: str) -> Any:
    from rlhub.jsonschemas import validator  # deferred: listing never validates a whole manifest

    return validator(schema(name))


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
    def parse(cls, raw: Any, *, plugin: str, distribution: str = "",
              source: str = "") -> Manifest:
        """Validate ``raw`` and fill defaults; raise :class:`ManifestError` naming plugin, domain, field.

        ``raw`` becomes part of the manifest: callers hand over a fresh dict.
        """
        domain = raw.get("id", "<no id>") if isinstance(raw, dict) else "<not a mapping>"
        errors = schema_errors("manifest", raw)
        if not errors and not raw["id"].startswith(f"{plugin}/"):
            errors.append(_namespace_error(plugin))
        if not errors:
            errors = _reward_errors(raw["reward"])
        if errors:
            raise ManifestError(f"plugin {plugin!r}, domain {domain!r}: " + "; ".join(errors))
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
        return listing_row(self.data, self.plugin, self.distribution)


def listing_row(data: dict[str, Any], plugin: str, distribution: str) -> dict[str, Any]:
    """The row ``rlhub list --json`` prints for a manifest's ``data`` (checked by
    :func:`listing_problems`, or validated)."""
    scoring = data.get("scoring")
    return {"id": data["id"], "plugin": plugin, "distribution": distribution,
            "version": data["version"], "tags": list(data["tags"]), "summary": data["summary"],
            "scoring": scoring["kind"] if scoring else None,
            "hackable": list(data.get("hackable", []))}


def listing_problems(raw: Any, plugin: str) -> list[str]:
    """What keeps ``raw`` from being listed, one ``field F: expected ..., found ...`` line each.

    Only the fields a listing shows are checked; :meth:`Manifest.parse` checks the rest on use.
    """
    if not isinstance(raw, dict):
        return [f"field (top level): expected a mapping, found {type(raw).__name__}"]
    domain = raw.get("id")
    if not isinstance(domain, str) or not _id_pattern().search(domain):
        return [f"field id: expected '<plugin>/<name>-v<N>', found {domain!r}"]
    if not domain.startswith(f"{plugin}/"):
        return [_namespace_error(plugin)]
    problems = [f"field {name}: expected a string, found {raw.get(name)!r}"
                for name in ("version", "summary") if not isinstance(raw.get(name), str)]
    for name, required in (("tags", True), ("hackable", False)):
        value = raw.get(name, None if required else [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"field {name}: expected a list of strings, found {value!r}")
    scoring = raw.get("scoring")
    if scoring is not None and not (isinstance(scoring, dict)
                                    and isinstance(scoring.get("kind"), str)):
        problems.append(f"field scoring: expected a mapping with a 'kind', found {scoring!r}")
    return problems


@functools.cache
def _id_pattern() -> re.Pattern[str]:
    return re.compile(schema("manifest")["properties"]["id"]["pattern"])


def _namespace_error(plugin: str) -> str:
    return f"field id: expected the namespace '{plugin}/' of plugin {plugin!r}"


def _reward_errors(reward: dict[str, Any]) -> list[str]:
    lo, hi = reward["range"]
    errors = [] if lo < hi else [f"field reward.range: expected low < high, found {[lo, hi]}"]
    for name, comp in reward["components"].items():
        clo, chi = comp.get("range", [0, 1])
        if not clo <= chi:
            errors.append(f"field reward.components.{name}.range: expected low <= high")
    return errors
