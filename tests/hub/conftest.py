"""Fixtures of the hub tests: a data-only domain, one plugin bundle per session, remotes.

The plugin bundle (rlhub-structured, its wheel built with ``python -m build``) takes a few
seconds, so it is built once per session; each test pushes it to its own remote.
"""

from __future__ import annotations

import sys
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
    from rlhub.hub.bundle import BuildOptions, build_bundle

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


@pytest.fixture(autouse=True)
def _project_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in its own folder, so the project lock a pull writes stays there."""
    monkeypatch.chdir(tmp_path)
