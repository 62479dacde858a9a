"""Hook specifications: every hook the rlhub core calls.

Plugins implement these with ``@rlhub.hookimpl`` in their ``plugin.py``. Hooks are always called
with keyword arguments, so an implementation may accept fewer arguments than the spec; new
arguments are added, never renamed or removed. First-result hooks stop at the first non-None answer
and rlhub's built-in implementation answers last (``trylast=True``), so any plugin can take over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    from rlhub.policy.protocol import Policy
    from rlhub.protocols import RegistryLike, SchedulerLike
    from rlhub.sandbox import Backend

hookspec = pluggy.HookspecMarker("rlhub")
#: Marks a plugin's hook implementations (``@rlhub.hookimpl``).
hookimpl = pluggy.HookimplMarker("rlhub")


class Trainer(Protocol):
    """What ``rlhub_make_trainer`` returns."""

    def run(self) -> dict[str, Any]:
        """Train; the run's summary (paths, metrics, the command it ran or printed)."""


@hookspec
def rlhub_domains() -> list[dict[str, Any]]:
    """Declare the domains this plugin provides.

    :return: A list of manifest dicts (see ``schemas/manifest.schema.json``). Each ``id`` must use
        the plugin's name as namespace. Building this list must be cheap: import no heavy library
        here; name the code that builds a domain in the manifest's ``factory`` instead. A listing
        checks only the listed fields; the whole manifest is validated on first use. A
        *deferred* declaration gives the listed fields and ``describe: "module:attr"``, called
        with it on first use to return the full manifest (:mod:`rlhub.catalog`).

    Who implements: every domain plugin. When called: once per process, at discovery, before any
    domain is used; ``rlhub list`` calls nothing else.
    """


@hookspec
def rlhub_left_out() -> list[dict[str, str]]:
    """Declare environments this plugin could offer but leaves out, and why.

    :return: A list of ``{"id": "<plugin>/<name>-v<N>", "reason": "...", "source": "..."}``
        (``source``, optional, names the environment in its own ecosystem). ``rlhub list --all``
        shows them beside the domains. Like :func:`rlhub_domains`, this must be cheap.

    Who implements: bridge plugins (an environment of another ecosystem that needs a network, a
    missing corpus, or cannot meet the contract kit). When called: at discovery, with
    ``rlhub_domains``.
    """


@hookspec
def rlhub_verifiers() -> dict[str, str]:
    """Declare named reusable verifiers.

    :return: A mapping from verifier name (``"math"``, ``"python-tests"``, ...) to a lazy
        ``"module:attr"`` reference to a class called as ``cls(options: dict)`` (or
        ``cls(options, services=services)`` when it takes ``services``, the registry's
        :class:`rlhub.services.Services`, to reach the sandbox, judges or other verifiers) whose
        ``check(task, completion)`` returns a :class:`rlhub.Verdict`.

    Who implements: rlhub itself (the built-ins) and any plugin sharing a verifier with manifests
    and data-only domain files. When called: once per registry, the first time a verifier is
    looked up by name.
    """


@hookspec
def rlhub_sandbox_backends() -> dict[str, str]:
    """Declare sandbox backends by name.

    :return: A mapping from backend name (``"local"``, ``"docker"``, ...) to a lazy
        ``"module:attr"`` reference to a class called as ``cls(**options)`` that has the
        :class:`rlhub.sandbox.Backend` methods. The names are what ``--backend``, a manifest's
        ``sandbox.kind`` and ``$RLHUB_SANDBOX`` accept; a plugin's name overrides a built-in.

    Who implements: rlhub itself (``local``, ``docker``, ``ray``) and any plugin adding a backend.
    When called: once per registry, at discovery (to check manifests) and when a backend is first
    started.
    """


@hookspec
def rlhub_workspace_backends() -> dict[str, str]:
    """Declare workspace backends (stateful sandboxes for episodes) by name.

    :return: A mapping from backend name (``"local"``, ``"docker"``, ...) to a lazy
        ``"module:attr"`` reference to a class called as ``cls(**options)`` that has the
        :class:`rlhub.sandbox.workspaces.WorkspaceBackend` methods (``open``, ``info``,
        ``close``). The names are what ``$RLHUB_WORKSPACES`` and a domain's
        ``params.workspace_backend`` accept; a plugin's name overrides a built-in.

    Who implements: rlhub itself (``local``, ``docker``, ``ray``) and any plugin adding a backend.
    When called: once per registry, when a workspace backend is first started.
    """


@hookspec
def rlhub_commands() -> dict[str, str]:
    """Declare command groups a plugin adds to the ``rlhub`` command line.

    :return: A mapping from a group name (``rlhub NAME ...``) to a lazy ``"module:attr"``
        reference to a ``typer.Typer`` app. A name the command line already has is refused.

    Who implements: plugins with their own commands (``rlhub swe prepare``). When called: once,
    when ``rlhub`` starts; the apps are imported then, so keep their modules light.
    """


@hookspec
def rlhub_sandbox_languages() -> dict[str, dict[str, Any]]:
    """Declare the languages sandbox jobs may be written in.

    :return: A mapping from language name (a lower-case word: ``"cpp"``, ``"csharp"``) to its
        spec dict: ``source`` (file name the code goes to), ``run`` (argv), optional ``compile``
        (argv; run as a job phase with its own budget), ``packages`` (Debian packages of the
        toolchain) and ``paths`` (more host paths) a job must see, ``env``, ``version`` (argv of
        a version probe), ``suffixes``, ``fences``, and the memory behaviour of its runtime
        (``address_space_mb``, ``memory_words``); see :class:`rlhub.sandbox.languages.Language`.
        A plugin's spec overrides a built-in of the same name.

    Who implements: rlhub itself (its built-in languages, ``sandbox/languages.toml``) and any
    plugin adding a language. When called: once per registry, when a sandbox backend starts and
    when the command line or a domain asks which languages exist.
    """


@hookspec
def rlhub_scheduler_strategies() -> dict[str, str]:
    """Declare mixture strategies by name.

    :return: A mapping from strategy name (a mixture's ``strategy``) to a lazy ``"module:attr"``
        reference to a class called as ``cls(config)`` with the
        :class:`rlhub.scheduler.strategies.Strategy` members (``prior`` and ``decide``); the
        built-in :class:`rlhub.Scheduler` runs it. A plugin's name overrides a built-in.

    Who implements: rlhub itself (uniform, static, temperature, adaptive) and any plugin adding a
    strategy. When called: once per registry, when a scheduler is first built.
    """


@hookspec(firstresult=True)
def rlhub_make_sandbox(backend: str, options: dict[str, Any]) -> Backend | None:
    """Build a sandbox backend.

    :param backend: The backend's name, as in ``--backend local|docker|ray``.
    :param options: Backend options (pool size, image, Ray address, ...).
    :return: An object with ``run(ExecRequest) -> ExecResult`` and ``async run_batch(requests)``,
        or None to let another plugin answer.

    Stops at first non-None result. Who implements: a plugin that builds a backend itself (its
    options, its lifetime); a backend declared by ``rlhub_sandbox_backends`` needs no answer here.
    When called: when a sandbox is first needed for that backend, before the declared names.
    """


@hookspec(firstresult=True)
def rlhub_make_scheduler(config: dict[str, Any], registry: RegistryLike
                         ) -> SchedulerLike | None:
    """Build the domain scheduler for a mixture.

    :param config: The validated mixture config (``strategy``, ``domains``, ...).
    :param registry: The registry to sample tasks from.
    :return: An object with the :class:`rlhub.Scheduler` API, or None to let another plugin answer.

    Stops at first non-None result. Who implements: plugins shipping a scheduler of their own;
    when none answers, ``Scheduler.from_config`` runs the mixture's strategy (any that
    ``rlhub_scheduler_strategies`` declares) in the built-in :class:`rlhub.Scheduler`. When
    called: by ``Scheduler.from_config``.
    """


@hookspec(firstresult=True)
def rlhub_make_policy(spec: str, options: dict[str, Any]) -> Policy | None:
    """Build a policy from a ``--policy`` spec such as ``openai:URL#MODEL`` or ``builtin:tiny``.

    :param spec: The whole spec string.
    :param options: Sampling options (temperature, max_tokens, concurrency, ...).
    :return: An object with ``async generate(messages_batch, **sampling) -> list[str]``, or None.

    Stops at first non-None result. Who implements: rlhub (``openai:``, ``hf:``, ``builtin:``,
    trylast) and plugins adding policy kinds. When called: by ``eval``, ``train`` and ``serve``.
    """


@hookspec(firstresult=True)
def rlhub_make_trainer(backend: str, config: dict[str, Any], registry: RegistryLike
                       ) -> Trainer | None:
    """Build a trainer backend for ``rlhub train --backend NAME``.

    :param backend: The backend's name (``local``, ``openrlhf``, ...).
    :param config: The training config.
    :param registry: The registry the run's domains come from.
    :return: An object with ``run() -> dict``, or None to let another plugin answer.

    Stops at first non-None result. Who implements: rlhub's own ``rlhub-trainers`` entry point
    (``local`` and ``openrlhf``, :mod:`rlhub.cli.trainers`, trylast; in every registry) and plugins adding trainers. When called:
    by ``rlhub train``.
    """
