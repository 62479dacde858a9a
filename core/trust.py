"""What an untrusted environment may declare, and the user's policy that caps it.

An environment pulled without ``--trust-remote-code`` is a stranger's configuration. Its domain
files may choose verifiers and their grading options (a rubric, a pattern, a schema, tests, the
*name* of an endpoint in the user's registry), but:

* **no endpoint, key, path or variable.** No verifier option whose name is, or ends in, a URL,
  host, key, token, secret, password, environment variable, path, file, folder, model, header or
  backend (``url``, ``api_key_env``, ``model``, ``path``, ``backend``, ...), no option value that
  is a URL, and none of a judge endpoint's limits (``concurrency``, ``deadline_s``, ...). A judge
  or reward model comes from the user's side: the run's mixture (``judges:``,
  :mod:`rlhub.verifiers.routes`), the user's configuration (:mod:`rlhub.userconfig`), picked by
  ``endpoint: NAME`` or the user's default, or ``RLHUB_JUDGE_URL``;
* **no more sandbox than the user's policy.** Every ``limits`` it declares (``sandbox.limits``,
  a verifier's ``limits``) must stay within ``untrusted.limits`` (default: the standard
  :class:`rlhub.sandbox.Limits`, no network) or that environment's ``untrusted.grants.<name>``;
  ``verify_timeout_s`` within ``untrusted.verify_timeout_s`` (default 60 s);
* **no image and no outside data.** No ``sandbox.image`` or ``sandbox.dockerfile``, and a dataset
  that is a relative path inside its bundle.

:func:`untrusted_problems` returns one line per violation, naming the field, what was asked, what
the policy allows and the exact setting that grants it. ``rlhub pull`` refuses such a bundle
before installing it, and discovery refuses such a domain file if the policy changed since.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rlhub.userconfig import UserConfig

DENIED_PARTS = frozenset({
    "url", "uri", "host", "port", "key", "token", "secret", "password", "passwd",
    "credential", "credentials", "auth", "cookie", "env", "path", "file", "dir", "model",
    "header", "headers", "backend",
})
ENDPOINT_LIMITS = frozenset({"concurrency", "deadline_s", "timeout_s", "retries", "backoff_s"})
DATA_OPTIONS = frozenset({"rubric", "schema"})  # their contents are grading data, not settings
URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
DEFAULT_VERIFY_TIMEOUT_S = 60.0
ADVICE = ("Judges and reward models come from your mixture's judges:, your endpoint registry "
          "(endpoints: in {config}, picked with `endpoint: NAME`) or RLHUB_JUDGE_URL; pull the "
          "environment with --trust-remote-code only if you trust its publisher.")


def standard_limits() -> dict[str, Any]:
    """rlhub's standard sandbox limits, network off: the default cap."""
    from rlhub.sandbox import Limits

    return dataclasses.asdict(Limits())


@dataclass(frozen=True)
class TrustPolicy:
    """The caps for untrusted environments, and per-environment grants, from the user's config."""

    limits: dict[str, Any]
    verify_timeout_s: float
    grants: dict[str, dict[str, Any]]
    where: str

    @classmethod
    def from_config(cls, config: UserConfig) -> TrustPolicy:
        section = config.untrusted()
        return cls({**standard_limits(), **section.get("limits", {})},
                   float(section.get("verify_timeout_s", DEFAULT_VERIFY_TIMEOUT_S)),
                   dict(section.get("grants", {})), str(config.path))

    def caps(self, env: str) -> tuple[dict[str, Any], float]:
        """``(limits, verify_timeout_s)`` the environment ``env`` may ask for."""
        grant = self.grants.get(env, {})
        return ({**self.limits, **grant.get("limits", {})},
                float(grant.get("verify_timeout_s", self.verify_timeout_s)))


@dataclass(frozen=True)
class UntrustedEnv:
    """A pulled environment without trust, and the policy its domain files are held to."""

    name: str
    policy: TrustPolicy


def untrusted_problems(raw: dict[str, Any], env: UntrustedEnv) -> list[str]:
    """One line per thing a domain file of ``env`` declares that it may not (module docstring)."""
    problems = list(_data_problems(raw))
    problems += _verifier_problems(raw.get("verifier"), "verifier", env)
    sandbox = raw.get("sandbox") if isinstance(raw.get("sandbox"), dict) else {}
    problems += [f"field sandbox.{key}: an untrusted environment may not choose a sandbox image "
                 f"(found {sandbox[key]!r}); images come from your sandbox configuration"
                 for key in ("image", "dockerfile") if key in sandbox]
    problems += _limit_problems(sandbox.get("limits"), "sandbox.limits", env)
    problems += _timeout_problems(raw.get("verify_timeout_s"), env)
    return problems


def advice(env: UntrustedEnv) -> str:
    """The closing sentence of a refusal: where endpoints come from, and the trust escape."""
    return ADVICE.format(config=env.policy.where)


def _data_problems(raw: dict[str, Any]) -> Iterator[str]:
    dataset = raw.get("dataset")
    if not isinstance(dataset, str):
        return
    norm = posixpath.normpath(dataset)
    if "://" in dataset or dataset.startswith("/") or norm.startswith(".."):
        yield (f"field dataset: an untrusted environment reads only files of its own bundle, "
               f"found {dataset!r}")


def _verifier_problems(spec: Any, where: str, env: UntrustedEnv) -> list[str]:
    if not isinstance(spec, dict):
        return []
    return list(_option_problems(spec.get("options") or {}, f"{where}.options", env))


def _option_problems(options: dict[str, Any], where: str, env: UntrustedEnv) -> Iterator[str]:
    for key, value in options.items():
        here = f"{where}.{key}"
        if key == "limits":
            yield from _limit_problems(value, here, env)
        elif key in DATA_OPTIONS:
            continue
        elif _names_a_secret(str(key)):
            yield (f"field {here}: an untrusted environment may not name an endpoint, key, path "
                   f"or environment variable (found {value!r})")
        else:
            yield from _value_problems(value, here, env)


def _value_problems(value: Any, where: str, env: UntrustedEnv) -> Iterator[str]:
    if isinstance(value, str) and URL_RE.match(value):
        yield f"field {where}: an untrusted environment may not name a URL (found {value!r})"
    elif isinstance(value, dict):
        yield from _option_problems(value, where, env)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _value_problems(item, f"{where}.{i}", env)


def _names_a_secret(key: str) -> bool:
    parts = set(re.split(r"[_\-.]", key.lower()))
    return key.lower() in ENDPOINT_LIMITS or bool(parts & DENIED_PARTS)


def _limit_problems(limits: Any, where: str, env: UntrustedEnv) -> Iterator[str]:
    if not isinstance(limits, dict):
        return
    caps, _ = env.policy.caps(env.name)
    for key, value in limits.items():
        cap = caps.get(key)
        if cap is None or isinstance(value, bool) != isinstance(cap, bool):
            continue  # unknown keys and wrong types are the schema's and Limits' to refuse
        if isinstance(value, bool) and value and not cap:
            yield (f"field {where}.network: asks for network access, which your policy does not "
                   f"allow untrusted environments; {_grant(env, 'limits', key, True)}")
        elif not isinstance(value, bool) and isinstance(value, int | float) and value > cap:
            yield (f"field {where}.{key}: asks for {value!r}, above the {cap!r} your policy "
                   f"allows untrusted environments; {_grant(env, 'limits', key, value)}")


def _timeout_problems(value: Any, env: UntrustedEnv) -> Iterator[str]:
    _, cap = env.policy.caps(env.name)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > cap:
        yield (f"field verify_timeout_s: asks for {value!r}, above the {cap!r} your policy "
               f"allows untrusted environments; {_grant(env, None, 'verify_timeout_s', value)}")


def _grant(env: UntrustedEnv, section: str | None, key: str, value: Any) -> str:
    shown = "true" if value is True else repr(value)
    setting = f"{{{section}: {{{key}: {shown}}}}}" if section else f"{{{key}: {shown}}}"
    return (f"to grant it, add `untrusted: {{grants: {{{env.name}: {setting}}}}}` to "
            f"{env.policy.where}")
