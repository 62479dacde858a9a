"""What a task source makes: the parts of one repository task, whatever its source."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Made:
    """A task's parts: the statement, the visible files, the hidden tests, the reference
    solution's changed files and the test ids of each set; ``package`` names the repository,
    ``packages`` the folders a patch may change, ``python_path`` what tests need on
    ``sys.path``, ``shown`` the files a single-turn prompt holds (None: all of them) and
    ``provenance`` where it came from."""

    statement: str
    files: dict[str, str]
    hidden: dict[str, str]
    solution: dict[str, str | None]
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    package: str
    facts: dict[str, Any] = field(default_factory=dict)
    kind: str = ""
    packages: list[str] = field(default_factory=list)
    python_path: list[str] = field(default_factory=list)
    shown: list[str] | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
