"""Running a generated package in memory, to learn what its functions return.

Only code rlhub-swe generated itself runs here (the reference and its own bug-injected
variants, never a model's output): pure functions of ints, strings and lists, each call bounded
by its inputs. The package's modules are executed into fresh module objects whose imports of the
package resolve to each other, so nothing is written to disk or added to ``sys.modules``.
"""

from __future__ import annotations

import builtins
import types
from typing import Any

RAISED = "<raised>"


def load(package: str, sources: dict[str, str], modules: list[str]) -> dict[str, types.ModuleType]:
    """The package's modules by dotted name, executed in ``modules`` order (callees first)."""
    loaded: dict[str, types.ModuleType] = {package: types.ModuleType(package)}

    def importer(name: str, globals_: Any = None, locals_: Any = None, fromlist: Any = (),
                 level: int = 0) -> Any:
        if name == package or name.startswith(package + "."):
            return loaded[name] if fromlist else loaded[package]
        return builtins.__import__(name, globals_, locals_, fromlist, level)

    own_builtins = {**vars(builtins), "__import__": importer}
    for module in modules:
        dotted = f"{package}.{module}"
        mod = types.ModuleType(dotted)
        mod.__dict__["__builtins__"] = own_builtins
        exec(compile(sources[f"{package}/{module}.py"], dotted, "exec"), mod.__dict__)  # noqa: S102
        loaded[dotted] = mod
        setattr(loaded[package], module, mod)
    return loaded


def evaluate(package: str, sources: dict[str, str], modules: list[str],
             calls: dict[str, tuple[str, list[tuple]]]) -> dict[str, list[object]]:
    """For each function name, its results on its cases (:data:`RAISED` plus the exception's
    name where a call raised, so a bug that makes a function crash counts as a change)."""
    loaded = load(package, sources, modules)
    results: dict[str, list[object]] = {}
    for name, (module, cases) in calls.items():
        fn = getattr(loaded[f"{package}.{module}"], name, None)
        results[name] = [_call(fn, args) for args in cases]
    return results


def _call(fn: Any, args: tuple) -> object:
    if fn is None:
        return f"{RAISED}AttributeError"
    try:
        return fn(*[list(a) if isinstance(a, list) else a for a in args])
    except Exception as exc:  # noqa: BLE001 - a crashing variant is a result, not an error
        return f"{RAISED}{type(exc).__name__}"
