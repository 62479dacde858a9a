"""Every code block of the README and the guides runs in the test suite, through Sybil.

- ``bash`` blocks run as written, with ``bash -e -o pipefail``, in a scratch folder per document
  where ``examples/`` and ``plugins/`` are the repository's, with this interpreter's ``rlhub`` first on ``PATH``,
  an empty ``$RLHUB_HOME`` and a virtual environment of the document's own layered over the
  suite's (so ``pip install`` in a block installs nothing into the suite's environment). Jobs a
  block starts in the background (``rlhub serve ... &``) are stopped when it ends. ``make demo``
  and ``make test`` run with ``--dry-run`` (their targets must exist): CI runs ``make test`` itself
  and ``tests/test_docs.py`` runs ``make demo`` (slow).
- ``python`` blocks run in one namespace per document, in the same scratch folder.
- ``yaml`` blocks must parse and, when they show a data-only domain file or a mixture, validate
  against its schema.

Blocks of other languages, and fences without one, are output or diagrams and are not run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from typing import Any

import pytest
from sybil import Example, Sybil
from sybil.evaluators.python import PythonEvaluator
from sybil.parsers.markdown import CodeBlockParser

ROOT = Path(__file__).resolve().parent
DOCS = ["*.md"]  # pytest collects the top-level guides (testpaths) and plugins/*/README.md
BLOCK_TIMEOUT_S = 900
PRELUDE = """
trap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT
make() { command make --no-print-directory --dry-run -C "$RLHUB_REPO" "$@" >/dev/null; }
"""


def _scratch(example: Example) -> Path:
    """The document's scratch folder, made on its first block."""
    ns = example.namespace
    if "_scratch" not in ns:
        folder = Path(tempfile.mkdtemp(prefix="rlhub-doc-"))
        for shared in ("examples", "plugins"):  # what the guides' commands name
            (folder / shared).symlink_to(ROOT / shared)
        ns["_scratch"] = folder
        ns["_env"] = _environment(folder)
    return ns["_scratch"]


def _environment(folder: Path) -> dict[str, str]:
    """A virtual environment layered over the suite's: it sees every installed package, and
    what a block installs stays in it."""
    layer = folder / ".venv"
    venv.EnvBuilder(with_pip=False).create(layer)
    site = next((layer / "lib").glob("python*/site-packages"))
    parents = [p for p in sys.path if p.endswith("site-packages")]
    (site / "_suite.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in parents) + "\n")
    bin_dir = Path(sys.executable).parent
    for tool in ("rlhub", "pip"):  # the suite's console scripts, run by the layer's interpreter
        script = (bin_dir / tool).read_text().split("\n", 1)[1]
        (layer / "bin" / tool).write_text(f"#!{layer / 'bin' / 'python'}\n{script}")
        (layer / "bin" / tool).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PATH=f"{layer / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(layer),
               RLHUB_HOME=str(folder / "home"), RLHUB_REPO=str(ROOT), PIP_NO_INPUT="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def run_bash(example: Example) -> str | None:
    folder = _scratch(example)
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", PRELUDE + example.parsed],
                          cwd=folder, env=example.namespace["_env"], capture_output=True,
                          text=True, timeout=BLOCK_TIMEOUT_S)
    if done.returncode != 0:
        return (f"the block exited with status {done.returncode}\n--- stdout\n"
                f"{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}")
    return None


def check_yaml(example: Example) -> str | None:
    import yaml

    from rlhub.manifest import schema_errors
    from rlhub.mixture import schema_errors as mixture_errors

    data = yaml.safe_load(example.parsed)
    if isinstance(data, dict) and "dataset" in data:
        errors = schema_errors("domainfile", data)
    elif isinstance(data, dict) and "domains" in data:
        errors = mixture_errors(data)
    else:
        errors = []
    return "\n".join(errors) or None


class InScratch(PythonEvaluator):
    """Python blocks run in the document's scratch folder, with its home."""

    def __call__(self, example: Example) -> str | None:
        folder = _scratch(example)
        before = os.getcwd(), os.environ.get("RLHUB_HOME")
        os.chdir(folder)
        os.environ["RLHUB_HOME"] = example.namespace["_env"]["RLHUB_HOME"]
        try:
            return super().__call__(example)
        finally:
            os.chdir(before[0])
            _restore("RLHUB_HOME", before[1])


def _restore(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def _teardown(namespace: dict[str, Any]) -> None:
    folder = namespace.get("_scratch")
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


pytest_collect_file = Sybil(
    parsers=[CodeBlockParser("bash", run_bash), CodeBlockParser("yaml", check_yaml),
             CodeBlockParser("python", InScratch())],
    patterns=DOCS, path=str(ROOT), teardown=_teardown,
).pytest()


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A document's blocks build on each other (a push, then a pull): one worker runs them all."""
    for item in items:
        document, sep, _ = item.nodeid.partition("::")
        if sep and document.endswith(".md"):
            item.add_marker(pytest.mark.xdist_group(f"doc:{document}"))
