"""A mixture's ``judges:``: which endpoint serves each kind of judge the run's domains declare.

A domain's judge verifier says only what *kind* of judge it needs: ``endpoint: KIND`` (a name), or
nothing, which is the kind ``default``. The user's mixture file may say who serves each kind::

    judges:
      default: grader                  # a judge of the user's endpoint registry (endpoints:)
      rubric:                          # or an endpoint written inline
        url: http://127.0.0.1:8000/v1
        model: qwen2.5-7b-instruct
        api_key_env: GRADER_KEY        # the variable holding its key (default RLHUB_JUDGE_API_KEY)
        concurrency: 8                 # also deadline_s, timeout_s, retries, backoff_s

:func:`rlhub.judges.mixture_judges` reads and checks them once, at the entry point that runs the
mixture (``rlhub train``, ``rlhub eval``, ``rlhub serve --mixture``, the verifiers bridge). The
registry's services then carry the routes to every judge verifier
(:meth:`rlhub.services.Services.use_judges`), which asks them before any other source
(:mod:`rlhub.verifiers.targets`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_KIND = "default"
DEFAULT_KEY_ENV = "RLHUB_JUDGE_API_KEY"


def judge_kind(options: dict[str, Any]) -> str:
    """The kind of judge a judge verifier's ``options`` ask for: ``endpoint``, else ``default``."""
    return str(options.get("endpoint") or DEFAULT_KIND)


@dataclass(frozen=True)
class JudgeRoutes:
    """Judge kind -> endpoint (a registry name, or an inline ``{url, model, ...}``), and the
    mixture they came from (named in every message). Empty: the mixture chose no judges."""

    routes: dict[str, str | dict[str, Any]] = field(default_factory=dict)
    where: str = ""

    def get(self, kind: str) -> str | dict[str, Any] | None:
        """The endpoint serving ``kind``, if the mixture names one."""
        return self.routes.get(kind)

    def as_dict(self) -> dict[str, Any]:
        """Plain data, for a registry rebuilt in another process (:meth:`from_dict`)."""
        return {"routes": self.routes, "where": self.where}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> JudgeRoutes:
        data = data or {}
        return cls(dict(data.get("routes", {})), str(data.get("where", "")))

    def key_variables(self) -> list[str]:
        """The environment variables holding the keys of the endpoints the routes name (inline,
        or a judge of the user's registry): a worker in another process needs them too."""
        from rlhub.userconfig import load_user_config

        specs: list[Any] = list(self.routes.values())
        if any(isinstance(spec, str) for spec in specs):
            config = load_user_config()
            specs = [config.endpoint(s, "judge") if isinstance(s, str) else s for s in specs]
        return sorted({str(spec.get("api_key_env") or DEFAULT_KEY_ENV) for spec in specs})
