"""Test-suite wiring: fixture plugins importable by name, and an isolated RLHUB_HOME."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
os.environ["PYTHONPATH"] = os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")])


@pytest.fixture(scope="session")
def _shared_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("rlhub_cache"))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                   _shared_cache: str):
    """Every test sees an empty $RLHUB_HOME, so pulled environments never leak between tests.

    The cache is shared: its entries are keyed by what they were derived from, and a cold one
    costs every fresh interpreter seconds (the verifiers bridge describes its environments once).
    """
    monkeypatch.setenv("RLHUB_HOME", str(tmp_path_factory.mktemp("rlhub_home")))
    monkeypatch.setenv("RLHUB_CACHE", _shared_cache)
    # and no user configuration: a developer's own endpoints and policy never reach a test
    monkeypatch.setenv("RLHUB_CONFIG", str(tmp_path_factory.mktemp("rlhub_config") / "none.yaml"))


# `make test` spreads the suite over pytest-xdist workers (`-n 3 --dist loadgroup`). Tests that
# start Ray clusters, Docker containers or sandbox pools sized to the machine, and the isolation
# tests that need their attacker and victim to overlap, share one worker and run one at a time.
SERIAL = ("tests/sandbox/", "tests/integrations/test_server_ray.py", "tests/integrations/test_openrlhf_harness.py",
          "tests/integrations/test_openrlhf_cmd.py")


# Modules whose module-scoped fixture is a whole run (a mixed eval, a served environment) keep
# their tests on one worker, so the fixture is built once rather than once per worker.
ONE_WORKER = ("tests/bridges/test_mixed_runs.py", "plugins/openenv/tests/test_openenv_bridge.py")
# rlhub-swe's tests join the swe contract checks (tests/test_contract_all.py): the real project
# they grade is fetched and validated once per session's cache, on that one worker.
SWE = "plugins/swe/tests/"


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(SERIAL) or "[ray]" in item.nodeid or "[docker]" in item.nodeid:
            item.add_marker(pytest.mark.xdist_group("infra"))
        elif item.nodeid.startswith(SWE):
            item.add_marker(pytest.mark.xdist_group("swe"))
        elif item.nodeid.startswith(ONE_WORKER):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
