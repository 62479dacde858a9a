"""Test-suite wiring: fixture plugins importable by name, and an isolated RLHUB_HOME."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
os.environ["PYTHONPATH"] = os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")])


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test sees an empty $RLHUB_HOME, so pulled environments never leak between tests."""
    monkeypatch.setenv("RLHUB_HOME", str(tmp_path_factory.mktemp("rlhub_home")))
    # and no user configuration: a developer's own endpoints and policy never reach a test
    monkeypatch.setenv("RLHUB_CONFIG", str(tmp_path_factory.mktemp("rlhub_config") / "none.yaml"))
