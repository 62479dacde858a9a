"""Unified diffs: finding a model's patch and applying it (the reference patch is made by
:func:`rlhub.make_patch`).

A completion's patch is the text of its ```` ```diff ```` (or ```` ```patch ````) fenced blocks,
or, unfenced, everything from its first ``diff --git`` or ``--- `` line. It is applied by
``git apply --recount`` (hunk line counts recomputed, context lines still exact) in a private
temporary folder holding only the files it names, copied from the repository; the result is
the changed files, which the grader writes into a fresh workspace. A patch that names a path
outside the repository, makes a symbolic link, or that ``git apply`` refuses does not apply.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

MAX_PATCH = 2 << 20
_FENCE = re.compile(r"```[ \t]*(?:diff|patch|udiff)[ \t]*\n(.*?)```", re.DOTALL)
_HEADER = re.compile(r"^(?:diff --git a/(\S+) b/(\S+)|--- (?:a/)?(\S+)|\+\+\+ (?:b/)?(\S+))",
                     re.MULTILINE)
Changes = dict[str, "str | None"]  # path -> new text, or None when the file is deleted


def extract_patch(completion: str) -> str | None:
    """The patch of a completion (see the module docstring), or None when it holds none."""
    blocks = _FENCE.findall(completion)
    text = "".join(b if b.endswith("\n") else b + "\n" for b in blocks)
    if not blocks:
        match = re.search(r"^(diff --git |--- )", completion, re.MULTILINE)
        text = completion[match.start():] if match else ""
    text = text.rstrip() + "\n"  # a blank line after the last hunk is no context line
    return text if text.strip() and _HEADER.search(text) else None


def touched_paths(patch: str) -> list[str]:
    """Every path a patch names (``a/`` and ``b/`` sides), in order, without /dev/null."""
    found = []
    for match in _HEADER.finditer(patch):
        for path in match.groups():
            if path and path != "/dev/null" and path not in found:
                found.append(path)
    return found


def safe_path(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and not path.startswith("/") and ".." not in parts and "" not in parts \
        and "\\" not in path and not any(p.startswith(".git") for p in parts)


class PatchError(ValueError):
    """The patch does not apply; the message says why, for the policy to read."""


def apply_patch(patch: str, files: Mapping[str, str]) -> Changes:
    """The files ``patch`` changes when applied to ``files``; :class:`PatchError` when it does
    not apply (see the module docstring)."""
    if len(patch) > MAX_PATCH:
        raise PatchError(f"the patch has {len(patch)} characters; the limit is {MAX_PATCH}")
    paths = touched_paths(patch)
    bad = [p for p in paths if not safe_path(p)]
    if bad:
        raise PatchError(f"the patch names paths outside the repository: {bad[:3]}")
    if not paths:
        raise PatchError("no file headers (--- a/PATH, +++ b/PATH) were found in the patch")
    with tempfile.TemporaryDirectory(prefix="rlhub-swe-apply-") as tmp:
        root = Path(tmp) / "repo"
        for path in paths:
            if path in files:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(files[path])
        root.mkdir(exist_ok=True)
        _git_apply(root, patch, Path(tmp))
        return _changes(root, paths, files)


def _git_apply(root: Path, patch: str, home: Path) -> None:
    git = shutil.which("git")
    if git is None:
        raise OSError("git is not installed on this machine; rlhub-swe needs it to apply patches")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "LANG": "C"}
    done = subprocess.run([git, "apply", "--recount", "--whitespace=nowarn", "-"], cwd=root,
                          input=patch.encode("utf-8", "surrogateescape"), capture_output=True,
                          timeout=30, env=env)
    if done.returncode:
        said = done.stderr.decode(errors="replace").strip()
        raise PatchError(f"git apply refused the patch: {said[:600]}")


def _changes(root: Path, paths: list[str], files: Mapping[str, str]) -> Changes:
    changes: Changes = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = Path(dirpath) / name
            rel = str(full.relative_to(root))
            if full.is_symlink():
                raise PatchError(f"the patch makes {rel} a symbolic link; only files may change")
            try:
                text = full.read_text()
            except UnicodeDecodeError:
                raise PatchError(f"the patch makes {rel} a binary file") from None
            if files.get(rel) != text:
                changes[rel] = text
    for path in paths:
        if path in files and not (root / path).exists():
            changes[path] = None
    return changes

