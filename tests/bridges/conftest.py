"""The OpenEnv side of the bridge tests: OpenEnv's own code, in its own virtualenv.

``openenv`` 0.10 and ``verifiers`` 0.4 cannot share an environment (their ``mcp`` pins
conflict), so ``make setup`` installs OpenEnv into ``.venv-openenv`` beside ``.venv``;
``RLHUB_OPENENV_PYTHON`` names another interpreter. A missing one fails the tests: in CI a
missing component is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def openenv_python() -> str:
    path = os.environ.get("RLHUB_OPENENV_PYTHON") or str(ROOT / ".venv-openenv" / "bin" / "python")
    if not Path(path).exists():
        pytest.fail(f"expected OpenEnv's interpreter at {path} (its own venv, because openenv "
                    "and verifiers pin different mcp versions), found none; run `make setup` "
                    "or set RLHUB_OPENENV_PYTHON")
    return path


def run_openenv_client(url: str, plan: list[list], tmp_path: Path) -> list:
    """Run ``plan`` through OpenEnv's ``GenericEnvClient`` (``openenv_client.py``)."""
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    out = subprocess.run([openenv_python(), str(HERE / "openenv_client.py"), url,
                          str(plan_file)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.fixture
def openenv_client(tmp_path: Path):
    """``openenv_client(url, plan)``: see :func:`run_openenv_client`."""
    return lambda url, plan: run_openenv_client(url, plan, tmp_path)
