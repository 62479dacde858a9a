"""The docker backend's base image: a Debian root file system with every built-in toolchain.

``.ci/docker-setup.sh`` builds it with Debian's own tools (``mmdebstrap`` against the package
registry, the toolchains installed by apt, then ``docker import``) and tags it by a hash of what
went into it: the suite, the packages and this recipe's version. The backend computes the same
tag (:func:`tag`), so a change of the built-in languages makes a new image and never touches an
image other work is running. Standard library only: the setup script runs it with the system
``python3`` before any virtualenv exists::

    python3 core/sandbox/baseimage.py packages   # what the image installs, one per line
    python3 core/sandbox/baseimage.py tag        # rlhub-sandbox-base:<hash>
    python3 core/sandbox/baseimage.py suite      # the Debian release it is made from
"""

from __future__ import annotations

import hashlib
import sys
import tomllib
from pathlib import Path

REPOSITORY = "rlhub-sandbox-base"
LABEL = "rlhub.sandbox.base"  # every build carries it (docker import --change LABEL)
SUITE = "bookworm"
RECIPE = "1"  # bump when .ci/docker-setup.sh builds the image differently
# What the resident worker itself needs beyond the languages' packages: `python3` on PATH.
WORKER_PACKAGES = ("python3-minimal", "python3.11")
LANGUAGES_FILE = Path(__file__).with_name("languages.toml")


def packages(languages_file: Path = LANGUAGES_FILE) -> list[str]:
    """Every Debian package the base image installs: each built-in language's, the worker's."""
    table = tomllib.loads(languages_file.read_text())
    names = {p for spec in table.values() for p in spec.get("packages", ())}
    return sorted(names | set(WORKER_PACKAGES))


def tag(names: list[str] | None = None) -> str:
    """The image's tag: ``rlhub-sandbox-base:<hash of suite, recipe and packages>``."""
    key = "\n".join([SUITE, RECIPE, *sorted(names if names is not None else packages())])
    return f"{REPOSITORY}:{hashlib.sha256(key.encode()).hexdigest()[:12]}"


if __name__ == "__main__":
    if sys.argv[1:] == ["packages"]:
        print("\n".join(packages()))
    elif sys.argv[1:] == ["tag"]:
        print(tag())
    elif sys.argv[1:] == ["suite"]:
        print(SUITE)
    else:
        sys.exit(f"usage: {sys.argv[0]} packages|tag|suite (found {sys.argv[1:]})")
