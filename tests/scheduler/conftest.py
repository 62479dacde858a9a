"""Fixtures of the scheduler tests: an isolated process registry and a registry with globs."""

from __future__ import annotations

from typing import Any

import pytest
import toyplug

from rlhub import Registry, hookimpl
from rlhub import plugins as rlhub_plugins


class GlobPlugin:
    """Plugin ``rg`` with five domains (rg/a-v1 ... rg/e-v1), sized 100, 200, ... 500."""

    PLUGIN_NAME = "rg"

    @hookimpl
    def rlhub_domains(self) -> list[dict[str, Any]]:
        return [{**toyplug.manifest(name), "id": f"rg/{name}-v1", "size": 100 * (n + 1)}
                for n, name in enumerate("abcde")]


@pytest.fixture(autouse=True)
def _no_autoload(monkeypatch: pytest.MonkeyPatch):
    """The process-wide registry (used when no registry is passed) sees no installed plugins."""
    monkeypatch.setenv("RLHUB_DISABLE_AUTOLOAD", "1")
    monkeypatch.delenv("RLHUB_PLUGINS", raising=False)
    rlhub_plugins.reset()
    yield
    rlhub_plugins.reset()


@pytest.fixture
def registry() -> Registry:
    """toy/reverse-v1, toy/copy-v1 and rg/a-v1 ... rg/e-v1."""
    return Registry(autoload=False, plugins=[toyplug, GlobPlugin()])
