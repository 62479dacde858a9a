"""The services a registry's domains use: sandboxes, workspaces, languages, named verifiers, judge
routes and endpoints, the user's trust policy and provenance.

The registry (:class:`rlhub.Registry`) is discovery's data: the plugins, the catalog of
manifests, the domains built from them. What a domain *uses* when it runs is here, in one
:class:`Services` object per registry, built from the plugin manager's hooks and a
:class:`ServicesSpec`: a frozen, picklable description (the default sandbox backend and the
mixture's judge routes) from which a Ray actor or another process rebuilds the same services.
Two :class:`Services` share nothing: each starts its own sandbox and workspace backends, builds its
own verifiers and keeps its own judge endpoints and judgement cache
(:class:`rlhub.verifiers.endpoints.JudgeEndpoints`).

A caller holding a registry reaches them as ``registry.services`` (the registry has no shortcuts
to them), a domain as ``self.services``; a verifier class that takes ``services`` is given them.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy

from rlhub.catalog import Catalog
from rlhub.errors import PluginError, SandboxError, boundary
from rlhub.manifest import Manifest
from rlhub.refs import load_object

if TYPE_CHECKING:
    from rlhub.sandbox import Backend, Sandboxes
    from rlhub.sandbox.languages import Languages
    from rlhub.sandbox.workspaces import WorkspaceBackend, Workspaces
    from rlhub.trust import TrustPolicy
    from rlhub.verifiers import Verifiers
    from rlhub.verifiers.endpoints import JudgeEndpoints
    from rlhub.verifiers.routes import JudgeRoutes

__all__ = ["Services", "ServicesSpec"]


@dataclass(frozen=True)
class ServicesSpec:
    """What a registry's services are, as a value that crosses processes (a Ray actor's
    argument): ``sandbox`` is the default backend's name (None: ``$RLHUB_SANDBOX``, else
    ``local``) and ``judges`` the routes of the mixture the run uses (None: it chose none)."""

    sandbox: str | None = None
    judges: JudgeRoutes | None = None


class Services:
    """The services of one registry (see the module docstring).

    ``pm`` is the registry's plugin manager, asked for the named verifiers, sandbox and workspace
    backends and languages; ``manifests`` the registry's catalog (provenance, judge cache keys);
    ``sandbox`` a backend object to use as the default (a test double) instead of
    ``spec.sandbox``; ``versions(name)`` reads a distribution's installed version for provenance
    (default :func:`rlhub.provenance.distribution_version`).
    """

    def __init__(self, pm: pluggy.PluginManager, spec: ServicesSpec = ServicesSpec(), *,
                 manifests: Catalog | None = None, sandbox: Backend | None = None,
                 versions: Callable[[str], str] | None = None):
        self.pm, self.spec, self.versions = pm, spec, versions
        self.manifests = manifests if manifests is not None else Catalog(lambda: [])
        self._default_sandbox: str | Backend | None = sandbox or spec.sandbox
        self._refs: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()
        self._languages: Languages | None = None
        self._verifiers: Verifiers | None = None
        self._sandboxes: Sandboxes | None = None
        self._workspaces: Workspaces | None = None
        self._endpoints: JudgeEndpoints | None = None
        self._trust: TrustPolicy | None = None

    # -- names the plugins register ---------------------------------------------------------

    def named(self, hook: str) -> dict[str, str]:
        """What a naming hook (``rlhub_verifiers``, ``rlhub_sandbox_backends``,
        ``rlhub_scheduler_strategies``, ``rlhub_commands``) declares: ``{name: "module:attr"}``,
        plugins overriding the built-ins; asked once."""
        if hook not in self._refs:
            with boundary(PluginError, f"{hook}()"):
                results = getattr(self.pm.hook, hook)()
            refs: dict[str, str] = {}
            for result in reversed(results):  # later = higher priority
                refs.update(result)
            self._refs[hook] = refs
        return self._refs[hook]

    def verifier_refs(self) -> dict[str, str]:
        """Every named verifier: ``{name: "module:attr"}``."""
        return self.named("rlhub_verifiers")

    def sandbox_refs(self) -> dict[str, str]:
        """Every sandbox backend: ``{name: "module:attr"}``."""
        return self.named("rlhub_sandbox_backends")

    def workspace_refs(self) -> dict[str, str]:
        """Every workspace backend: ``{name: "module:attr"}``."""
        return self.named("rlhub_workspace_backends")

    def strategy_refs(self) -> dict[str, str]:
        """Every mixture strategy: ``{name: "module:attr"}``."""
        return self.named("rlhub_scheduler_strategies")

    def languages(self) -> Languages:
        """Every sandbox language (:class:`rlhub.sandbox.languages.Languages`): what each
        plugin's ``rlhub_sandbox_languages()`` declares, plugins overriding the built-ins;
        asked once."""
        if self._languages is None:
            from rlhub.sandbox.languages import from_declarations

            declared = []
            for impl in self.pm.hook.rlhub_sandbox_languages.get_hookimpls():  # built-ins first
                with boundary(PluginError, f"{impl.plugin_name}.rlhub_sandbox_languages()"):
                    declared.append((impl.plugin_name, dict(impl.function())))
            with boundary(PluginError, "rlhub_sandbox_languages()"):
                self._languages = from_declarations(declared)
        return self._languages

    # -- verifiers and judges ---------------------------------------------------------------

    def verifier(self, name: str, options: dict[str, Any] | None = None) -> Any:
        """The named verifier ``name`` with ``options``, built once."""
        with self._lock:
            if self._verifiers is None:
                from rlhub.verifiers import Verifiers

                self._verifiers = Verifiers(self.verifier_refs, self)
        return self._verifiers.get(name, options)

    @property
    def judges(self) -> JudgeRoutes:
        """Which endpoint serves each kind of judge in this run (the mixture's)."""
        from rlhub.verifiers.routes import JudgeRoutes

        return self.spec.judges or JudgeRoutes()

    def use_judges(self, routes: JudgeRoutes) -> None:
        """Serve the judges as ``routes`` say (:func:`rlhub.judges.mixture_judges`); kept in
        :attr:`spec`, so services rebuilt elsewhere have them."""
        self.spec = ServicesSpec(self.spec.sandbox, routes)

    @property
    def judge_endpoints(self) -> JudgeEndpoints:
        """The judge endpoints and judgement cache these services' judges share."""
        with self._lock:
            if self._endpoints is None:
                from rlhub.verifiers.endpoints import JudgeEndpoints

                self._endpoints = JudgeEndpoints()
            return self._endpoints

    # -- sandboxes and workspaces -----------------------------------------------------------

    @property
    def sandboxes(self) -> Sandboxes:
        """The sandbox backends (:class:`rlhub.sandbox.Sandboxes`)."""
        with self._lock:
            if self._sandboxes is None:
                from rlhub.sandbox import Sandboxes

                self._sandboxes = Sandboxes(self._make_sandbox, lambda: list(self.sandbox_refs()),
                                            self._default_sandbox)
            return self._sandboxes

    def sandbox(self, name: str | None = None, **options: Any) -> Backend:
        """The sandbox backend ``name`` (default: these services'), started on first use."""
        return self.sandboxes.get(name, **options)

    def _make_sandbox(self, name: str, options: dict[str, Any]) -> Backend | None:
        with boundary(SandboxError, f"rlhub_make_sandbox(backend={name!r})"):
            made = self.pm.hook.rlhub_make_sandbox(backend=name, options=options)
        ref = self.sandbox_refs().get(name)
        if made is not None or ref is None:
            return made  # type: ignore[no-any-return]
        with boundary(SandboxError, f"sandbox backend {name!r} ({ref})"):
            cls = load_object(ref)
            if "languages" in inspect.signature(cls).parameters:  # it runs registered languages
                options = {"languages": self.languages(), **options}
            return cls(**options)  # type: ignore[no-any-return]

    @property
    def workspaces(self) -> Workspaces:
        """The workspace backends (:class:`rlhub.sandbox.workspaces.Workspaces`)."""
        with self._lock:
            if self._workspaces is None:
                from rlhub.sandbox.workspaces import Workspaces

                self._workspaces = Workspaces(self._make_workspaces,
                                              lambda: list(self.workspace_refs()))
            return self._workspaces

    def _make_workspaces(self, name: str, options: dict[str, Any]) -> WorkspaceBackend | None:
        ref = self.workspace_refs().get(name)
        if ref is None:
            return None
        with boundary(SandboxError, f"workspace backend {name!r} ({ref})"):
            return load_object(ref)(**options)  # type: ignore[no-any-return]

    # -- trust and provenance ---------------------------------------------------------------

    def trust(self) -> TrustPolicy:
        """The user's trust policy (:class:`rlhub.trust.TrustPolicy`), read once."""
        if self._trust is None:
            from rlhub.trust import TrustPolicy
            from rlhub.userconfig import load_user_config

            self._trust = TrustPolicy.from_config(load_user_config())
        return self._trust

    def provenance(self, manifest: Manifest | str) -> dict[str, Any]:
        """The provenance record of a domain (:func:`rlhub.provenance.domain_provenance`)."""
        from rlhub.provenance import domain_provenance

        if isinstance(manifest, str):
            manifest = self.manifests.manifest(manifest)
        return domain_provenance(manifest, self.verifier_refs(), self.versions)

    def close(self) -> None:
        """Stop the sandbox and workspace backends these services started, and the judge
        endpoints' clients."""
        if self._workspaces is not None:
            self._workspaces.close()
        if self._sandboxes is not None:
            self._sandboxes.close()
        if self._endpoints is not None:
            self._endpoints.close()
