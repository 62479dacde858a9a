"""The minimal runtime a local job sees, and the libraries a request may add to it."""

from __future__ import annotations

import os

import pytest

from rlhub.errors import ManifestError, SandboxError
from rlhub.manifest import Manifest
from rlhub.sandbox.host import detect
from rlhub.sandbox.runtime import LIBRARY_DIR, library_binds, resolve, runtime_args


@pytest.fixture(scope="module")
def python() -> str:
    return detect().python


def test_the_runtime_is_system_directories_with_site_packages_and_usr_local_hidden(
    python: str,
) -> None:
    args = runtime_args(python, ["/usr/bin/bash"])
    binds = [args[i + 1] for i, a in enumerate(args) if a == "--ro-bind"]
    assert "/" not in binds and "/usr" in binds
    assert all(b == "/usr" or b.startswith("/etc/") for b in binds), binds
    hidden = {args[i + 1] for i, a in enumerate(args) if a == "--tmpfs"}
    assert "/usr/local" in hidden or not os.path.isdir("/usr/local")
    site = [d for d in ("/usr/lib/python3/dist-packages",) if os.path.isdir(d)]
    assert set(site) <= hidden


def test_a_library_comes_with_the_distributions_it_requires(python: str) -> None:
    binds = dict((target, source) for source, target in library_binds(["typer"], python))
    assert {f"{LIBRARY_DIR}/{n}" for n in ("typer", "rich", "pygments")} <= set(binds)  # -> rich
    assert all(target.startswith(LIBRARY_DIR + "/") for target in binds)
    assert not any(t.endswith("__pycache__") or ".." in t for t in binds)


@pytest.mark.parametrize("name", ["rlhub", "rlhub-code", "rlhub_math"])
def test_rlhub_and_its_plugins_are_never_libraries_a_job_may_import(name: str) -> None:
    with pytest.raises(SandboxError, match="is rlhub or one of its plugins"):
        resolve([name])


def test_an_unknown_library_is_refused_with_the_command_that_installs_it() -> None:
    with pytest.raises(SandboxError, match=r"found no 'no-such-dist-xyz'; install it \(pip"):
        resolve(["no-such-dist-xyz"])


def test_a_manifest_declares_the_libraries_its_jobs_may_import() -> None:
    raw = {
        "id": "libs/demo-v1", "version": "1", "summary": "x", "license": "MIT", "tags": [],
        "reward": {"range": [0, 1], "components": {"ok": {"weight": 1.0}}},
        "sandbox": {"kind": "local", "libraries": ["numpy", "sympy"], "limits": {"disk_mb": 32}},
        "factory": "mod:attr",
    }
    manifest = Manifest.parse(raw, plugin="libs")
    assert manifest.data["sandbox"]["libraries"] == ["numpy", "sympy"]
    raw["sandbox"]["libraries"] = ["../etc"]
    with pytest.raises(ManifestError):
        Manifest.parse(raw, plugin="libs")
