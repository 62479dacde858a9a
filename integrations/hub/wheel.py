"""Building a plugin's wheel for a bundle.

The source folder is found from the distribution's ``direct_url.json`` (written by
``pip install -e DIR`` or ``pip install DIR``), or given explicitly. It is copied to a scratch
folder without build leftovers and built there with ``python -m build --wheel --no-isolation``,
so a push never writes into the author's tree and stale ``build/`` files never reach the wheel.
``SOURCE_DATE_EPOCH`` is pinned, which makes the wheel byte-for-byte reproducible, so pushing
unchanged code twice gives the same bundle hash.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from rlhub.integrations.hub.errors import HubError

# 1980-01-01, the earliest timestamp a zip file can hold.
SOURCE_DATE_EPOCH = "315532800"
IGNORED = (
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    ".git",
    ".venv",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
)
BUILD_TIMEOUT_S = 300


def source_dir(distribution: str) -> Path:
    """The local source folder a distribution was installed from (``direct_url.json``)."""
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise HubError(
            f"cannot build a wheel of {distribution}: expected an installed "
            "distribution, found none. Install it with `pip install -e DIR`."
        ) from None
    text = dist.read_text("direct_url.json")
    url = json.loads(text).get("url", "") if text else ""
    parsed = urlparse(url)
    path = Path(unquote(parsed.path)) if parsed.scheme == "file" else None
    if path is None or not any((path / name).is_file() for name in ("pyproject.toml", "setup.py")):
        found = (
            f"it was installed from {url}" if url else "it was installed from an index or a wheel"
        )
        raise HubError(
            f"cannot find the source of {distribution} to build its wheel: {found}, "
            "not from a local source folder. Reinstall it with `pip install -e DIR` "
            "or pass --source DIR."
        )
    return path


def build_wheel(src: Path, out_dir: Path) -> Path:
    """Build the wheel of the project in ``src`` into ``out_dir``; return its path."""
    try:
        import build  # noqa: F401 - only to give a clear error when it is missing
    except ImportError:
        raise HubError(
            "building a wheel needs the `build` package, which is not installed; "
            "install it with `pip install 'rlhub[hub]'`"
        ) from None
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rlhub-wheel-") as scratch:
        copy, built = Path(scratch) / src.name, Path(scratch) / "dist"
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns(*IGNORED), symlinks=True)
        _run_build(copy, built)
        made = sorted(built.glob("*.whl"))
        if len(made) != 1:
            raise HubError(f"building {src}: expected one wheel, found {[p.name for p in made]}")
        return Path(shutil.move(str(made[0]), out_dir / made[0].name))


def _run_build(project: Path, out_dir: Path) -> None:
    env = {**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH}
    cmd = [
        sys.executable,
        "-m",
        "build",
        "--wheel",
        "--no-isolation",
        "--outdir",
        str(out_dir),
        str(project),
    ]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise HubError(
            f"building the wheel of {project.name} took more than {BUILD_TIMEOUT_S}s"
        ) from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise HubError(
            f"`python -m build --wheel` failed for {project.name} (exit {proc.returncode}):\n{tail}"
        )
