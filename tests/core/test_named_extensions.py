"""Sandbox backends and mixture strategies are registered by name, never listed by hand.

A plugin adds either with one hook implementation (``tests/fixtures/extendplug.py``); a manifest
may name any registered backend, and an unknown backend or strategy name is refused with the
nearest registered names.
"""

from __future__ import annotations

from typing import Any

import extendplug
import pytest
import toyplug

from rlhub import ExecRequest, Registry, Scheduler, hookimpl
from rlhub.errors import ManifestError, SchedulerError


class Misspelt:
    """A plugin whose domain names a backend nobody registered."""

    PLUGIN_NAME = "misspelt"

    @hookimpl
    def rlhub_domains(self) -> list[dict[str, Any]]:
        return [{**toyplug.manifest("x"), "id": "misspelt/x-v1", "sandbox": {"kind": "twni"}}]


def test_a_plugins_backend_is_named_by_its_manifest_and_runs_a_job():
    registry = Registry(autoload=False, plugins=[extendplug])
    try:
        assert "ext/twin-v1" in registry.ids() and "twin" in registry.services.sandboxes.names()
        backend = registry.services.sandbox("twin")
        result = backend.run(ExecRequest(code="print(6 * 7)"))
        assert isinstance(backend, extendplug.Twin) and registry.services.sandbox("twin") is backend
        assert (result.status, result.stdout.strip()) == ("ok", "42")
    finally:
        registry.services.close()


def test_a_manifest_naming_an_unknown_backend_is_refused_on_use_with_the_nearest_names():
    registry = Registry(autoload=False, plugins=[extendplug, Misspelt()])
    assert registry.manifest("ext/twin-v1").data["sandbox"]["kind"] == "twin"
    with pytest.raises(ManifestError) as error:
        registry.get("misspelt/x-v1")
    assert str(error.value).startswith(
        "plugin 'misspelt', domain 'misspelt/x-v1': field sandbox.kind: unknown sandbox backend "
        "'twni'; did you mean 'twin'?")


def test_without_the_plugin_its_backend_name_is_unknown():
    registry = Registry(autoload=False, plugins=[Misspelt()])
    with pytest.raises(ManifestError, match="unknown sandbox backend 'twni'. Run"):
        registry.manifest("misspelt/x-v1")
    assert "twin" not in registry.services.sandboxes.names()


def test_a_plugins_strategy_runs_in_the_built_in_scheduler():
    registry = Registry(autoload=False, plugins=[extendplug, toyplug])
    domains = {d: {} for d in ("toy/copy-v1", "ext/twin-v1", "toy/reverse-v1")}
    scheduler = Scheduler.from_config({"strategy": "focus", "domains": domains}, registry)
    assert scheduler.weights() == pytest.approx(
        {"toy/copy-v1": 0.5, "ext/twin-v1": 0.25, "toy/reverse-v1": 0.25})
    assert sum(scheduler.allocate(8).values()) == 8


def test_an_unknown_strategy_is_refused_with_the_nearest_registered_names():
    registry = Registry(autoload=False, plugins=[extendplug, toyplug])
    with pytest.raises(SchedulerError, match="unknown strategy 'focsu'; did you mean 'focus'"):
        Scheduler.from_config({"strategy": "focsu", "domains": {"toy/copy-v1": {}}}, registry)


class BrokenNames:
    """A plugin whose backend declaration raises."""

    PLUGIN_NAME = "brokennames"

    @hookimpl
    def rlhub_sandbox_backends(self) -> dict[str, str]:
        raise RuntimeError("no names today")


def test_a_plugin_whose_backend_names_raise_is_reported_and_the_others_keep_working():
    registry = Registry(autoload=False, plugins=[toyplug, BrokenNames()])
    assert "toy/reverse-v1" in registry.ids()
    assert any("rlhub_sandbox_backends" in e.cause and "no names today" in e.cause
               for e in registry.errors)
