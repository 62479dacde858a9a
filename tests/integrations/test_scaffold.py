"""``rlhub new plugin``: the generated package follows the layout, installs, and passes its own
contract; then it is published and pulled back as a wheel with ``--trust-remote-code``.

Everything is installed into a temporary virtual environment layered over the test's own (which
it sees through a ``site.addsitedir`` line), never into the environment the suite runs in.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import sysconfig
import tomllib
import uuid
from pathlib import Path

import pytest

from rlhub.integrations.hub.errors import HubError
from rlhub.integrations.hub.pull import PullOptions, pull
from rlhub.integrations.hub.scaffold import new_plugin, render

pytestmark = pytest.mark.usefixtures("project_folder")

SECTIONS = ["Overview", "Task", "Verifier", "Config", "Metrics", "Quickstart"]


def run(python: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), *args],
        capture_output=True, check=False,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )


def test_the_generated_package_follows_the_plugin_layout():
    files = render("mine")
    assert sorted(files) == [
        "README.md",
        "pyproject.toml",
        "rlhub_mine/__init__.py",
        "rlhub_mine/domains.py",
        "rlhub_mine/plugin.py",
        "tests/test_contract.py",
        "tests/test_domains.py",
    ]
    project = tomllib.loads(files["pyproject.toml"])
    assert (
        project["project"]["name"] == "rlhub-mine" and "rlhub" in project["project"]["dependencies"]
    )
    assert project["project"]["entry-points"]["rlhub.plugins"] == {"mine": "rlhub_mine.plugin"}
    headings = [line[3:] for line in files["README.md"].splitlines() if line.startswith("## ")]
    assert headings == SECTIONS
    assert "from rlhub.testing import assert_domain_ok" in files["tests/test_contract.py"]
    assert 'd.startswith("mine/")' in files["tests/test_contract.py"]
    plugin_imports = [
        line
        for line in files["rlhub_mine/plugin.py"].splitlines()
        if line.startswith(("import ", "from "))
    ]
    assert plugin_imports == [
        "from __future__ import annotations",
        "from typing import Any",
        "from rlhub import hookimpl",
    ]
    assert '"factory": "rlhub_mine.domains:make"' in files["rlhub_mine/plugin.py"]


def test_bad_names_and_occupied_folders_are_refused(tmp_path, cli):
    with pytest.raises(HubError) as err:
        render("My Plugin")
    assert str(err.value) == (
        "plugin name 'My Plugin': expected lower-case letters, digits, '_' "
        "or '-', starting with a letter (at most 40), e.g. 'mymath'"
    )
    new_plugin("mine", tmp_path)
    with pytest.raises(HubError, match="expected .* to be absent or empty, found files in it"):
        new_plugin("mine", tmp_path)
    result = cli("new", "plugin", "structured", "--dir", tmp_path)
    assert result.exit_code == 2
    assert (
        "a plugin named 'structured' is already installed (from rlhub-structured)" in result.stderr
    )


@pytest.fixture
def layered_env(tmp_path: Path) -> Path:
    """The python of a fresh venv that sees this environment's packages but installs into its
    own site-packages (removed with ``tmp_path``)."""
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True,
                   timeout=120)
    python = env / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True, check=True)
    shared = sysconfig.get_paths()["purelib"]
    Path(purelib.stdout.strip(), "rlhub_test_layer.pth").write_text(
        f"import site; site.addsitedir({shared!r})\n")
    return python


@pytest.fixture
def scaffolded(tmp_path: Path, cli, layered_env: Path) -> tuple[str, Path, Path]:
    """A freshly generated plugin, installed editable into ``layered_env`` (not into ours)."""
    name = f"scaffold{uuid.uuid4().hex[:6]}"
    result = cli("new", "plugin", name, "--dir", tmp_path, "--json")
    assert result.exit_code == 0, result.output
    dest = Path(json.loads(result.stdout)["path"])
    installed = run(layered_env, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                    "--quiet", "--disable-pip-version-check", "-e", str(dest))
    assert installed.returncode == 0, installed.stderr
    return name, dest, layered_env


def installed_here(distribution: str) -> bool:
    """Whether ``distribution`` is installed in the environment running the tests."""
    return distribution in {d.metadata["Name"] for d in importlib.metadata.distributions()}


def test_a_scaffolded_plugin_installs_passes_check_and_round_trips_as_a_trusted_wheel(
    tmp_path, scaffolded
):
    name, dest, python = scaffolded
    assert not installed_here(f"rlhub-{name}")  # the suite's own environment is left alone
    checked = run(python, "-m", "rlhub", "check", f"{name}/sum-v1", "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    [result] = json.loads(checked.stdout)["results"]
    assert (result["id"], result["ok"], result["problems"]) == (f"{name}/sum-v1", True, [])
    assert result["max_probe_reward"] == 0.0  # no integrity probe earned anything
    own_tests = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=dest)
    assert own_tests.returncode == 0, own_tests.stdout[-2000:]
    assert "6 passed" in own_tests.stdout

    url = (tmp_path / "remote").as_uri()
    pushed = run(python, "-m", "rlhub", "push", name, "--to", url, "--revision", "v1",
                 "--test-size", "3", "--json")
    assert pushed.returncode == 0, pushed.stderr
    bundle_id = json.loads(pushed.stdout)["bundle"]
    removed = run(python, "-m", "pip", "uninstall", "--yes", "--quiet", f"rlhub-{name}")
    assert removed.returncode == 0, removed.stderr
    listed = run(python, "-m", "rlhub", "list", "--plugin", name, "--json")
    assert json.loads(listed.stdout) == []
    pulled = run(python, "-m", "rlhub", "pull", f"{url}@v1", "--trust-remote-code", "--json")
    assert pulled.returncode == 0, pulled.stderr
    result = json.loads(pulled.stdout)
    assert (result["bundle"], result["registered"]) == (bundle_id, [f"{name}/sum-v1"])
    listed = run(python, "-m", "rlhub", "list", "--plugin", name, "--json")
    assert [row["id"] for row in json.loads(listed.stdout)] == [f"{name}/sum-v1"]
    assert json.loads(listed.stdout)[0]["distribution"] == f"rlhub-{name}"
    assert not installed_here(f"rlhub-{name}")
