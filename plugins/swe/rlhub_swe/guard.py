"""What a patch may change, checked before a single test runs.

Tests run in the same Python process as the code under test, so a patch could win them by
changing the tests' world instead of the code: editing or deleting tests, configuration that
deselects or forces them, ``sys.exit(0)`` at import, patching the test runner, special-casing the
inputs it reads from the test files. Two rules close those doors; either broken earns the
minimum, with feedback saying which:

* **paths**: only Python source files of the package may change (or be added). Test files and
  folders, ``conftest.py``, ``pytest.ini``, ``tox.ini``, ``setup.cfg``, ``pyproject.toml``,
  ``setup.py``, ``sitecustomize``/``usercustomize``, ``.pth`` files and anything outside the
  package are refused.
* **code**: what the patch *adds* to a file (counted against the original file, so code the
  project already had is not held against it) may not import beyond a list of pure-computation
  standard library modules and the project itself, nor use the names and attributes that reach
  the interpreter, the process or the file system: ``exec``, ``eval``, ``open``, ``getattr``,
  ``globals``, dunder attributes such as ``__dict__`` or ``__globals__``, ``sys.modules``,
  ``os._exit``, ``sys.exit``, frames, ``environ``, ``listdir``, ...

The grader adds what no patch can pass: hidden tests written after the patch, results read
through a nonce-tagged channel only the trusted reporter writes (:mod:`rlhub_swe.grading`).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Mapping

CONFIG_FILES = {"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "setup.py",
                "sitecustomize.py", "usercustomize.py", "noxfile.py", "manage.py", ".coveragerc"}
TEST_DIRS = {"test", "tests", "testing"}
SAFE_MODULES = {
    "abc", "array", "bisect", "calendar", "cmath", "collections", "copy", "dataclasses",
    "datetime", "decimal", "difflib", "enum", "fnmatch", "fractions", "functools", "hashlib",
    "heapq", "itertools", "json", "keyword", "math", "numbers", "operator", "pprint", "random",
    "re", "reprlib", "statistics", "string", "textwrap", "typing", "unicodedata", "uuid",
    "warnings", "__future__", "zlib", "base64", "binascii", "struct", "contextlib",
}
BANNED_NAMES = {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "getattr",
                "setattr", "delattr", "open", "breakpoint", "input", "exit", "quit", "help",
                "__builtins__", "__loader__", "__spec__", "__file__"}
BANNED_ATTRIBUTES = {
    "_exit", "exit", "abort", "kill", "killpg", "modules", "settrace", "setprofile", "_getframe",
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "gi_frame", "cr_frame",
    "tb_frame", "tb_next", "system", "popen", "fork", "forkpty", "execv", "execve", "execl",
    "execlp", "execvp", "execvpe", "spawnl", "spawnv", "listdir", "scandir", "walk", "environ",
    "stdout", "stderr", "stdin", "argv", "unlink", "remove", "rmdir", "rename", "chmod",
    "read_text", "read_bytes", "write_text", "write_bytes", "getsource", "stack", "currentframe",
}
ALLOWED_DUNDERS = {"__name__", "__main__", "__doc__", "__init__", "__all__", "__version__",
                   "__qualname__", "__module__", "__slots__", "__annotations__"}


def is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return bool(TEST_DIRS & set(parts[:-1])) or name.startswith("test_") or \
        name.endswith("_test.py") or name == "tests.py"


def path_problem(path: str, packages: Iterable[str]) -> str:
    """Why the patch may not change ``path`` ('' when it may)."""
    name = path.rsplit("/", 1)[-1]
    if name in CONFIG_FILES or name.endswith(".pth") or name.startswith(("sitecustomize",
                                                                        "usercustomize")):
        return f"{path} is test or interpreter configuration"
    if is_test_path(path):
        return f"{path} is a test file"
    if not path.endswith(".py"):
        return f"{path} is not a Python source file"
    if not any(path.startswith(p.rstrip("/") + "/") for p in packages):
        return f"{path} is outside the package ({', '.join(packages)})"
    return ""


def _import_roots(tree: ast.AST) -> Counter[str]:
    found: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found[node.module.split(".")[0]] += 1
    return found


def _uses(tree: ast.AST) -> Counter[str]:
    found: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and (node.id in BANNED_NAMES or _dunder(node.id)):
            found[node.id] += 1
        elif isinstance(node, ast.Attribute) and (node.attr in BANNED_ATTRIBUTES
                                                  or _dunder(node.attr)):
            found["." + node.attr] += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                _dunder(node.value):
            found[repr(node.value)] += 1
    return found


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and name not in ALLOWED_DUNDERS


def code_problem(path: str, before: str | None, after: str, packages: Iterable[str]) -> str:
    """What the patch adds to ``path`` that it may not ('' when nothing)."""
    try:
        new = ast.parse(after)
    except SyntaxError:
        return ""  # code that does not parse fails every test that imports it
    try:
        old = ast.parse(before) if before else ast.Module(body=[], type_ignores=[])
    except SyntaxError:
        old = ast.Module(body=[], type_ignores=[])
    own = {p.rstrip("/").split("/")[-1] for p in packages}
    imports = _import_roots(new) - _import_roots(old)
    bad = sorted(m for m in imports if m not in SAFE_MODULES and m not in own)
    if bad:
        return f"{path} imports {', '.join(bad)}, which a fix may not add"
    uses = _uses(new) - _uses(old)
    if uses:
        return f"{path} adds {', '.join(sorted(uses))}, which a fix may not use"
    return ""


def review(changes: Mapping[str, str | None], original: Mapping[str, str],
           packages: Iterable[str]) -> str:
    """The first rule ``changes`` break ('' when none); see the module docstring."""
    packages = list(packages)
    for path in sorted(changes):
        problem = path_problem(path, packages)
        after = changes[path]
        if not problem and after is not None:
            problem = code_problem(path, original.get(path), after, packages)
        if problem:
            return problem
    return ""
