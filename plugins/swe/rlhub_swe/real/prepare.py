"""Preparing a real project: fetch its sdist with pip, check its hash, find its bug tasks.

``prepare(project, workspaces)`` downloads the pinned sdist (``pip download --no-deps
--no-binary :all:``) into ``$RLHUB_CACHE/swe/sdists``, refuses it unless its sha256 matches the
pin, unpacks its text files, runs the project's tests once in a workspace (the tests that pass
there are the candidates for pass-to-pass), then tries SWE-smith style bugs
(:mod:`rlhub_swe.mutate`) in its functions, in an order fixed by the project's name and version.
A bug becomes a task only if some tests that passed on the original now fail (its fail-to-pass
tests) and every other test that passed still passes (its pass-to-pass tests). The result,
``tasks.json`` and ``files.json`` under ``$RLHUB_CACHE/swe/<name>-<version>``, records each
task's tests and the original file's hash. Concurrent preparers wait on one lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import random
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

from rlhub import Lease, Limits, rlhub_cache

from rlhub_swe import mutate
from rlhub_swe.grading import Suite, run_suite
from rlhub_swe.guard import code_problem, is_test_path
from rlhub_swe.real.projects import Project

POOL = 4
ATTEMPTS = 10
MAX_FILE = 256 << 10
LIMITS = Limits(wall_s=300, cpu_s=300, memory_mb=1024, processes=64, disk_mb=256)


def project_dir(project: Project) -> Path:
    return rlhub_cache() / "swe" / f"{project.name}-{project.version}"


def fetch(project: Project) -> bytes:
    """The project's sdist, downloaded once and checked against its pinned sha256."""
    folder = rlhub_cache() / "swe" / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    found = [p for p in folder.glob(f"*{project.version}.tar.gz")
             if p.name.lower().replace("_", "-").startswith(project.name.lower())]
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                        ":all:", "--disable-pip-version-check", "-q", "-d", str(folder),
                        project.requirement], check=True, capture_output=True, timeout=600)
        found = [p for p in folder.glob(f"*{project.version}.tar.gz")
                 if p.name.lower().replace("_", "-").startswith(project.name.lower())]
    data = found[0].read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != project.sha256:
        raise ValueError(f"{project.requirement}: expected sdist sha256 {project.sha256}, found "
                         f"{digest}; refusing it")
    return data


def unpack(data: bytes) -> dict[str, str]:
    """The sdist's text files by path (its top folder stripped)."""
    files = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")[1:]
            if not member.isfile() or not parts or member.size > MAX_FILE or ".." in parts:
                continue
            try:
                files["/".join(parts)] = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
            except UnicodeDecodeError:
                continue
    return files


def candidates(project: Project, files: dict[str, str]) -> list[tuple[str, str]]:
    """(file, function) pairs of the package that a bug may go in, in a fixed random order."""
    found = []
    for path in sorted(files):
        if path.startswith(project.package + "/") and path.endswith(".py") \
                and not is_test_path(path):
            try:
                found += [(path, name) for name in mutate.functions(files[path])]
            except SyntaxError:
                continue
    rng = random.Random(f"{project.name}-{project.version}")
    return rng.sample(found, len(found))


def _suite(project: Project, files: dict[str, str]) -> Suite:
    return Suite(files, {}, [], [], [project.package], list(project.python_path))


def validate(project: Project, files: dict[str, str], workspaces: Any) -> list[dict[str, Any]]:
    """The project's bug tasks (see the module docstring)."""
    suite = _suite(project, files)
    ws = workspaces.open(files, LIMITS, Lease(f"rlhub-swe prepare {project.name}"),
                         libraries=["pytest"])
    try:
        _, base = run_suite(ws, suite, LIMITS, list(project.tests))
        passing = {t for t, o in base.items() if o == "passed" and "::" in t}
        tasks: list[dict[str, Any]] = []
        rng = random.Random(project.sha256)
        for path, function in candidates(project, files)[: ATTEMPTS * 3]:
            if len(tasks) >= POOL:
                break
            edits = mutate.pick(rng, mutate.sites(files[path], function))[:1]
            for edit in edits:
                if code_problem(path, edit.apply(files[path]), files[path], [project.package]):
                    continue  # its fix would have to add what no patch may
                ws.write(path, edit.apply(files[path]))
                run, now = run_suite(ws, suite, LIMITS, list(project.tests), ["--tb=line"])
                ws.write(path, files[path])
                broken = sorted(t for t in passing if now.get(t) != "passed")
                if broken and len(broken) <= 40 and run.status in ("ok", "error"):
                    tasks.append(_task(project, files, path, function, edit, broken,
                                       sorted(passing - set(broken)), run.stdout))
        return tasks
    finally:
        ws.close()


def _task(project: Project, files: dict[str, str], path: str, function: str, edit: Any,
          broken: list[str], kept: list[str], output: str) -> dict[str, Any]:
    lines = [line for line in output.splitlines() if "rlhub_swe" not in line and line.strip()]
    failure = "\n".join(line for line in lines if "Error" in line or "assert" in line)[:1500]
    return {"file": path, "function": function, "operator": edit.operator, "line": edit.line,
            "edit": [edit.start, edit.end, edit.text],
            "original_sha256": hashlib.sha256(files[path].encode()).hexdigest(),
            "fail_to_pass": broken, "pass_to_pass": kept, "failure": failure}


def prepare(project: Project, workspaces: Any) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The project's files and tasks, prepared once per cache (see the module docstring)."""
    folder = project_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "tasks.json").exists():
            return load(project)
        files = unpack(fetch(project))
        tasks = validate(project, files, workspaces)
        if not tasks:
            raise ValueError(f"{project.requirement}: no injected bug broke a test")
        (folder / "files.json").write_text(json.dumps(files))
        meta = {"project": project.name, "version": project.version, "sdist_sha256":
                project.sha256, "tasks": tasks}
        (folder / ".tasks.json").write_text(json.dumps(meta))
        (folder / ".tasks.json").rename(folder / "tasks.json")
        return files, tasks


def load(project: Project) -> tuple[dict[str, str], list[dict[str, Any]]]:
    folder = project_dir(project)
    return (json.loads((folder / "files.json").read_text()),
            json.loads((folder / "tasks.json").read_text())["tasks"])


def prepared(project: Project) -> bool:
    return (project_dir(project) / "tasks.json").exists()
