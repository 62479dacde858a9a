"""A registry is passed, not looked up: two registries in one process share nothing.

Each holds its own domains and services (named verifiers, sandbox backends); a domain reaches
verifiers and sandboxes through the services of the registry that built it, a registry has no
shortcuts to them (one name each: ``registry.services.sandbox()``), and a test double is handed
to a registry as an argument (``Registry(sandbox=double)``), never installed in a module global.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import toyplug
from fastapi.testclient import TestClient

from rlhub import ExecResult, Registry, Verdict, VerifierError, hookimpl
from rlhub.integrations.server.app import ServerConfig, create_app
from rlhub.labels import make_label
from rlhub.testing.pytest_plugin import SandboxDouble

HUMANEVAL = Path(__file__).parents[1] / "fixtures" / "codeformats" / "humaneval.yaml"
WRONG = "```python\ndef decode_rot(s, k):\n    return s\n```"


class Lenient:
    """A named verifier ``exact`` that passes any non-empty answer (shadows the built-in)."""

    def __init__(self, options: dict[str, Any]):
        self.options = options

    def check(self, task: Any, completion: str) -> Verdict:
        ok = bool(completion.strip())
        return Verdict({"correct": float(ok)}, ok)


class LenientPlugin:
    PLUGIN_NAME = "lenient"

    @hookimpl
    def rlhub_verifiers(self) -> dict[str, str]:
        return {"exact": f"{__name__}:Lenient"}


def forged_pass(request: Any) -> ExecResult:
    """A sandbox double that reads the harness's nonce and prints a passing verdict with it."""
    nonce = json.loads(request.stdin)["nonce"]
    verdict = {"rlhub_verdict": {"total": 1, "passed": 1, "failures": [], "load_error": None},
               "nonce": nonce}
    return ExecResult("ok", 0, json.dumps(verdict) + "\n", "", 0.01, backend="double")


def test_a_plugins_verifier_serves_only_the_registry_that_loaded_it():
    plain = Registry(plugins=[toyplug], autoload=False)
    lenient = Registry(plugins=[toyplug, LenientPlugin()], autoload=False)
    task = plain.get("toy/copy-v1").task("train", 0, 0)
    assert not plain.get("toy/copy-v1").verify(task, "Answer: wrong").passed
    assert lenient.get("toy/copy-v1").verify(task, "Answer: wrong").passed
    assert not plain.get("toy/copy-v1").verify(task, "Answer: wrong").passed


def test_a_sandbox_double_passed_to_one_registry_never_reaches_another(rlhub_sandbox):
    double = rlhub_sandbox(forged_pass)
    faked = Registry(domain_files=[HUMANEVAL], autoload=False, sandbox=double)
    real = Registry(domain_files=[HUMANEVAL], autoload=False)
    try:
        task = real.get("formats/humaneval-v1").task("train", 0, 0)
        assert faked.get("formats/humaneval-v1").verify(task, WRONG).passed
        assert len(double.requests) == 1
        assert not real.get("formats/humaneval-v1").verify(task, WRONG).passed
        assert len(double.requests) == 1
        assert real.services.sandbox().name == "local" and faked.services.sandbox() is double
    finally:
        faked.services.close()
        real.services.close()


def test_two_servers_in_one_process_verify_with_their_own_plugins():
    apps = [create_app(ServerConfig(workers=1), Registry(plugins=plugins, autoload=False))
            for plugins in ([toyplug], [toyplug, LenientPlugin()])]
    task = apps[0].state.service.registry.get("toy/copy-v1").task("train", 0, 0)
    body = {"label": make_label(task), "completion": "Answer: wrong"}
    with TestClient(apps[0]) as plain, TestClient(apps[1]) as lenient:
        assert plain.post("/v1/verify", json=body).json()["passed"] is False
        assert lenient.post("/v1/verify", json=body).json()["passed"] is True
        assert plain.post("/v1/verify", json=body).json()["passed"] is False


def test_a_domain_made_outside_a_registry_says_how_to_get_one():
    registry = Registry(plugins=[toyplug], autoload=False)
    orphan = toyplug.Copy(registry.manifest("toy/copy-v1"))
    with pytest.raises(VerifierError, match=r"domain 'toy/copy-v1' was not built by a registry, "
                                            r"so it has no verifiers or sandboxes to use; get it "
                                            r"with registry.get\(id\)"):
        orphan.verifier
    assert orphan.verify(orphan.task("train", 0, 0), "x").failure == "verifier"


def test_closing_a_registrys_services_stops_only_its_own_sandboxes(rlhub_sandbox):
    first, second = rlhub_sandbox(forged_pass), rlhub_sandbox(forged_pass)
    one, two = Registry(autoload=False, sandbox=first), Registry(autoload=False, sandbox=second)
    assert one.services.sandbox() is first and two.services.sandbox() is second
    one.services.close()
    assert first.closed and not second.closed and two.services.sandbox() is second
    two.services.close()
    assert second.closed


def test_a_registry_reaches_its_services_by_one_name_only():
    """No shortcut on the registry repeats a service (``registry.sandbox()`` and the like): the
    names both have are the plugin manager and catalog they share, and each one's own spec."""
    registry = Registry(plugins=[toyplug], autoload=False)
    services = {name for name in dir(registry.services) if not name.startswith("_")}
    assert services & set(dir(registry)) == {"pm", "manifests", "spec"}
