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

The ``pattern`` and ``patternProperties`` keywords run Python's backtracking ``re``;
:func:`patterns` lists them so that a caller can check each one
(:func:`rlhub.verifiers.patterns.check_pattern`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

REF_KEYWORDS = ("$ref", "$dynamicRef")


def _registry() -> Any:
    from referencing import Registry

    return Registry()  # its retrieve function fails: nothing is ever fetched


def validator(schema: Any) -> Any:
    """A draft 2020-12 validator of ``schema`` that never retrieves a reference."""
    import jsonschema

    return jsonschema.Draft202012Validator(schema, registry=_registry())


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
