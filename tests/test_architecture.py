"""The import graph: layers import one way, no module cycle, plugins use the public surface.

Every import is read from the source with ``ast``: module-level ones and those inside functions
alike (a deferred import is still a dependency). The layers are the folders ``package-dir`` maps
in pyproject.toml: ``core/`` (``rlhub``) imports neither ``integrations/`` nor the app layer above both;
``integrations/`` does not import the app layer. No cycle is allowed among the imports that run, nor among
those under ``if TYPE_CHECKING:`` (they only name types). First-party plugins import only rlhub's
public surface, and another plugin's package only when they declare its distribution; core
imports no plugin.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"core": 0, "integrations": 1, "cli": 2}  # a layer imports only from layers below or its own
MODULE_REF = re.compile(r"^rlhub(\.\w+)+:[\w.]+$")  # a lazy "module:attr" reference


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target``; ``typing`` when only under ``if TYPE_CHECKING:``."""

    source: str
    target: str
    line: int
    typing: bool = False


def package_dirs() -> dict[str, Path]:
    """``{import package: folder}`` from pyproject.toml's ``package-dir``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {name: ROOT / folder for name, folder in config["package-dir"].items()}


def modules() -> dict[str, Path]:
    """Every module of rlhub: ``{dotted name: file}``."""
    found = {}
    for package, folder in package_dirs().items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def layer(module: str) -> str:
    """The folder (core, integrations, cli) a module lives in; a ``__main__`` module (``python -m
    rlhub``) is an entry point of the app layer wherever Python needs it to sit."""
    if module.endswith(".__main__"):
        return "cli"
    best = max((p for p in package_dirs() if module == p or module.startswith(p + ".")), key=len)
    return package_dirs()[best].name


def _typing_nodes(tree: ast.AST) -> set[int]:
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            guarded |= {id(sub) for stmt in node.body for sub in ast.walk(stmt)}
    return guarded


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, path: Path, known: set[str]) -> list[Edge]:
    """What ``module`` imports, as edges to rlhub modules (``from a import b``: ``a.b`` when
    that is a module, else ``a``)."""
    tree = ast.parse(path.read_text(), str(path))
    typing = _typing_nodes(tree)
    edges = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node, path.name == "__init__.py")
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        edges += [Edge(module, t, node.lineno, id(node) in typing)
                  for t in targets if t.split(".")[0] == "rlhub" and t != module]
    return edges


def string_refs(module: str, path: Path) -> list[Edge]:
    """``"rlhub.x.y:attr"`` strings outside docstrings: imports made by name (a factory, a
    verifier, a backend named in a hook's answer)."""
    tree = ast.parse(path.read_text(), str(path))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)}
    return [Edge(module, node.value.partition(":")[0], node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs and MODULE_REF.match(node.value)
            and node.value.partition(":")[0] != module]


# Entry points: the only modules that may look the process registry up (``rlhub.registry()``).
# ``Scheduler.from_config`` is one: a user's script passes it a mixture and nothing else.
ENTRY_POINTS = ("rlhub.plugins", "rlhub.cli", "rlhub.testing", "rlhub.integrations.exports.verifiers_env",
                "rlhub.scheduler.core")


def registry_lookups(module: str, path: Path) -> list[str]:
    """Where ``module`` imports or calls the process-wide ``registry()``."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("rlhub", "rlhub.plugins") \
                and any(a.name == "registry" for a in node.names):
            found.append(f"{module} line {node.lineno}")
        elif isinstance(node, ast.Attribute) and node.attr == "registry" \
                and isinstance(node.value, ast.Name) and node.value.id in ("rlhub", "plugins"):
            found.append(f"{module} line {node.lineno}")
    return found


def graph() -> list[Edge]:
    found = modules()
    known = set(found)
    edges = []
    for name, path in found.items():
        edges += imports(name, path, known) + string_refs(name, path)
    return [e for e in edges if e.target in known]


def upward(edges: list[Edge]) -> list[str]:
    """Imports from a lower layer into a higher one."""
    return sorted({f"{e.source} -> {e.target}" for e in edges
                   if LAYERS[layer(e.target)] > LAYERS[layer(e.source)]})


def cycles(edges: list[Edge], *, typing: bool = False) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted; with
    ``typing``, imports under ``if TYPE_CHECKING:`` count too."""
    out: dict[str, set[str]] = {}
    for e in edges:
        if typing or not e.typing:
            out.setdefault(e.source, set()).add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(out.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(out):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_core_never_imports_the_outer_layers_and_the_hub_never_imports_the_app():
    assert upward(graph()) == []


def test_no_module_takes_part_in_an_import_cycle():
    assert cycles(graph()) == []


def test_no_import_cycle_appears_even_under_type_checking():
    """The lower modules name a registry, its services and a scheduler by the Protocols of
    :mod:`rlhub.protocols`, so no annotation closes a cycle either."""
    assert cycles(graph(), typing=True) == []


def test_a_typing_only_cycle_is_found_when_asked():
    edges = [Edge("x", "y", 1), Edge("y", "x", 1, typing=True), Edge("y", "z", 1, typing=True),
             Edge("z", "x", 1, typing=True)]
    assert cycles(edges, typing=True) == [["x", "y", "z"]]
    assert cycles(edges) == []


def test_only_entry_points_look_up_the_process_registry():
    found = [hit for name, path in modules().items()
             if name != "rlhub" and not name.startswith(ENTRY_POINTS)
             for hit in registry_lookups(name, path)]
    assert found == []


def test_the_walker_sees_imports_inside_functions_and_by_name(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text('"""rlhub.integrations.doc is prose."""\nfrom typing import TYPE_CHECKING\n'
                      "if TYPE_CHECKING:\n    from rlhub.task import Task\n"
                      "def f():\n    from rlhub.integrations.hub import lock\n    import rlhub.domain\n"
                      '    return "rlhub.integrations.trainer.local:make"\n')
    known = {"rlhub.integrations.hub.lock", "rlhub.domain", "rlhub.task"}
    edges = imports("rlhub.mod", source, known) + string_refs("rlhub.mod", source)
    assert {(e.target, e.typing) for e in edges} == {
        ("rlhub.task", True), ("rlhub.integrations.hub.lock", False), ("rlhub.domain", False),
        ("rlhub.integrations.trainer.local", False)}


def test_a_cycle_of_three_modules_is_found_and_a_typing_only_one_is_not():
    edges = [Edge("a", "b", 1), Edge("b", "c", 1), Edge("c", "a", 1),
             Edge("x", "y", 1), Edge("y", "x", 1, typing=True)]
    assert cycles(edges) == [["a", "b", "c"]]


def unguarded_hook_calls(module: str, path: Path) -> list[str]:
    """Calls of a hook (``pm.hook.<name>(...)``, or through ``getattr(...pm.hook, name)``) not
    inside a ``with boundary(...)`` block, where a plugin's exception would escape unnamed."""
    tree = ast.parse(path.read_text(), str(path))
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and any(
                isinstance(item.context_expr, ast.Call)
                and ast.unparse(item.context_expr.func).endswith("boundary")
                for item in node.items):
            guarded |= {id(sub) for stmt in node.body for sub in ast.walk(stmt)}
    return [f"{module} line {node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and "pm.hook" in ast.unparse(node.func)
            and "get_hookimpls" not in ast.unparse(node.func) and id(node) not in guarded]


def test_every_hook_call_goes_through_boundary():
    found = [hit for name, path in modules().items() for hit in unguarded_hook_calls(name, path)]
    assert found == []


def test_the_hook_call_finder_sees_an_unguarded_call(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text("def f(r):\n    with boundary(E, 'x'):\n        r.pm.hook.a()\n"
                      "    return r.pm.hook.b(x=1), getattr(r.pm.hook, 'c')()\n")
    assert unguarded_hook_calls("m", source) == ["m line 4", "m line 4"]


# What a plugin may import from rlhub: the facade and the public modules PLUGINS.md lists under
# "What you may import". Every other rlhub module is private and may move.
PUBLIC = ("rlhub", "rlhub.bridges", "rlhub.tools", "rlhub.verifiers.bounded",
          "rlhub.verifiers.patterns", "rlhub.integrations.exports.verifiers_env")
PUBLIC_PACKAGES = ("rlhub.testing",)


def is_public(module: str) -> bool:
    return module in PUBLIC or any(module == p or module.startswith(p + ".")
                                   for p in PUBLIC_PACKAGES)


def plugin_modules() -> dict[str, Path]:
    """Every module a first-party plugin ships: ``{dotted name: file}`` for each package under
    ``plugins/<plugin>/`` (its tests are not shipped, so not held to the public surface)."""
    found = {}
    for init in sorted(ROOT.glob("plugins/*/*/__init__.py")):
        if init.parent.name == "tests":
            continue
        for path in init.parent.rglob("*.py"):
            parts = list(path.relative_to(init.parent.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def private_imports(module: str, path: Path, known: set[str]) -> list[str]:
    """The private rlhub modules ``module`` imports (anywhere in the file, or names as a
    ``"module:attr"`` string), as ``"module -> target"``."""
    edges = imports(module, path, known) + string_refs(module, path)
    return sorted({f"{module} -> {e.target}" for e in edges if not is_public(e.target)})


def test_no_first_party_plugin_imports_a_private_rlhub_module():
    known = set(modules())
    found = {hit for name, path in plugin_modules().items()
             for hit in private_imports(name, path, known)}
    assert sorted(found) == []


def test_every_public_module_a_plugin_may_import_exists():
    known = set(modules())
    assert [m for m in PUBLIC + PUBLIC_PACKAGES if m not in known] == []


def test_the_plugin_walker_sees_private_imports_at_any_depth(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text("from rlhub import Domain, sandbox\nfrom rlhub.verifiers import bounded\n"
                      "from rlhub.testing.probes import x\nimport rlhub.bridges\n"
                      "def f():\n    from rlhub.task import task_id\n"
                      '    return "rlhub.store:Store"\n')
    known = {"rlhub", "rlhub.sandbox", "rlhub.verifiers.bounded", "rlhub.testing.probes",
             "rlhub.bridges", "rlhub.task", "rlhub.store"}
    assert private_imports("p.mod", source, known) == [
        "p.mod -> rlhub.sandbox", "p.mod -> rlhub.store", "p.mod -> rlhub.task"]


XML_PARSERS = frozenset({"xml", "lxml", "defusedxml", "xmltodict", "html5lib", "bs4"})


def absolute_imports(path: Path) -> list[tuple[str, int]]:
    """Every absolute import of a file (anywhere in it), as ``(module, line)``."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append((node.module, node.lineno))
    return names


def xml_imports(path: Path) -> list[str]:
    """The XML parsers a file imports (anywhere in it)."""
    return sorted({n for n, _ in absolute_imports(path) if n.split(".")[0] in XML_PARSERS})


def test_nothing_rlhub_ships_parses_xml():
    """SECURITY.md: an XML document's external entities can make a parser fetch URLs or read
    files; rlhub and its first-party plugins parse no XML, so no such entity is ever resolved."""
    shipped = {**modules(), **plugin_modules()}
    found = [f"{module} imports {name}" for module, path in shipped.items()
             for name in xml_imports(path)]
    assert found == []


def test_the_xml_finder_sees_a_parser_imported_inside_a_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from xml.etree import ElementTree\n    import lxml.etree\n")
    assert xml_imports(module) == ["lxml.etree", "xml.etree"]


# -- plugins and core: who may import a plugin's package ----------------------------------------


@dataclass(frozen=True)
class Plugin:
    """A first-party plugin: its distribution, the packages it ships, the distributions it
    declares (``dependencies`` and every optional extra)."""

    dist: str
    packages: frozenset[str]
    declared: frozenset[str]


def _dist_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def first_party_plugins() -> list[Plugin]:
    """Every ``plugins/*/pyproject.toml``."""
    found = []
    for path in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        config = tomllib.loads(path.read_text())
        project = config["project"]
        requires = list(project.get("dependencies", []))
        extras = project.get("optional-dependencies", {}).values()
        requires += [r for extra in extras for r in extra]
        packages = {p.split(".")[0] for p in config["tool"]["setuptools"]["packages"]}
        found.append(Plugin(project["name"], frozenset(packages),
                            frozenset(_dist_name(r) for r in requires)))
    return found


PLUGIN_REF = re.compile(r"^(\w+)(\.\w+)*:[\w.]+$")  # a lazy "module:attr" reference


def package_imports(path: Path) -> list[tuple[str, int]]:
    """The top-level packages a file imports or names in a ``"module:attr"`` string."""
    tree = ast.parse(path.read_text(), str(path))
    refs = [(node.value.split(".")[0].partition(":")[0], node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and PLUGIN_REF.match(node.value)]
    return [(name.split(".")[0], line) for name, line in absolute_imports(path)] + refs


def undeclared_plugin_imports(plugins: list[Plugin], files: dict[str, Path]) -> list[str]:
    """``"module line N -> package"`` where a plugin's module imports another plugin's package
    whose distribution the importing plugin does not declare."""
    owner = {package: plugin for plugin in plugins for package in plugin.packages}
    found = []
    for module, path in files.items():
        mine = owner.get(module.split(".")[0])
        for package, line in package_imports(path):
            theirs = owner.get(package)
            if mine and theirs and theirs is not mine and theirs.dist not in mine.declared:
                found.append(f"{module} line {line} -> {package} ({theirs.dist} not declared)")
    return sorted(found)


def test_a_plugin_imports_another_plugin_only_when_it_declares_that_dependency():
    assert undeclared_plugin_imports(first_party_plugins(), plugin_modules()) == []


def test_rlhub_imports_no_plugin_package():
    """rlhub (core, integrations and cli alike) finds plugins through entry points and ``RLHUB_PLUGINS``,
    never by importing one."""
    plugin_packages = {p for plugin in first_party_plugins() for p in plugin.packages}
    found = [f"{module} line {line} -> {package}" for module, path in modules().items()
             for package, line in package_imports(path)
             if package in plugin_packages]
    assert found == []


def test_the_plugin_import_walker_sees_an_undeclared_import_and_accepts_a_declared_one(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from b_pkg.catalog import name\n    import c_pkg\n"
                      '    return "b_pkg.x:y"\n')
    plugins = [Plugin("a", frozenset({"a_pkg"}), frozenset({"c"})),
               Plugin("b", frozenset({"b_pkg"}), frozenset()),
               Plugin("c", frozenset({"c_pkg"}), frozenset())]
    assert undeclared_plugin_imports(plugins, {"a_pkg.m": source}) == [
        "a_pkg.m line 2 -> b_pkg (b not declared)", "a_pkg.m line 4 -> b_pkg (b not declared)"]
    assert _dist_name("Rlhub_TextArena[extra]>=1.0") == "rlhub-textarena"
