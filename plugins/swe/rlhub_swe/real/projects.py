"""The real projects: pure-Python packages from PyPI whose sdists ship their own tests.

Each is pinned by version and the sha256 of its source distribution, under a permissive licence;
``rlhub swe prepare`` (or the first use of a domain) fetches it with pip into ``$RLHUB_CACHE``,
never into this repository. ``package`` is the folder a patch may change, ``python_path`` what
its tests need on ``sys.path``, ``tests`` the test files (or folders) that are run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Project:
    """One pinned project and how its tests run."""

    name: str
    version: str
    sha256: str
    license: str
    package: str
    tests: tuple[str, ...]
    python_path: tuple[str, ...] = ()

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


PROJECTS = {p.name: p for p in (
    Project("inflection", "0.5.1",
            "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417", "MIT",
            "inflection", ("test_inflection.py",)),
    Project("parse", "1.22.4",
            "706d458feed5a81b02768d3156e8070baf6cee7d150a3a3c0cd43101a875c3b5", "MIT",
            "parse", ("tests",)),
    Project("toolz", "1.0.0",
            "2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02", "BSD-3-Clause",
            "toolz", ("toolz/tests",)),
    Project("cachetools", "8.0.2",
            "30ac523adfc118b51d2b2e7bad8a0ddb31370dfe2700c7f10ca224f36ccf81e0", "MIT",
            "src/cachetools", ("tests",), ("src",)),
    Project("iniconfig", "2.3.1",
            "67f4b9c50da0dedf52af349e7749a80a9057a5031199791b906c3bb3ae878960", "MIT",
            "src/iniconfig", ("testing",), ("src",)),
)}
KINDS = {"fix-test": "fix an injected bug shown by a failing test of the project's own suite",
         "fix-issue": "fix an injected bug reported as an issue, its failing tests hidden"}
