"""Plugin discovery and the domain registry.

Discovery order (documented in PLUGINS.md):

0. The built-in plugin (:mod:`rlhub.builtin`) and rlhub's own entry points in the group
   ``rlhub.plugins`` (the trainer backends, :mod:`rlhub.cli.trainers`): every registry has them,
   autoload or not.
1. Entry points in the group ``rlhub.plugins`` (skipped when ``RLHUB_DISABLE_AUTOLOAD=1``); the
   entry point's name is the plugin's name and the namespace of its domain ids.
2. Modules named in ``RLHUB_PLUGINS`` (comma-separated); the plugin name is the module's
   ``PLUGIN_NAME`` attribute, or the last part of its dotted name.
3. Data-only domain files: every ``--domains-file FILE``, then each file or folder of ``*.yaml`` in
   ``RLHUB_DOMAINS_PATH`` (``os.pathsep``-separated), then environments pulled into
   ``$RLHUB_HOME/envs``. A pulled environment's files, unless it was pulled with trust, are held
   to the user's policy (:mod:`rlhub.trust`); a pulled domain never displaces another source's,
   never joins an installed plugin's namespace, and an id two pulled environments declare is
   withdrawn from both.

Plugins named in ``RLHUB_BLOCK_PLUGINS`` (comma-separated) or passed as ``block=`` are not loaded.
A plugin that fails to import, whose hook raises, or that implements a hook no hookspec names
(a misspelt ``rlhub_domainz``: pluggy's ``check_pending()``; ``optionalhook=True`` exempts one) is
recorded in :attr:`Registry.errors` and
reported as ``error loading plugin "<name>" from <distribution>: <cause>``; every other plugin keeps
working. The registry holds declarations only (:mod:`rlhub.catalog`): a domain's manifest is
validated on first use, and its code imported on first :meth:`get`.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib
import os
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from rlhub import hookspecs
from rlhub.catalog import Catalog, Declared, declare
from rlhub.errors import DomainNotFound, ManifestError, PluginError, boundary
from rlhub.home import rlhub_home
from rlhub.hookspecs import hookimpl
from rlhub.manifest import Manifest
from rlhub.refs import load_object
from rlhub.services import Services, ServicesSpec

if TYPE_CHECKING:
    from rlhub.installs import Pin
    from rlhub.sandbox import Backend
    from rlhub.trust import UntrustedEnv
    from rlhub.verifiers.routes import JudgeRoutes

ENTRY_POINT_GROUP = "rlhub.plugins"
FIRST_PARTY = "rlhub"  # the distribution whose entry points load into every registry
__all__ = ["ENTRY_POINT_GROUP", "LoadError", "PluginInfo", "Registry", "RegistrySpec",
           "domain_file_paths", "hookimpl", "load_object", "registry", "reset", "rlhub_home"]


@dataclass(frozen=True)
class PluginInfo:
    """Where a loaded plugin came from."""

    name: str
    distribution: str
    version: str
    module: str


@dataclass(frozen=True)
class LoadError:
    """A plugin or domain file that could not be loaded, and why."""

    name: str
    distribution: str
    cause: str

    def __str__(self) -> str:
        return f'error loading plugin "{self.name}" from {self.distribution}: {self.cause}'


@dataclass(frozen=True)
class RegistrySpec:
    """How a registry was made, as a frozen, picklable value: what discovery reads and the
    services' description. :meth:`Registry.from_spec` rebuilds the same registry in another
    process (a Ray actor, :mod:`rlhub.integrations.server.pool`)."""

    domain_files: tuple[str, ...] = ()
    block: tuple[str, ...] = ()
    autoload: bool | None = None
    project_lock: str | None = None
    installed: bool = True
    services: ServicesSpec = field(default_factory=ServicesSpec)


def _env_list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


def domain_file_paths(extra: Iterable[str | os.PathLike[str]] = (),
                      pins: dict[str, Pin] | None = None, *, installed: bool = True) -> list[Path]:
    """Data-only domain files in discovery order (step 3 of the module docstring): of each
    pulled environment (unless not ``installed``), the bundle :func:`rlhub.installs.choose`
    picks under ``pins`` (default: the project's, :func:`rlhub.installs.project_pins`)."""
    from rlhub.installs import choices, project_lock_path, project_pins

    roots = [Path(p) for p in extra]
    roots += [Path(p) for p in os.environ.get("RLHUB_DOMAINS_PATH", "").split(os.pathsep) if p]
    if installed:
        pins = project_pins(project_lock_path()) if pins is None else pins
        roots += [c.install.folder / "domains" for c in choices(rlhub_home(), pins)
                  if c.install is not None and (c.install.folder / "domains").is_dir()]
    files: list[Path] = []
    for root in roots:
        files += sorted(root.glob("*.yaml")) + sorted(root.glob("*.yml")) if root.is_dir() else [root]
    return files


class Registry:
    """The plugin manager, the catalog of every discovered domain and the domains built from it:
    discovery's data, and nothing else. What the domains use when they run (sandboxes,
    workspaces, languages, named verifiers and strategies, judges, trust, provenance) is the one
    attribute :attr:`services` (:class:`rlhub.services.Services`): a caller holding a registry
    asks ``registry.services``, a domain it builds ``domain.services``, and whoever needs only the
    services is handed that object. ``registry.services.close()`` stops what they started.

    Everything that needs plugins receives a registry; only entry points (the CLI, a server or a
    trainer started on its own, the pytest plugin) call :func:`registry`. Two registries share
    nothing: each has its own domains and services. ``sandbox`` is the default backend of this
    registry's domains: a name, a backend object (a test double), or None for
    ``$RLHUB_SANDBOX``, else ``local``. ``versions(name)`` reads a distribution's installed version
    for provenance (by default :func:`rlhub.provenance.distribution_version`). ``judges`` are the
    judge routes of the mixture this registry's run uses (``services.use_judges``). :attr:`spec`
    is all of this as a value (:meth:`from_spec`).
    """

    def __init__(self, *, domain_files: Iterable[str | os.PathLike[str]] = (),
                 block: Iterable[str] = (), autoload: bool | None = None,
                 plugins: Iterable[ModuleType | object] = (),
                 sandbox: str | Backend | None = None,
                 versions: Callable[[str], str] | None = None,
                 judges: JudgeRoutes | None = None,
                 project_lock: str | os.PathLike[str] | None = None,
                 installed: bool = True):
        from rlhub.installs import project_lock_path, project_pins

        lock = Path(project_lock) if project_lock is not None else project_lock_path()
        services = ServicesSpec(sandbox if isinstance(sandbox, str) else None, judges)
        self._spec = RegistrySpec(tuple(str(p) for p in domain_files), tuple(block), autoload,
                                  str(lock), installed, services)
        self.pins = project_pins(lock) if installed else {}
        self.pm = pluggy.PluginManager("rlhub")
        self.pm.add_hookspecs(hookspecs)
        self.blocked = set(block) | set(_env_list("RLHUB_BLOCK_PLUGINS"))
        self.plugins: dict[str, PluginInfo] = {}
        self.errors: list[LoadError] = []
        self.catalog = Catalog(lambda: list(self.services.sandbox_refs()))
        self.services = Services(self.pm, services, manifests=self.catalog, versions=versions,
                                 sandbox=None if isinstance(sandbox, str) else sandbox)
        self.left_out: list[dict[str, str]] = []
        self._domains: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._withdrawn: dict[str, str] = {}
        from rlhub import builtin

        self.pm.register(builtin, name="rlhub")
        entry_points = metadata.entry_points(group=ENTRY_POINT_GROUP)
        self._load_entry_points(entry_points, first_party=True)
        if autoload is None:
            autoload = os.environ.get("RLHUB_DISABLE_AUTOLOAD", "") not in ("1", "true", "yes")
        if autoload:
            self._load_entry_points(entry_points)
        for module_name in _env_list("RLHUB_PLUGINS"):
            self._load_module(module_name)
        for plugin in plugins:
            name = getattr(plugin, "PLUGIN_NAME", None) or getattr(plugin, "__name__", "plugin")
            self._register(plugin, name.rsplit(".", 1)[-1], "(registered in code)", "")
        self._check_pending()
        self._collect_declared()
        if installed:
            self._report_installs()
        for path in domain_file_paths(self._spec.domain_files, self.pins,
                                      installed=installed):
            self._load_domain_file(path)
        self._check_backend_names()

    @classmethod
    def from_spec(cls, spec: RegistrySpec) -> Registry:
        """The registry ``spec`` describes (:attr:`spec` of another), discovered anew here."""
        return cls(domain_files=spec.domain_files, block=spec.block, autoload=spec.autoload,
                   sandbox=spec.services.sandbox, judges=spec.services.judges,
                   project_lock=spec.project_lock, installed=spec.installed)

    @property
    def spec(self) -> RegistrySpec:
        """How this registry was made, with its services' current description."""
        return dataclasses.replace(self._spec, services=self.services.spec)

    # -- loading ---------------------------------------------------------------------------

    def _load_entry_points(self, entry_points: Iterable[metadata.EntryPoint], *,
                           first_party: bool = False) -> None:
        """The entry points of rlhub itself (``first_party``: built-ins, registered like
        :mod:`rlhub.builtin` and listed in no :attr:`plugins`), or of every other distribution."""
        for ep in entry_points:
            dist = ep.dist.name if ep.dist else "(unknown distribution)"
            if ep.name in self.blocked or (dist == FIRST_PARTY) != first_party:
                continue
            try:
                module = ep.load()
            except Exception as exc:  # noqa: BLE001 - reported, and the others keep working
                self._report(ep.name, dist, exc)
                continue
            if first_party:
                self.pm.register(module, name=ep.name)
            else:
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
        if name in self.plugins or self.pm.has_plugin(name):  # or a built-in's name
            self.errors.append(LoadError(name, dist, f"a plugin named {name!r} is already loaded"))
            return
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # noqa: BLE001 - e.g. a hookimpl that matches no spec
            self._report(name, dist, exc)
            return
        module = getattr(plugin, "__name__", type(plugin).__name__)
        self.plugins[name] = PluginInfo(name, dist, version, module)

    def _check_pending(self) -> None:
        """pluggy's own check: a hook implementation that matches no hookspec (a misspelt
        ``rlhub_domainz``) unless marked ``optionalhook=True``. Its plugin is unregistered and
        reported like a plugin that fails to import; every other plugin keeps working."""
        while True:
            try:
                self.pm.check_pending()
                return
            except pluggy.PluginValidationError as exc:
                name = self.pm.get_name(exc.plugin) or "plugin"
                self.pm.unregister(exc.plugin)
                info = self.plugins.pop(name, None)
                self._report(name, info.distribution if info else "(registered in code)", exc)

    def _report(self, name: str, dist: str, exc: BaseException) -> None:
        err = LoadError(name, dist, f"{type(exc).__name__}: {exc}")
        self.errors.append(err)
        print(f"rlhub: {err}", file=sys.stderr)

    def _collect_declared(self) -> None:
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
                self._add_declared(raw, info)
        self._collect_left_out()

    def _collect_left_out(self) -> None:
        """What each plugin's ``rlhub_left_out()`` declares, with the plugin and distribution."""
        for impl in self.pm.hook.rlhub_left_out.get_hookimpls():
            info = self.plugins[impl.plugin_name]
            try:
                with boundary(PluginError, f"{impl.plugin_name}.rlhub_left_out()"):
                    rows = [dict(row) for row in impl.function()]
            except PluginError as exc:
                self._report(info.name, info.distribution, exc.__cause__ or exc)
                continue
            self.left_out += [{**row, "plugin": info.name, "distribution": info.distribution}
                              for row in rows]

    def _add_declared(self, raw: Any, info: PluginInfo) -> None:
        try:
            declared = declare(raw, info.name, info.distribution)
        except ManifestError as exc:
            self.errors.append(LoadError(info.name, info.distribution, str(exc)))
            print(f"rlhub: {exc}", file=sys.stderr)
            return
        self._keep(declared)

    def _report_installs(self) -> None:
        """Report each pulled environment discovery reads none of (a pin it cannot honour)."""
        from rlhub.installs import choices

        for choice in choices(rlhub_home(), self.pins):
            if choice.problem:
                self.errors.append(LoadError(choice.name, f"pulled environment {choice.name}",
                                             choice.problem))
                print(f"rlhub: {choice.problem}", file=sys.stderr)

    def _load_domain_file(self, path: Path) -> None:
        from rlhub.datadomain import manifest_from_file, pulled_env
        from rlhub.userconfig import ConfigError

        env = pulled_env(path, rlhub_home())
        pin = self.pins.get(env.name) if env is not None else None
        trusted = env is not None and env.trusted and (pin is None or pin.trusted)
        try:
            untrusted = self._untrusted(env.name) if env and not trusted else None
            manifest = manifest_from_file(path, untrusted=untrusted)
        except (ManifestError, ConfigError, OSError) as exc:
            self.errors.append(LoadError(path.name, f"domain file {path}", str(exc)))
            print(f"rlhub: {exc}", file=sys.stderr)
            return
        if env is not None and env.hackable.get(manifest.id):
            marks = set(manifest.hackable) | set(env.hackable[manifest.id])
            manifest.data["hackable"] = sorted(marks)  # what the pull's probes found
        if manifest.plugin not in self.blocked:
            self._keep(Declared.of(manifest, pulled=env is not None))

    def _check_backend_names(self) -> None:
        """Report a plugin whose ``rlhub_sandbox_backends()`` raises (manifests naming a backend
        are checked against the names on use, :class:`rlhub.catalog.Catalog`)."""
        try:
            self.services.sandbox_refs()
        except PluginError as exc:  # reported; the domains stay, the backends fail at use
            self.errors.append(LoadError("rlhub_sandbox_backends", "(plugins)", str(exc)))
            print(f"rlhub: {exc}", file=sys.stderr)

    def _untrusted(self, name: str) -> UntrustedEnv:
        """The untrusted-environment record of ``name`` under the user's policy (read once)."""
        from rlhub.trust import UntrustedEnv

        return UntrustedEnv(name, self.services.trust())

    def _keep(self, declared: Declared) -> None:
        """Add a declaration, unless another source provides its id or owns its namespace.

        Sources are kept in discovery order, so a pulled environment never displaces a plugin or
        a file the user named. Two pulled environments declaring one id are ambiguous: the id is
        withdrawn from both, and the error names both.
        """
        problem = self._conflict(declared)
        if problem:
            self.errors.append(LoadError(declared.plugin, declared.distribution, problem))
            print(f"rlhub: {problem}", file=sys.stderr)
            return
        self.catalog.put(declared)

    def _conflict(self, declared: Declared) -> str | None:
        plugin = self.plugins.get(declared.plugin)
        domain_id, pulled = declared.id, declared.pulled
        if pulled and plugin is not None:
            return (f"domain {domain_id!r} from {declared.distribution}: its namespace "
                    f"{declared.plugin!r} belongs to the plugin {plugin.name} from "
                    f"{plugin.distribution}; a pulled environment may not add domains to it")
        if domain_id in self._withdrawn:
            return (f"domain {domain_id!r} from {declared.distribution}: more than one "
                    f"pulled environment declares it ({self._withdrawn[domain_id]})")
        if domain_id not in self.catalog:
            return None
        other = self.catalog.declared(domain_id)
        if pulled and other.pulled:
            self.catalog.pop(domain_id)
            self._withdrawn[domain_id] = f"{other.distribution} and {declared.distribution}"
            return (f"domain {domain_id!r} is declared by two pulled environments, "
                    f"{other.distribution} and {declared.distribution}, so neither provides it; "
                    "remove one of them from $RLHUB_HOME/envs")
        return f"domain {domain_id!r} is already provided by {other.distribution}"

    # -- lookup ----------------------------------------------------------------------------

    @property
    def manifests(self) -> Catalog:
        """Domain id -> manifest: ``in`` and iteration are free, an item is validated on first
        access (:class:`rlhub.catalog.Catalog`)."""
        return self.catalog

    def ids(self) -> list[str]:
        return list(self.catalog)

    def manifest(self, domain_id: str) -> Manifest:
        """The validated manifest of ``domain_id`` (:class:`DomainNotFound` with near matches
        when unknown; :class:`ManifestError` naming plugin, domain and field when invalid)."""
        return self.catalog.manifest(domain_id)

    def rows(self, plugin: str | None = None) -> list[dict[str, Any]]:
        """The listing rows of every domain (or ``plugin``'s): nothing validated or described."""
        return [row for row in self.catalog.rows() if plugin is None or row["plugin"] == plugin]

    def describe_all(self) -> None:
        """Describe every deferred domain now (``rlhub list --all``, ``rlhub check --all``): one
        that cannot be described is withdrawn and left out, with the reason."""
        for declared, reason in self.catalog.describe_all():
            self.left_out.append({"id": declared.id, "reason": reason,
                                  "plugin": declared.plugin,
                                  "distribution": declared.distribution})

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
                hits = [self.catalog.declared(pattern).id]
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
                    domain = load_object(manifest.data["factory"])(manifest)
                domain.registry = self  # and so its services
                self._domains[domain_id] = domain
            return self._domains[domain_id]


_default: Registry | None = None
_default_lock = threading.Lock()


def registry(**kwargs: Any) -> Registry:
    """The process-wide registry, discovered on first call; ``reset()`` forgets it.

    For entry points only (the CLI, the pytest plugin, a process started by another tool):
    everything else receives the registry it works with.
    """
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
