"""Policies: what ``--policy SPEC`` builds, behind one protocol (:mod:`rlhub.policy.protocol`).

Built-in spec kinds (answered last by ``rlhub_make_policy``, so plugins can add or replace kinds):

- ``openai:BASE_URL#MODEL``: an OpenAI-compatible chat endpoint (:mod:`rlhub.policy.openai`);
- ``hf:PATH``: a local transformers causal LM (:mod:`rlhub.policy.local`);
- ``builtin:tiny``: the character-level demo model (:mod:`rlhub.policy.tiny`); options ``seed``
  and ``path`` choose its initialisation and where it is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlhub.errors import PolicyError, boundary
from rlhub.policy.protocol import Generation, Policy, Sampling, generate_detailed, policy_info

if TYPE_CHECKING:
    from rlhub.protocols import RegistryLike

KINDS = ("openai:BASE_URL#MODEL", "hf:PATH", "builtin:tiny")

__all__ = ["KINDS", "Generation", "Policy", "Sampling", "generate_detailed", "make_builtin",
           "make_policy", "policy_info"]


def make_policy(spec: str, options: dict[str, Any] | None = None, *,
                registry: RegistryLike) -> Policy:
    """Build the policy for ``spec`` through ``registry``'s ``rlhub_make_policy`` hook."""
    with boundary(PolicyError, f"rlhub_make_policy(spec={spec!r})"):
        policy = registry.pm.hook.rlhub_make_policy(spec=spec, options=dict(options or {}))
    if policy is None:
        raise PolicyError(f"unknown policy spec {spec!r}: expected one of {', '.join(KINDS)}, "
                          "or a kind added by a plugin")
    return policy


def make_builtin(spec: str, options: dict[str, Any]) -> Any | None:
    """The built-in answer to ``rlhub_make_policy``: None for kinds it does not know."""
    kind, _, rest = spec.partition(":")
    if kind == "openai":
        from rlhub.policy.openai import OpenAIPolicy

        return OpenAIPolicy.from_spec(spec, options)
    if kind == "hf":
        if not rest:
            raise PolicyError(f"policy spec {spec!r}: expected hf:PATH, found no path")
        from rlhub.policy.local import LocalCausalLM

        return LocalCausalLM.from_pretrained(rest, spec=spec, **options)
    if kind == "builtin":
        return _builtin(spec, rest, options)
    return None


def _builtin(spec: str, name: str, options: dict[str, Any]) -> Any:
    if name != "tiny":
        raise PolicyError(f"policy spec {spec!r}: expected builtin:tiny, found builtin:{name}")
    from rlhub.policy.local import LocalCausalLM, _split_options
    from rlhub.policy.tiny import load_tiny

    opts = {"threads": 1, **options}
    seed = int(opts.pop("seed", 0))
    model, tokenizer = load_tiny(opts.pop("path", None), seed=seed)
    return LocalCausalLM(model, tokenizer, spec=spec, name=f"tiny-seed{seed}",
                         source=str(model.name_or_path), **_split_options(opts))
