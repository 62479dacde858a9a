"""Fixtures of the integration tests: a data-only domain, one plugin bundle per session, remotes.

The plugin bundle (rlhub-structured, its wheel built with ``python -m build``) takes a few
seconds, so it is built once per session; each test pushes it to its own remote.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from hub_helpers import write_data_domain  # noqa: E402


@pytest.fixture
def data_domain(tmp_path: Path) -> Path:
    return write_data_domain(tmp_path / "src")


@pytest.fixture
def data_registry(data_domain: Path) -> Any:
    from rlhub import Registry

    return Registry(domain_files=[data_domain], autoload=False)


@pytest.fixture(scope="session")
def plugin_bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The bundle of the installed first-party plugin ``structured``, wheel included."""
    from rlhub import Registry
    from rlhub.integrations.hub.bundle import BuildOptions, build_bundle

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLHUB_HOME", str(tmp_path_factory.mktemp("session_home")))
        registry = Registry()
        if "structured" not in registry.plugins:
            pytest.skip("the first-party plugin rlhub-structured is not installed in this venv")
        yield build_bundle(
            "structured",
            tmp_path_factory.mktemp("bundle") / "structured",
            registry=registry,
            options=BuildOptions(test_size=3, train_size=2),
        )


@pytest.fixture(autouse=True)
def _fresh_process_registry() -> Iterator[None]:
    """Each test discovers afresh: pulls install into the test's own $RLHUB_HOME."""
    from rlhub.plugins import reset

    reset()
    yield
    reset()


@pytest.fixture
def cli() -> Any:
    """Run ``rlhub ARGS`` in process; returns click's Result (stdout and stderr apart)."""
    from typer.testing import CliRunner

    from rlhub.cli import app

    return lambda *args: CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def project_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test in its own folder, so the project lock a pull writes stays there (modules
    that pull use it for every test: ``pytestmark = pytest.mark.usefixtures(...)``)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


HF_TOKEN = "hf_emulator_token"


@pytest.fixture(scope="session")
def emulated_hub() -> Iterator[Any]:
    """The Hub emulator (tests/integrations/hf_emulator.py), one per session."""
    from hf_emulator import EmulatedHub

    with EmulatedHub(token=HF_TOKEN) as hub:
        yield hub


@pytest.fixture
def hub(emulated_hub: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """The emulator, with huggingface_hub configured for it for this test only."""
    hf_home = tmp_path / "hf_home"
    env = {
        "HF_ENDPOINT": emulated_hub.url,
        "HF_TOKEN": HF_TOKEN,
        "HF_HOME": str(hf_home),
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    from huggingface_hub import constants  # read after the environment is set

    for name, value in {
        "HF_HUB_OFFLINE": False,
        "HF_HUB_DISABLE_XET": True,
        "HF_HOME": str(hf_home),
        "HF_HUB_CACHE": str(hf_home / "hub"),
        "HF_TOKEN_PATH": str(hf_home / "token"),
    }.items():
        monkeypatch.setattr(constants, name, value)  # in case another test imported it first
    return emulated_hub


@pytest.fixture
def repo() -> str:
    """A fresh dataset repo id on the emulated Hub."""
    return f"rlhub-test/env-{uuid.uuid4().hex[:8]}"
