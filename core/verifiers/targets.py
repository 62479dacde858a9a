"""Where a model-based verifier's endpoint comes from: the user's side, never a stranger's.

A judge's URL, model and key are resolved at each check; the first match wins:

1. the run's mixture: its ``judges:`` entry for the kind the verifier asks for (``endpoint:
   KIND``, else ``default``), a judge of the user's registry or an inline endpoint
   (:mod:`rlhub.verifiers.routes`). It comes first because it is the user's most specific
   choice, made for this run and this kind; the variables and the config file are standing ones;
2. ``options.url`` (with ``options.model``, ``options.api_key_env`` and the endpoint limits): only
   a trusted manifest carries them (an installed plugin, a file the user named); an untrusted
   environment that names them is refused when it is pulled or discovered (:mod:`rlhub.trust`);
3. ``options.endpoint: NAME``: the judge ``NAME`` of the user's endpoint registry (``endpoints:``
   in the user's config, :mod:`rlhub.userconfig`), with its model, key variable and limits;
4. ``RLHUB_JUDGE_URL`` and ``RLHUB_JUDGE_MODEL`` (key: ``RLHUB_JUDGE_API_KEY``);
5. the registry's default judge (``defaults: {judge: NAME}``).

A reward model's local checkpoint likewise: ``options.path`` (trusted only), else the
``reward-model`` endpoint ``options.endpoint`` names, else the default reward model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from rlhub.userconfig import ConfigError, load_user_config
from rlhub.verifiers.routes import JudgeRoutes, judge_kind

JUDGE_SETTINGS = ("concurrency", "deadline_s", "timeout_s", "retries", "backoff_s", "api_key_env")


@dataclass(frozen=True)
class JudgeTarget:
    """A resolved judge: its API root, model, endpoint settings and where they came from."""

    url: str
    model: str
    settings: dict[str, Any] = field(default_factory=dict)
    source: str = ""


def judge_target(options: dict[str, Any], routes: JudgeRoutes | None = None) -> JudgeTarget:
    """The judge ``options`` resolve to, given the run's mixture ``routes`` (module docstring);
    raise :class:`ConfigError`."""
    kind = judge_kind(options)
    route = routes.get(kind) if routes is not None else None
    if route is not None:
        return _routed(kind, route, routes.where)  # type: ignore[union-attr]
    if options.get("url"):
        return JudgeTarget(str(options["url"]), _model(options.get("model")), options,
                           "the verifier's options")
    name = options.get("endpoint")
    if name:
        return _registered(str(name))
    if os.environ.get("RLHUB_JUDGE_URL"):  # limits as a trusted manifest's options set them
        return JudgeTarget(os.environ["RLHUB_JUDGE_URL"], _model(options.get("model")), options,
                           "RLHUB_JUDGE_URL")
    default = load_user_config().default("judge")
    if default:
        return _registered(default)
    return JudgeTarget("", _model(None), {}, "nothing")


def _routed(kind: str, route: str | dict[str, Any], where: str) -> JudgeTarget:
    if isinstance(route, str):
        found = _registered(route)
        return JudgeTarget(found.url, found.model, found.settings,
                           f"judges.{kind} of {where}: {found.source}")
    return JudgeTarget(str(route["url"]), str(route["model"]), _settings(route),
                       f"judges.{kind} of {where}")


def _registered(name: str) -> JudgeTarget:
    config = load_user_config()
    entry = config.endpoint(name, "judge")
    return JudgeTarget(entry["url"], _model(entry.get("model")), _settings(entry),
                       f"endpoint {name!r} of {config.path}")


def _settings(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry[k] for k in JUDGE_SETTINGS if k in entry}


def _model(explicit: Any) -> str:
    return str(explicit or os.environ.get("RLHUB_JUDGE_MODEL", ""))


def reward_model_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the checkpoint (``path``, device, ...) of the reward model they pick."""
    if options.get("path"):
        return dict(options)
    config = load_user_config()
    name = options.get("endpoint") or config.default("reward-model")
    if not name:
        raise ConfigError(
            f"reward-model: expected options.path (a trusted manifest), options.endpoint naming "
            f"a reward-model endpoint, or defaults: {{reward-model: NAME}} in {config.path}; "
            "found none"
        )
    entry = config.endpoint(str(name), "reward-model")
    return {**options, **{k: v for k, v in entry.items() if k != "kind"}}  # the user's win
