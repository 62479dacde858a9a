"""JSON Schemas compiled offline: nothing a schema says makes the host fetch anything.

jsonschema resolves a ``$ref`` it cannot find inside the schema by downloading it (urllib, with
a deprecation warning) unless the validator is given a registry. A schema from data (a
``json-schema`` verifier's ``schema`` option, a dataset row's answer) would then make the grading
process fetch a URL at every verification, outside any sandbox, and whoever serves it would decide
the reward. Every schema rlhub validates with is therefore compiled by :func:`validator` against a
:class:`referencing.Registry` with no retrieve function (plus the JSON Schema meta-schemas that
jsonschema ships), and :func:`unresolved_refs` lists, before anything is validated, each
``$ref``/``$dynamicRef`` that does not resolve inside the schema itself: callers refuse such a
schema with an error naming the domain (at ``rlhub pull``, when a domain is loaded, at
verification).

The ``pattern``, ``patternProperties`` and ``additionalProperties`` keywords of that validator
match on the linear-time engine (:func:`rlhub.verifiers.patterns.compile_pattern`), where
jsonschema's own would run Python's backtracking ``re`` on model output; a pattern RE2 refuses is
a :class:`~rlhub.verifiers.patterns.PatternError` (the environment's error). ``unevaluatedProperties``
beside ``patternProperties`` would still reach ``re``, so such a schema is refused
(:func:`engine_problem`). :func:`patterns` lists a schema's patterns so that loading and
``rlhub pull`` can refuse a bad one up front, naming the domain.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from rlhub.verifiers.patterns import PatternError, compile_pattern

REF_KEYWORDS = ("$ref", "$dynamicRef")


def _registry() -> Any:
    from referencing import Registry

    return Registry()  # its retrieve function fails: nothing is ever fetched


def validator(schema: Any) -> Any:
    """A draft 2020-12 validator of ``schema`` that never retrieves a reference and matches its
    patterns in linear time; raises :class:`PatternError` when it cannot (:func:`engine_problem`)."""
    problem = engine_problem(schema, "JSON Schema")
    if problem:
        raise PatternError(problem)
    return _validator_class()(schema, registry=_registry())


def engine_problem(schema: Any, where: str) -> str | None:
    """A refusal naming ``where`` when ``schema`` pairs ``unevaluatedProperties`` with
    ``patternProperties`` (jsonschema would match those with ``re``), else None."""
    if not _mentions(schema, ("unevaluatedProperties",)) or not _mentions(
            schema, ("patternProperties",)):
        return None
    return (f"{where}: a schema may not combine unevaluatedProperties with patternProperties "
            "(not supported by the linear-time engine); use additionalProperties")


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any,
                        schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if compile_pattern(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any,
                           schema: Any) -> Iterator[Any]:
    """jsonschema's own keyword, told which keys the patterns matched (found with RE2)."""
    from jsonschema import Draft202012Validator

    patterns = schema.get("patternProperties") or {}
    if validator.is_type(instance, "object") and patterns:
        matched = {k for k in instance if any(compile_pattern(p).search(k) for p in patterns)}
        properties = {**dict.fromkeys(matched, True), **schema.get("properties", {})}
        schema = {k: v for k, v in schema.items() if k != "patternProperties"}
        schema["properties"] = properties
    yield from Draft202012Validator.VALIDATORS["additionalProperties"](
        validator, additional, instance, schema)


@functools.cache
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator, validators

    return validators.extend(Draft202012Validator, {
        "pattern": _pattern, "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties})


def unresolved_refs(schema: Any) -> list[str]:
    """Every ``$ref``/``$dynamicRef`` of ``schema`` that does not resolve inside it (nor to a
    JSON Schema meta-schema), in document order; a schema nested too deeply for the walk is one
    problem too."""
    if not isinstance(schema, dict) or not _mentions(schema, REF_KEYWORDS):
        return []
    from jsonschema_specifications import REGISTRY as SPECIFICATIONS
    from referencing.jsonschema import DRAFT202012

    resource = DRAFT202012.create_resource(schema)
    registry = SPECIFICATIONS.combine(_registry().with_resource(resource.id() or "", resource))
    try:
        registry = registry.crawl()
        resolver = registry.resolver_with_root(resource)
        return list(_unresolved(resource, resolver))
    except RecursionError:
        return ["(the schema is nested too deeply to check its references)"]


def _unresolved(resource: Any, resolver: Any) -> Iterator[str]:
    from referencing.exceptions import Unresolvable

    contents = resource.contents
    if isinstance(contents, dict):
        for key in REF_KEYWORDS:
            ref = contents.get(key)
            if not isinstance(ref, str):
                continue
            try:
                resolver.lookup(ref)
            except Unresolvable:
                yield ref
    for sub in resource.subresources():
        yield from _unresolved(sub, resolver.in_subresource(sub))


def patterns(schema: Any) -> list[str]:
    """The regular expressions of ``schema``'s ``pattern`` and ``patternProperties`` keywords."""
    if not isinstance(schema, dict) or not _mentions(schema, ("pattern", "patternProperties")):
        return []
    from referencing.jsonschema import DRAFT202012

    found: list[str] = []
    try:
        _patterns(DRAFT202012.create_resource(schema), found)
    except RecursionError:
        found.append("(" * 1000)  # nested too deeply: refused as a pattern nobody can check
    return found


def _patterns(resource: Any, found: list[str]) -> None:
    contents = resource.contents
    if isinstance(contents, dict):
        if isinstance(contents.get("pattern"), str):
            found.append(contents["pattern"])
        if isinstance(contents.get("patternProperties"), dict):
            found += [p for p in contents["patternProperties"] if isinstance(p, str)]
    for sub in resource.subresources():
        _patterns(sub, found)


def _mentions(value: Any, keys: tuple[str, ...]) -> bool:
    """Whether any mapping inside ``value`` has one of ``keys`` (a quick walk, no recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if any(k in item for k in keys):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def remote_problem(schema: Any, where: str) -> str | None:
    """A refusal naming ``where`` when ``schema`` refers to anything outside itself, else None."""
    refs = unresolved_refs(schema)
    if not refs:
        return None
    shown = ", ".join(repr(r) for r in refs[:5]) + (f" and {len(refs) - 5} more" if len(refs) > 5
                                                    else "")
    return (f"{where}: expected a JSON Schema whose references all resolve inside it, found "
            f"{shown}; rlhub never fetches a schema reference, so inline what it refers to "
            "(under $defs) or drop it")
