"""Plugin discovery and the domain registry.

Discovery order (documented in PLUGINS.md):

1. Entry points in the group ``rlhub.plugins`` (skipped when ``RLHUB_DISABLE_AUTOLOAD=1``); the
   entry point's name is the plugin's name and the namespace of its domain ids.
2. Modules named in ``RLHUB_PLUGINS`` (comma-separated); the plugin name is the module's
   ``PLUGIN_NAME`` attribute, or the last part of its dotted name.
3. Data-only domain files: every ``--domains-file FILE``, then each file or folder of ``*.yaml`` in
   ``RLHUB_DOMAINS_PATH`` (``os.pathsep``-separated), then environments pulled into
   ``$RLHUB_HOME/envs``.

Plugins named in ``RLHUB_BLOCK_PLUGINS`` (comma-separated) or passed as ``block=`` are not loaded.
A plugin that fails to import, or whose hook raises, is recorded in :attr:`Registry.errors` and
reported as ``error loading plugin "<name>" from <distribution>: <cause>``; every other plugin keeps
working. The registry holds manifests only; a domain's code is imported on first :meth:`get`.
"""

from __future__ import annotations

import fnmatch
import importlib
import os
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from rlhub import hookspecs
from rlhub.errors import DomainNotFound, ManifestError, PluginError, boundary, did_you_mean
from rlhub.manifest import Manifest

ENTRY_POINT_GROUP = "rlhub.plugins"
hookimpl = pluggy.HookimplMarker("rlhub")


@dataclass(frozen=True)
class PluginInfo:
    """Where a loaded plugin came from."""

    name: str
    distribution: str
    version: str
    module: str


@dataclass(frozen=True)
class Excluded:
    """An environment a plugin found but left out (``rlhub_excluded_domains``), and why."""

    id: str
    plugin: str
    reason: str


@dataclass(frozen=True)
class LoadError:
    """A plugin or domain file that could not be loaded, and why."""

    name: str
    distribution: str
    cause: str

    def __str__(self) -> str:
        return f'error loading plugin "{self.name}" from {self.distribution}: {self.cause}'


def load_object(ref: str) -> Any:
    """Import ``"module:attr.sub"`` and return the attribute."""
    module_name, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _env_list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


def rlhub_home() -> Path:
    """Where pulled environments and caches live: ``$RLHUB_HOME`` or ``~/.cache/rlhub``."""
    return Path(os.environ.get("RLHUB_HOME") or Path.home() / ".cache" / "rlhub")


def domain_file_paths(extra: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """Data-only domain files in discovery order (step 3 of the module docstring)."""
    roots = [Path(p) for p in extra]
    roots += [Path(p) for p in os.environ.get("RLHUB_DOMAINS_PATH", "").split(os.pathsep) if p]
    envs = rlhub_home() / "envs"
    if envs.is_dir():
        roots += sorted(envs.glob("*/*/domains"))
    files: list[Path] = []
    for root in roots:
        files += sorted(root.glob("*.yaml")) + sorted(root.glob("*.yml")) if root.is_dir() else [root]
    return files


class Registry:
    """The plugin manager plus the manifests of every discovered domain."""

    def __init__(self, *, domain_files: Iterable[str | os.PathLike[str]] = (),
                 block: Iterable[str] = (), autoload: bool | None = None,
                 plugins: Iterable[ModuleType | object] = ()):
        self.pm = pluggy.PluginManager("rlhub")
        self.pm.add_hookspecs(hookspecs)
        self.blocked = set(block) | set(_env_list("RLHUB_BLOCK_PLUGINS"))
        self.plugins: dict[str, PluginInfo] = {}
        self.errors: list[LoadError] = []
        self.manifests: dict[str, Manifest] = {}
        self.excluded: list[Excluded] = []
        self._domains: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._verifiers: dict[str, str] | None = None
        from rlhub import builtin

        self.pm.register(builtin, name="rlhub")
        if autoload is None:
            autoload = os.environ.get("RLHUB_DISABLE_AUTOLOAD", "") not in ("1", "true", "yes")
        if autoload:
            self._load_entry_points()
        for module_name in _env_list("RLHUB_PLUGINS"):
            self._load_module(module_name)
        for plugin in plugins:
            name = getattr(plugin, "PLUGIN_NAME", None) or getattr(plugin, "__name__", "plugin")
            self._register(plugin, name.rsplit(".", 1)[-1], "(registered in code)", "")
        self._collect_manifests()
        self._collect_excluded()
        for path in domain_file_paths(domain_files):
            self._load_domain_file(path)

    # -- loading ---------------------------------------------------------------------------

    def _load_entry_points(self) -> None:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist.name if ep.dist else "(unknown distribution)"
            if ep.name in self.blocked:
                continue
            try:
                module = ep.load()
            except Exception as exc:  # noqa: BLE001 - reported, and the others keep working
                self._report(ep.name, dist, exc)
                continue
            self._register(module, ep.name, dist, ep.dist.version if ep.dist else "")

    def _load_module(self, module_name: str) -> None:
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001
            self._report(module_name.rsplit(".", 1)[-1], f"RLHUB_PLUGINS module {module_name}", exc)
            return
        name = getattr(module, "PLUGIN_NAME", module_name.rsplit(".", 1)[-1])
        if name not in self.blocked:
            self._register(module, name, f"RLHUB_PLUGINS module {module_name}", "")

    def _register(self, plugin: object, name: str, dist: str, version: str) -> None:
        if name in self.plugins or name == "rlhub":
            self.errors.append(LoadError(name, dist, f"a plugin named {name!r} is already loaded"))
            return
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # noqa: BLE001 - e.g. a hookimpl that matches no spec
            self._report(name, dist, exc)
            return
        module = getattr(plugin, "__name__", type(plugin).__name__)
        self.plugins[name] = PluginInfo(name, dist, version, module)

    def _report(self, name: str, dist: str, exc: BaseException) -> None:
        err = LoadError(name, dist, f"{type(exc).__name__}: {exc}")
        self.errors.append(err)
        print(f"rlhub: {err}", file=sys.stderr)

    def _collect_manifests(self) -> None:
        from rlhub.manifest import ValidCache

        self._valid = ValidCache()
        for impl in self.pm.hook.rlhub_domains.get_hookimpls():
            info = self.plugins.get(impl.plugin_name)
            if info is None:  # the built-in plugin declares no domains
                continue
            try:
                with boundary(PluginError, f"{impl.plugin_name}.rlhub_domains()"):
                    raws = list(impl.function())
            except PluginError as exc:
                self._report(info.name, info.distribution, exc.__cause__ or exc)
                continue
            for raw in raws:
                self._add_manifest(raw, info)
        self._valid.save()

    def _collect_excluded(self) -> None:
        for impl in self.pm.hook.rlhub_excluded_domains.get_hookimpls():
            info = self.plugins.get(impl.plugin_name)
            if info is None:
                continue
            try:
                with boundary(PluginError, f"{impl.plugin_name}.rlhub_excluded_domains()"):
                    rows = [Excluded(str(r["id"]), info.name, str(r["reason"]))
                            for r in impl.function()]
            except PluginError as exc:
                self._report(info.name, info.distribution, exc.__cause__ or exc)
                continue
            self.excluded += rows

    def _add_manifest(self, raw: Any, info: PluginInfo) -> None:
        try:
            manifest = Manifest.parse(raw, plugin=info.name, distribution=info.distribution,
                                      cache=self._valid)
        except ManifestError as exc:
            self.errors.append(LoadError(info.name, info.distribution, str(exc)))
            print(f"rlhub: {exc}", file=sys.stderr)
            return
        self._keep(manifest)

    def _load_domain_file(self, path: Path) -> None:
        from rlhub.datadomain import manifest_from_file

        try:
            manifest = manifest_from_file(path)
        except (ManifestError, OSError) as exc:
            self.errors.append(LoadError(path.name, f"domain file {path}", str(exc)))
            print(f"rlhub: {exc}", file=sys.stderr)
            return
        if manifest.plugin not in self.blocked:
            self._keep(manifest)

    def _keep(self, manifest: Manifest) -> None:
        """Add a parsed manifest, unless an earlier plugin or file already provides its id."""
        if manifest.id in self.manifests:
            other = self.manifests[manifest.id].distribution
            self.errors.append(LoadError(manifest.plugin, manifest.distribution,
                                         f"domain {manifest.id!r} is already provided by {other}"))
            return
        self.manifests[manifest.id] = manifest

    # -- lookup ----------------------------------------------------------------------------

    def ids(self) -> list[str]:
        return sorted(self.manifests)

    def manifest(self, domain_id: str) -> Manifest:
        try:
            return self.manifests[domain_id]
        except KeyError:
            msg = did_you_mean(domain_id, self.manifests, what="domain", listing="rlhub list")
            raise DomainNotFound(msg) from None

    def match(self, patterns: Iterable[str]) -> list[str]:
        """Domain ids matching any of the ids or globs (``rg/*``), in sorted order, no repeats."""
        found: dict[str, None] = {}
        for pattern in patterns:
            if any(ch in pattern for ch in "*?["):
                hits = fnmatch.filter(self.ids(), pattern)
                if not hits:
                    raise DomainNotFound(f"no domain matches the glob {pattern!r}. "
                                         "Run `rlhub list` to see what is installed.")
            else:
                hits = [self.manifest(pattern).id]
            found.update(dict.fromkeys(hits))
        return sorted(found)

    def get(self, domain_id: str) -> Any:
        """The domain object, built from its manifest's factory on first use (thread-safe)."""
        domain = self._domains.get(domain_id)
        if domain is not None:
            return domain
        manifest = self.manifest(domain_id)
        with self._lock:
            if domain_id not in self._domains:
                with boundary(PluginError, f"factory {manifest.data['factory']} of {domain_id}"):
                    self._domains[domain_id] = load_object(manifest.data["factory"])(manifest)
            return self._domains[domain_id]

    def verifier_refs(self) -> dict[str, str]:
        """Every named verifier: ``{name: "module:attr"}``; plugins override the built-ins."""
        if self._verifiers is None:
            refs: dict[str, str] = {}
            for result in reversed(self.pm.hook.rlhub_verifiers()):  # later = higher priority
                refs.update(result)
            self._verifiers = refs
        return self._verifiers


_default: Registry | None = None
_default_lock = threading.Lock()


def registry(**kwargs: Any) -> Registry:
    """The process-wide registry, discovered on first call; ``reset()`` forgets it."""
    global _default
    with _default_lock:
        if _default is None or kwargs:
            _default = Registry(**kwargs)
        return _default


def reset() -> None:
    """Forget the process-wide registry (tests, and after ``rlhub pull``)."""
    global _default
    with _default_lock:
        _default = None
