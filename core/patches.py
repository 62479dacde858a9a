"""Unified diffs in git's form, for repository tasks.

A domain makes its reference patch with :func:`make_patch`, and the contract kit's ``repo``
probes make theirs the same way; ``git apply`` takes what it writes.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping


def make_patch(before: Mapping[str, str], after: Mapping[str, str | None]) -> str:
    """The git-style unified diff taking ``before`` to ``before`` updated by ``after``
    (``None`` deletes a file), with three lines of context."""
    parts = []
    for path in sorted(after):
        old, new = before.get(path), after[path]
        if old == new:
            continue
        a = [] if old is None else old.splitlines(keepends=True)
        b = [] if new is None else new.splitlines(keepends=True)
        head = [f"diff --git a/{path} b/{path}\n"]
        head += ["new file mode 100644\n"] if old is None else []
        head += ["deleted file mode 100644\n"] if new is None else []
        lines = difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{path}",
                                     "/dev/null" if new is None else f"b/{path}")
        parts.append("".join(head) + "".join(_terminated(lines)))
    return "".join(parts)


def _terminated(lines: Iterable[str]) -> list[str]:
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return out
