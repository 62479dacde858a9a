"""The source a module's behaviour depends on, found by reading its imports (never running them).

:func:`closure` follows a module's imports inside its own top-level package and returns the
sha256 of every module source it reaches: change a helper the verifier imports and the closure
changes. Imports anywhere in a module count (those inside functions too, where heavy scoring
libraries are usually imported), with one exception: inside ``rlhub`` itself only module-level
imports are followed, because rlhub's functions import the rest of the application lazily (the
registry, the trainers) and rlhub's own version is pinned separately.

:func:`libraries` maps the third-party imports met on the way (not the standard library, not the
package itself, not rlhub) to the installed distributions and their versions, e.g.
``{"math-verify": "0.8.0"}``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import sys
from importlib import metadata
from pathlib import Path

CORE = "rlhub"


@functools.cache
def _source(module: str) -> tuple[str, str] | None:
    """``(path, sha256)`` of a module's source file, found without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec else None
    if not origin or not origin.endswith(".py"):
        return None
    try:
        data = Path(origin).read_bytes()
    except OSError:
        return None
    return origin, hashlib.sha256(data).hexdigest()


@functools.cache
def _imports(module: str) -> tuple[tuple[str, bool], ...]:
    """Every module name ``module`` imports, with whether the import is at module level."""
    found = _source(module)
    if found is None:
        return ()
    tree = ast.parse(Path(found[0]).read_bytes())
    package = module if found[0].endswith("__init__.py") else module.rpartition(".")[0]
    top_level = {id(n) for stmt in tree.body if not isinstance(stmt, _DEFS)
                 for n in ast.walk(stmt)}
    out: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        for name in _names(node, package):
            out.append((name, id(node) in top_level))
    return tuple(out)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _names(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]  # a name may be a module


@functools.cache
def _walk(root: str) -> tuple[dict[str, str], frozenset[str]]:
    """``({module: sha256}, third-party top-level names)`` reachable from ``root``."""
    top = root.split(".")[0]
    seen: dict[str, str] = {}
    outside: set[str] = set()
    todo = [root]
    while todo:
        module = todo.pop()
        found = None if module in seen else _source(module)
        if found is None:
            continue
        seen[module] = found[1]
        for name, module_level in _imports(module):
            head = name.split(".")[0]
            if head == top and (module_level or top != CORE):
                todo.append(name)
            elif head != top:
                outside.add(head)
    return seen, frozenset(outside - set(sys.stdlib_module_names) - {"__future__"})


def closure(root: str) -> dict[str, str]:
    """Every module of ``root``'s package that ``root`` reaches, with the sha256 of its source."""
    return dict(_walk(root)[0])


@functools.cache
def _distributions() -> dict[str, tuple[str, ...]]:
    return {k: tuple(v) for k, v in metadata.packages_distributions().items()}


@functools.cache
def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def libraries(root: str, exclude: frozenset[str] = frozenset()) -> dict[str, str]:
    """``{distribution: version}`` of the third-party packages ``root``'s closure imports."""
    out: dict[str, str] = {}
    for name in sorted(_walk(root)[1]):
        for dist in _distributions().get(name, ()):
            version = None if dist in exclude or dist == CORE else _version(dist)
            if version is not None:
                out[dist] = version
    return out


def forget() -> None:
    """Drop every cached result (sources are read once per process otherwise)."""
    for cached in (_source, _imports, _walk, _distributions, _version):
        cached.cache_clear()
