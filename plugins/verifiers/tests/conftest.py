"""Fixtures: the test verifiers environments installed into a temporary site folder.

The environments in ``envs/`` are laid out as installed distributions (``vfsite.install``) on
``sys.path`` and ``PYTHONPATH``, so discovery, the describing child interpreter and the contract
kit's fresh-interpreter determinism check all find them the way they find a pip-installed one.
Descriptions are cached in a session-wide ``$RLHUB_HOME``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import rlhub
from rlhub import plugins

sys.path.insert(0, str(Path(__file__).parent))
import vfsite  # noqa: E402


@pytest.fixture(scope="session")
def vf_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    site = vfsite.install(tmp_path_factory.mktemp("vf_site"))
    home = tmp_path_factory.mktemp("vf_home")
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "RLHUB_HOME")}
    os.environ["PYTHONPATH"] = os.pathsep.join([str(site), saved["PYTHONPATH"] or ""])
    os.environ["RLHUB_HOME"] = str(home)
    sys.path.insert(0, str(site))
    yield site
    sys.path.remove(str(site))
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def vf_registry(vf_site: Path) -> rlhub.Registry:
    """The process registry with every test environment described (as ``rlhub list --all``)."""
    plugins.reset()
    registry = plugins.registry()
    registry.describe_all()
    return registry

