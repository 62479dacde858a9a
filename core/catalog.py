"""The catalog: every discovered domain as its source declared it, validated when first used.

Listing needs a domain's id, version, summary and tags; building or checking it needs a manifest
validated against the schema. So discovery keeps each declaration (:class:`Declared`) after
checking only what a listing shows (:func:`rlhub.manifest.listing_problems`), and
:meth:`Catalog.manifest` validates the whole manifest the first time the domain is asked for:
by ``Registry.get``, ``rlhub check`` and the contract kit, ``rlhub show``, a mixture, the server,
a lock or a publication. A bad manifest is refused there, naming plugin, domain and field, before
the domain is used; a listing of hundreds of domains validates none.

A **deferred** declaration is one a plugin cannot describe cheaply (a bridge that must import an
environment to learn its rewards): the listed fields plus ``describe: "module:attr"``, a callable
taking the declaration and returning the full manifest, or raising :class:`ManifestError` saying
why the environment cannot be offered. It is called on first use, or for all of them at once by
:meth:`Catalog.describe_all` (``rlhub list --all``, ``rlhub check --all``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from rlhub.errors import DomainNotFound, ManifestError, PluginError, boundary, did_you_mean
from rlhub.manifest import Manifest, listing_problems, listing_row
from rlhub.refs import load_object

__all__ = ["Catalog", "Declared"]


@dataclass(frozen=True)
class Declared:
    """One domain as discovery found it: the declared ``data`` and where it came from.

    ``manifest`` is set when the source was validated as it was read (a domain file).
    """

    data: dict[str, Any]
    plugin: str
    distribution: str
    source: str = ""
    pulled: bool = False
    manifest: Manifest | None = None

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def deferred(self) -> bool:
        """Its manifest is made on first use (``describe``), not declared."""
        return self.manifest is None and "describe" in self.data

    @classmethod
    def of(cls, manifest: Manifest, *, pulled: bool = False) -> Declared:
        """A declaration of an already validated manifest."""
        return cls(manifest.data, manifest.plugin, manifest.distribution, manifest.source,
                   pulled, manifest)

    def row(self) -> dict[str, Any]:
        """The row ``rlhub list --json`` prints, with ``deferred``."""
        return {**listing_row(self.data, self.plugin, self.distribution),
                "deferred": self.deferred}


def declare(raw: Any, plugin: str, distribution: str) -> Declared:
    """A plugin's declaration, if it can be listed; :class:`ManifestError` naming plugin, domain
    and field if not."""
    problems = listing_problems(raw, plugin)
    if problems:
        domain = raw.get("id", "<no id>") if isinstance(raw, dict) else "<not a mapping>"
        raise ManifestError(f"plugin {plugin!r}, domain {domain!r}: " + "; ".join(problems))
    return Declared(raw, plugin, distribution)


class Catalog(Mapping[str, Manifest]):
    """Domain id -> declaration, and -> validated manifest on first use (thread-safe).

    As a mapping, ``id in catalog`` and iteration cost nothing; ``catalog[id]`` validates.
    ``kinds`` names the sandbox backends a manifest may ask for (it may raise
    :class:`PluginError`, and then the kind is checked when the backend starts).
    """

    def __init__(self, kinds: Callable[[], list[str]]):
        self._declared: dict[str, Declared] = {}
        self._valid: dict[str, Manifest] = {}
        self._refused: dict[str, ManifestError] = {}
        self._kinds = kinds
        self._lock = threading.RLock()

    # -- declarations ----------------------------------------------------------------------

    def declared(self, domain_id: str) -> Declared:
        """What discovery found for ``domain_id`` (nothing validated)."""
        try:
            return self._declared[domain_id]
        except KeyError:
            msg = did_you_mean(domain_id, self._declared, what="domain", listing="rlhub list")
            raise DomainNotFound(msg) from None

    def put(self, declared: Declared) -> None:
        self._declared[declared.id] = declared

    def pop(self, domain_id: str) -> Declared:
        return self._declared.pop(domain_id)

    def rows(self) -> list[dict[str, Any]]:
        """Every domain's listing row, sorted by id; nothing is validated or described."""
        return [self._declared[i].row() for i in sorted(self._declared)]

    # -- manifests -------------------------------------------------------------------------

    def manifest(self, domain_id: str) -> Manifest:
        """The validated manifest of ``domain_id``; :class:`ManifestError` when it is invalid
        (or, deferred, cannot be described), naming plugin, domain and field."""
        found = self._valid.get(domain_id)
        if found is not None:
            return found
        declared = self.declared(domain_id)
        with self._lock:
            if domain_id not in self._valid and domain_id not in self._refused:
                try:
                    self._valid[domain_id] = self._validate(declared)
                except ManifestError as exc:
                    self._refused[domain_id] = exc
                else:  # a described domain lists as what it turned out to be
                    self._declared[domain_id] = Declared.of(self._valid[domain_id],
                                                            pulled=declared.pulled)
            if domain_id in self._refused:
                raise self._refused[domain_id]
            return self._valid[domain_id]

    def _validate(self, declared: Declared) -> Manifest:
        if declared.manifest is not None:
            return declared.manifest
        raw = self._describe(declared) if declared.deferred else declared.data
        manifest = Manifest.parse(dict(raw), plugin=declared.plugin,
                                  distribution=declared.distribution, source=declared.source)
        if manifest.id != declared.id:
            raise ManifestError(f"plugin {declared.plugin!r}, domain {declared.id!r}: field id: "
                                f"expected {declared.id!r} as declared, found {manifest.id!r}")
        self._check_kind(manifest)
        return manifest

    def _describe(self, declared: Declared) -> dict[str, Any]:
        where = f"plugin {declared.plugin!r}, domain {declared.id!r}"
        try:
            with boundary(PluginError, f"{where}: describe {declared.data['describe']}"):
                raw = load_object(declared.data["describe"])(dict(declared.data))
        except ManifestError as exc:
            raise ManifestError(f"{where}: {exc}") from exc
        except PluginError as exc:
            raise ManifestError(str(exc)) from exc
        if not isinstance(raw, dict):
            raise ManifestError(f"{where}: describe returned {type(raw).__name__}, expected "
                                "the manifest as a mapping")
        return raw

    def _check_kind(self, manifest: Manifest) -> None:
        """Refuse a manifest whose ``sandbox.kind`` names no registered backend."""
        try:
            kinds = ["none", *self._kinds()]
        except PluginError:  # reported at discovery; the backend fails when it starts
            return
        kind = manifest.data["sandbox"].get("kind", "none")
        if kind not in kinds:
            raise ManifestError(
                f"plugin {manifest.plugin!r}, domain {manifest.id!r}: field sandbox.kind: "
                + did_you_mean(kind, kinds, what="sandbox backend", listing="rlhub sandbox info"))

    def describe_all(self) -> list[tuple[Declared, str]]:
        """Describe every deferred domain now; withdraw and return those that cannot be, each
        with the reason (the plugin's own words when it refused)."""
        failed = []
        for domain_id in [i for i, d in self._declared.items() if d.deferred]:
            try:
                self.manifest(domain_id)
            except ManifestError as exc:
                cause = exc.__cause__
                failed.append((self.pop(domain_id),
                               str(cause if isinstance(cause, ManifestError) else exc)))
        return failed

    # -- Mapping ---------------------------------------------------------------------------

    def __getitem__(self, domain_id: str) -> Manifest:
        if domain_id not in self._declared:
            raise KeyError(domain_id)
        return self.manifest(domain_id)

    def __contains__(self, domain_id: object) -> bool:
        return domain_id in self._declared

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._declared))

    def __len__(self) -> int:
        return len(self._declared)
