"""What a local job sees of the host: a minimal read-only runtime, plus the libraries it declares.

The ``local`` backend builds each sandbox's root from :func:`runtime_args` instead of binding the
host's ``/``: the system directories the interpreter and the toolchains run from (``/usr`` and its
``/bin``, ``/lib*`` links), a few files of ``/etc`` that libc and Python read, and nothing else.
Inside them, every site-packages directory of the job interpreter and ``/usr/local`` (unless the
interpreter or a tool lives there) are covered by empty read-only tmpfs mounts. So no home
directory, project, virtualenv, ``$RLHUB_HOME``, dataset or plugin source is reachable.

A request's ``libraries`` names installed distributions its job may import: :func:`library_binds`
maps each one, and the distributions it requires, to read-only binds under :data:`LIBRARY_DIR`,
which the worker puts on ``sys.path``. rlhub and its plugins (the graders) are never allowed.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from rlhub.errors import SandboxError

RUNTIME_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What libc, the dynamic linker, Python and compilers read from /etc (when present).
ETC_FILES = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf",
    "hosts", "host.conf", "resolv.conf", "gai.conf", "services", "protocols", "ssl",
    "ca-certificates", "mime.types",
)
LIBRARY_DIR = "/rlhub/lib"
GRADER_GROUP = "rlhub.plugins"
PROBE = (
    "import json, site, sys; print(json.dumps({'version': list(sys.version_info[:2]), "
    "'site': site.getsitepackages() + [site.getusersitepackages()]}))"
)


@functools.cache
def interpreter_facts(python: str) -> dict[str, object]:
    """The job interpreter's version and site-packages directories (asked once per path)."""
    try:
        done = subprocess.run([python, "-I", "-c", PROBE], capture_output=True, timeout=60,
                              check=True, env={"PATH": "/usr/bin:/bin"})
        return json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise SandboxError(f"local sandbox: could not ask {python} for its paths: {exc}") from exc


def under(path: str, roots: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)


def hidden_dirs(python: str, tools: Iterable[str]) -> list[str]:
    """Directories inside the runtime that jobs must not see: site-packages, and ``/usr/local``
    unless the interpreter or a tool runs from there."""
    hidden = []
    if os.path.isdir("/usr/local") and not under(python, ["/usr/local"]) and not any(
        under(tool, ["/usr/local"]) for tool in tools
    ):
        hidden.append("/usr/local")
    for site in interpreter_facts(python)["site"]:  # type: ignore[union-attr]
        if os.path.isdir(site) and under(site, RUNTIME_DIRS) and not under(site, hidden):
            hidden.append(site)
    return hidden


def runtime_args(python: str, tools: Iterable[str]) -> list[str]:
    """bubblewrap arguments giving a sandbox the minimal read-only runtime (see module doc)."""
    args: list[str] = []
    for path in RUNTIME_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--perms", "0755", "--dir", "/etc"]  # bubblewrap would make it 0700
    for name in ETC_FILES:
        if os.path.exists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for path in hidden_dirs(python, tools):
        args += ["--tmpfs", path, "--remount-ro", path]
    return args


def outside_runtime(paths: dict[str, str]) -> dict[str, str]:
    """Of ``{name: path}`` (interpreter, tools), those a job could not run: outside the runtime."""
    return {name: path for name, path in paths.items() if not under(path, RUNTIME_DIRS)}


def requirement_names(dist: metadata.Distribution) -> list[str]:
    """Names of what ``dist`` requires, leaving out requirements of its extras."""
    names = []
    for line in dist.requires or []:
        requirement, _, marker = line.partition(";")
        if "extra" not in marker:
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
            if match:
                names.append(match.group(1))
    return names


def resolve(names: Iterable[str]) -> dict[str, metadata.Distribution]:
    """The distributions ``names`` and everything they require, by normalised name."""
    found: dict[str, metadata.Distribution] = {}
    todo = [(name, True) for name in names]
    while todo:
        name, declared = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as exc:
            if not declared:
                continue  # a requirement not installed here (a platform marker left it out)
            raise SandboxError(
                f"libraries: expected distributions installed beside rlhub, found no {name!r}; "
                f"install it (pip install {name}) or remove it from the domain's sandbox spec"
            ) from exc
        refuse_grader(name, dist)
        found[key] = dist
        todo += [(req, False) for req in requirement_names(dist)]
    return found


def refuse_grader(name: str, dist: metadata.Distribution) -> None:
    """Jobs never import rlhub, a plugin, or a project installed in editable mode."""
    if dist.metadata["Name"].lower() == "rlhub" or any(
        ep.group == GRADER_GROUP for ep in dist.entry_points
    ):
        raise SandboxError(f"libraries: {name!r} is rlhub or one of its plugins (a grader); "
                           "jobs may not import it")
    direct = dist.read_text("direct_url.json")
    if direct and json.loads(direct).get("dir_info", {}).get("editable"):
        raise SandboxError(f"libraries: {name!r} is installed in editable mode from a project "
                           "directory; jobs may import only regularly installed distributions")


def library_binds(names: Iterable[str], python: str) -> list[tuple[str, str]]:
    """``(host path, sandbox path)`` read-only binds giving a job the distributions ``names``,
    as installed beside rlhub; compiled ones only when the job interpreter's version matches."""
    binds = {}
    same_python = list(interpreter_facts(python)["version"]) == list(sys.version_info[:2])
    for name, dist in resolve(names).items():
        base = Path(str(dist.locate_file("")))
        files = [f for f in dist.files or [] if f.parts[0] not in ("..", "__pycache__")]
        if not same_python and any(f.suffix == ".so" for f in files):
            raise SandboxError(
                f"libraries: {name!r} has compiled modules built for Python "
                f"{sys.version_info[0]}.{sys.version_info[1]}, but jobs run {python}; "
                "start the backend with python= an interpreter of the same version"
            )
        for file in files:
            if (base / file.parts[0]).exists():
                binds[file.parts[0]] = (str(base / file.parts[0]), f"{LIBRARY_DIR}/{file.parts[0]}")
    return sorted(binds.values())
