"""Mixture configs: which domains a run trains on, how they are weighted and evaluated.

A mixture is a YAML or JSON file, or a dict, validated against ``schemas/mixture.schema.json``
(JSON Schema draft 2020-12). The smallest useful form::

    strategy: static                  # uniform | static | temperature | adaptive (the default)
    domains: {math/arithmetic-v1: {weight: 2}, "rg/*": {weight: 1}}

A fuller one::

    strategy: adaptive
    seed: 0
    split: train
    domains:
      math/arithmetic-v1: 2.0          # a bare number is a weight
      "rg/*": {group: rg}              # every rg domain joins group rg
      rg/leg_counting-v3: {weight: 3}  # inside a group, weight is the share within the group
    groups:
      rg: {weight: 1.0}                # the whole group weighs as much as one domain of weight 1
    params: {tau: 0.15, floor: 0.25}   # strategy parameters, see DEFAULT_PARAMS
    eval: {items_per_domain: 200, every: 50, split: test}
    normalize: auto                    # per-domain reward normalisation (auto|range|running|none)
    judges: {default: grader}          # which endpoint serves each kind of judge (rlhub.judges)

Expansion rules. Globs (``*?[``) are expanded against a registry, which is required when the config
has globs. Entries apply in file order, globs first and exact ids last, and later entries override
earlier ones field by field, so an exact id refines what a glob set. A group's members are the
domains whose entry names it, plus those listed in its ``members``. A domain's ``size`` and
``reward_range`` default to its manifest's when a registry is given.

:func:`load_mixture` returns the normalised config that every scheduler receives: concrete ids in
a stable order, every field present, built-in strategy parameters filled with their defaults.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.errors import DomainNotFound, SchedulerError

if TYPE_CHECKING:
    from rlhub.protocols import RegistryLike

GLOB_CHARS = "*?["

DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    "uniform": {},
    "static": {},
    "temperature": {"tau": 0.5, "default_size": None},
    "adaptive": {
        "ema": 0.03,         # EMA rate per observed group for learnability and zero-variance
        "fast": 0.02,        # fast EMA rate (per group) of mean normalised reward
        "slow": 0.005,       # slow EMA rate (per group) of mean normalised reward
        "tau": 0.2,          # softmax temperature of the learn component
        "w_learn": 1.0,      # weight of learnability in the score
        "w_progress": 1.0,   # weight of absolute learning progress in the score
        "progress_scale": 0.05,  # |fast - slow| reward gap that counts as full progress
        "w_deficit": 3.0,    # weight of the worst-case deficit in the protect component
        "bonus": 0.05,       # UCB exploration bonus coefficient
        "floor": 0.25,       # total mass spread over the prior (no domain starves)
        "smoothing": 0.2,    # beta: step towards the new target per decision
        "kappa": 1.5,        # regression alarm threshold, in standard errors
        "r_max": 3.0,        # cap of one domain's regression alarm
        "rho_max": 0.6,      # cap of the protect component's share
        "z_min": 0.1,        # lower bound of the informative fraction in ratio preservation
        "l_min": 0.05,       # informative fraction below which the deficit term is off
        "response_scale": 0.02,  # held-out gain per 100 own groups that counts as full response
        "response_window": 128,  # own groups per window of the response measurement
        "credit": 32,        # own groups a domain may take before its response is trusted
    },
}
DEFAULT_EVAL = {"items_per_domain": 200, "every": 50, "split": "test", "seed": 0}


def load_mixture(source: str | os.PathLike[str] | dict[str, Any],
                 registry: RegistryLike | None = None) -> dict[str, Any]:
    """Validate a mixture (file path or dict) and return its normalised form.

    :param source: A ``.yaml``/``.yml``/``.json`` path, or an already parsed dict.
    :param registry: Expands globs and supplies sizes and reward ranges; None keeps ids as given
        (then globs are an error).
    :raise SchedulerError: naming the field, what was expected and what was found.
    """
    raw, where = _read(source)
    validate(raw, where)
    entries = _entries(raw)
    ids = _expand(entries, registry, where)
    domains = _domain_specs(entries, ids, registry)
    groups = _groups(raw, domains, where)
    strategy = raw.get("strategy", "adaptive")
    params = {**copy.deepcopy(DEFAULT_PARAMS.get(strategy, {})), **raw.get("params", {})}
    return {
        "strategy": strategy,
        "seed": int(raw.get("seed", 0)),
        "split": raw.get("split", "train"),
        "normalize": raw.get("normalize", "auto"),
        "domains": domains,
        "groups": groups,
        "params": params,
        "eval": {**DEFAULT_EVAL, **raw.get("eval", {})},
        # who judges is part of what a lock pins; a mixture choosing none keeps its old form
        **({"judges": copy.deepcopy(raw["judges"])} if raw.get("judges") else {}),
    }


def validate(raw: Any, where: str = "mixture config") -> None:
    """Raise :class:`SchedulerError` listing every schema violation of ``raw``."""
    errors = schema_errors(raw)
    if errors:
        raise SchedulerError(f"{where}: " + "; ".join(errors))


def schema_errors(raw: Any) -> list[str]:
    """One line per violation: ``field F: expected E, found X``."""
    from rlhub.manifest import _validator

    errs = sorted(_validator("mixture").iter_errors(raw), key=lambda e: list(map(str, e.path)))
    return [_describe(_deepest(err)) for err in errs]


def _deepest(err: Any) -> Any:
    """For if/then failures the useful error is the innermost one."""
    while err.context:
        err = max(err.context, key=lambda e: len(e.path))
    return err


def _describe(err: Any) -> str:
    where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
    found, want, kind = err.instance, err.validator_value, err.validator
    if kind == "type":
        want = " or ".join(want) if isinstance(want, list) else want
        text = f"expected {_article(want)}, found {_type_name(found)} {found!r}"
    elif kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
        text = f"expected a number {op[kind]} {want}, found {found!r}"
    elif kind == "enum":
        text = f"expected one of {', '.join(map(repr, want))}, found {found!r}"
    elif kind == "additionalProperties":
        text = _unknown_fields(err)
    elif kind == "required":
        missing = [k for k in want if k not in found]
        text = f"expected the field(s) {', '.join(map(repr, missing))}, found none"
    elif kind == "maxProperties" and want == 0:
        text = f"expected no parameters for this strategy, found {sorted(found)}"
    elif kind in ("minItems", "maxItems", "minProperties", "minLength"):
        text = f"expected {kind} {want}, found {found!r}"
    else:
        text = err.message
    return f"field {where}: {text}"


def _unknown_fields(err: Any) -> str:
    allowed = sorted(err.schema.get("properties", {}))
    extra = sorted(set(err.instance) - set(allowed))
    hints = []
    for key in extra:
        close = difflib.get_close_matches(key, allowed, n=1)
        hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"expected only the fields {', '.join(allowed)}, found unknown {', '.join(hints)}"


def _type_name(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _article(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


# -- reading and expansion -------------------------------------------------------------------


def _read(source: str | os.PathLike[str] | dict[str, Any]) -> tuple[Any, str]:
    if isinstance(source, dict):
        return copy.deepcopy(source), "mixture config"
    path = Path(source)
    where = f"mixture file {path}"
    try:
        text = path.read_text()
    except OSError as exc:
        raise SchedulerError(f"{where}: expected a readable file, found {exc.strerror}") from exc
    from rlhub.yamldata import YamlRefused, load_yaml

    try:
        return (json.loads(text) if path.suffix == ".json" else load_yaml(text)), where
    except YamlRefused as exc:
        raise SchedulerError(f"{where}: {exc}") from None
    except ValueError as exc:
        raise SchedulerError(f"{where}: expected JSON, found a syntax error: {exc}") from exc


def _entries(raw: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(pattern, options) pairs in application order: globs first, then exact ids."""
    domains = raw["domains"]
    if isinstance(domains, list):
        pairs = [(name, {}) for name in domains]
    else:
        pairs = [(k, {"weight": v} if isinstance(v, (int, float)) else dict(v))
                 for k, v in domains.items()]
    for group, spec in raw.get("groups", {}).items():
        pairs += [(member, {"group": group}) for member in spec.get("members", [])]
    return sorted(pairs, key=lambda kv: not is_glob(kv[0]))  # stable: file order within each kind


def is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in GLOB_CHARS)


def _expand(entries: list[tuple[str, dict[str, Any]]], registry: RegistryLike | None,
            where: str) -> dict[str, list[str]]:
    """Map each pattern to the concrete ids it names."""
    out: dict[str, list[str]] = {}
    for pattern, _ in entries:
        if registry is not None:
            try:
                out[pattern] = registry.match([pattern])
            except DomainNotFound as exc:
                raise SchedulerError(f"{where}: field domains.{pattern}: {exc}") from None
        elif is_glob(pattern):
            raise SchedulerError(
                f"{where}: field domains.{pattern}: expected a domain id, found a glob, which "
                "needs a registry to expand; pass registry= or name the domains by id")
        else:
            out[pattern] = [pattern]
    return out


def _domain_specs(entries: list[tuple[str, dict[str, Any]]], ids: dict[str, list[str]],
                  registry: RegistryLike | None) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for pattern, options in entries:
        for domain_id in ids[pattern]:
            merged.setdefault(domain_id, {}).update(options)
    return {d: _domain_spec(d, opts, registry) for d, opts in merged.items()}


def _domain_spec(domain_id: str, opts: dict[str, Any], registry: RegistryLike | None) -> dict[str, Any]:
    manifest = registry.manifest(domain_id) if registry is not None else None
    size = opts.get("size", manifest.data.get("size") if manifest else None)
    rng = opts.get("reward_range", list(manifest.reward_range) if manifest else None)
    if rng is not None and not rng[0] < rng[1]:
        raise SchedulerError(f"mixture config: field domains.{domain_id}.reward_range: "
                             f"expected [low, high] with low < high, found {rng}")
    return {
        "weight": float(opts.get("weight", 1.0)),
        "size": size,
        "group": opts.get("group"),
        "reward_range": [float(rng[0]), float(rng[1])] if rng is not None else None,
        "normalize": opts.get("normalize"),
    }


def _groups(raw: dict[str, Any], domains: dict[str, dict[str, Any]],
            where: str) -> dict[str, dict[str, Any]]:
    declared = raw.get("groups", {})
    default_norm = raw.get("normalize", "auto")
    groups: dict[str, dict[str, Any]] = {}
    for name, spec in declared.items():
        groups[name] = {"weight": float(spec.get("weight", 1.0)), "members": []}
    for domain_id, spec in domains.items():
        spec["normalize"] = spec["normalize"] or default_norm
        if spec["group"] is not None:
            groups.setdefault(spec["group"], {"weight": 1.0, "members": []})
            groups[spec["group"]]["members"].append(domain_id)
    empty = [name for name, g in groups.items() if not g["members"]]
    if empty:
        raise SchedulerError(f"{where}: field groups.{empty[0]}: expected at least one member "
                             "domain, found none (name it in a domain's group or in members)")
    return groups
