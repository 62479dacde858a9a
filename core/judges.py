"""Reading and checking a mixture's ``judges:`` (see :mod:`rlhub.verifiers.routes`).

Every entry point that runs a mixture calls :func:`mixture_judges` (or :func:`judges_of` on the
mixture it has read) once and hands the result to its registry's services
(``registry.services.use_judges``, :meth:`rlhub.services.Services.use_judges`). Bad input fails
there, before anything runs, naming the mixture, the field, what was expected and what was found.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.userconfig import ConfigError, load_user_config
from rlhub.verifiers.routes import JudgeRoutes, judge_kind

if TYPE_CHECKING:
    from rlhub.plugins import Registry


def mixture_judges(source: str | os.PathLike[str] | dict[str, Any], registry: Registry, *,
                   origin: str | os.PathLike[str] | None = None) -> JudgeRoutes:
    """The checked ``judges:`` of a mixture (module docstring); raise :class:`ConfigError`.

    :param source: A mixture file or its parsed content (a training config is one too).
    :param registry: Expands the mixture's globs and holds the manifests that declare kinds.
    :param origin: The file ``source`` was read from, when it is a dict read by the caller.
    """
    from rlhub.mixture import load_mixture

    path = origin if origin is not None else (None if isinstance(source, dict) else source)
    return judges_of(load_mixture(source, registry), registry, origin=path)


def judges_of(mixed: dict[str, Any], registry: Registry, *,
              origin: str | os.PathLike[str] | None = None) -> JudgeRoutes:
    """:func:`mixture_judges` of a mixture already read by :func:`rlhub.mixture.load_mixture`
    (``mixed``), for an entry point that needs the mixture for more than its judges."""
    section = mixed.get("judges")
    if not section:
        return JudgeRoutes()
    where = f"mixture file {origin}" if origin is not None else "mixture config"
    _refuse_pulled(origin, where, list(section))
    declared = declared_kinds(registry, mixed["domains"])
    for kind, spec in section.items():
        _check_route(kind, spec, declared, f"{where}: field judges.{kind}")
    return JudgeRoutes(dict(section), where)


def declared_kinds(registry: Registry, domain_ids: Any) -> dict[str, list[str]]:
    """``{kind: [domain ids]}``: the judge kinds the manifests of ``domain_ids`` declare."""
    out: dict[str, list[str]] = {}
    for domain_id in domain_ids:
        for kind in _kinds(registry.manifest(domain_id).data.get("verifier")):
            if domain_id not in out.setdefault(kind, []):
                out[kind].append(domain_id)
    return out


def _kinds(spec: Any) -> Iterator[str]:
    """The judge kinds a verifier spec asks for, composite parts included."""
    if not isinstance(spec, dict):
        return
    options = spec.get("options") or {}
    if spec.get("name") == "judge":
        yield judge_kind(options)
    elif spec.get("name") == "composite":
        for part in options.get("parts") or []:
            yield from _kinds(part)


def _refuse_pulled(path: str | os.PathLike[str] | None, where: str, kinds: list[str]) -> None:
    """A mixture shipped inside an untrusted pulled environment may not choose judges: one in
    ``$RLHUB_HOME/envs`` (reached directly, through ``..`` or a link), or in a folder holding an
    install record (another home's, a copied environment)."""
    if path is None:
        return
    from rlhub.datadomain import pulled_env, recorded_env
    from rlhub.home import rlhub_home

    env = pulled_env(Path(path), rlhub_home()) or recorded_env(path)
    if env is not None and not env.trusted:
        raise ConfigError(
            f"{where}: field judges: expected no judges in a mixture inside the environment "
            f"{env.name!r} pulled without --trust-remote-code, found {sorted(kinds)}; "
            "a pulled environment says only what kind of judge it needs. Copy the mixture out "
            "of $RLHUB_HOME/envs and choose its judges yourself")


def _check_route(kind: str, spec: str | dict[str, Any], declared: dict[str, list[str]],
                 where: str) -> None:
    if kind not in declared:
        raise ConfigError(f"{where}: expected a judge kind the mixture's domains declare "
                          f"({_listing(declared)}), found {kind!r}{_near(kind, declared)}")
    if isinstance(spec, str):
        config = load_user_config()
        try:
            entry = config.endpoint(spec, "judge")
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}{_near(spec, config.endpoints('judge'))}") from None
        _check_key(entry.get("api_key_env"), f"{where}: endpoint {spec!r} of {config.path}")
    else:
        _check_key(spec.get("api_key_env"), where)


def _check_key(variable: Any, where: str) -> None:
    if variable and not os.environ.get(str(variable)):
        raise ConfigError(f"{where}: expected the environment variable {variable} (its "
                          f"api_key_env) to hold the judge's API key, found it unset or empty; "
                          f"export {variable}=... before the run")


def _listing(declared: dict[str, list[str]]) -> str:
    if not declared:
        return "none: no domain of the mixture has a judge verifier"
    return "; ".join(f"{kind}: {', '.join(ids[:3])}{' ...' if len(ids) > 3 else ''}"
                     for kind, ids in sorted(declared.items()))


def _near(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
