"""What every transport does before and while it downloads a bundle.

* **Lock keys are plain relative paths** (:func:`lock_key`): unchanged by normalisation, no
  ``..``, ``.`` or empty part, no leading or trailing ``/``, no backslash, no control character,
  no ``::`` (an fsspec chain). Every key of a lock is checked before any file is downloaded, and a
  file is fetched by the key that was checked. A transport also refuses a key that passes through
  a link on the remote (:class:`~rlhub.integrations.hub.remote.FsspecRemote` opens each part without
  following links).
* **Caps** (:class:`BundleCaps`, ``pull:`` in the user's config): the number of files, their
  total size and their depth, checked on the lock before any download.
* **Bounded streams** (:func:`stream_to`): a file is written as it streams and refused as soon as
  it passes the size its lock entry records; the lock itself is read up to
  :data:`MAX_LOCK_BYTES`.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.integrations.hub.errors import IntegrityError

if TYPE_CHECKING:
    from rlhub.userconfig import UserConfig

MAX_LOCK_BYTES = 16 << 20
LOCK_FILE = "rlhub.lock"
CHUNK = 1 << 20
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
REFUSED = "The bundle was refused and nothing was installed."


def lock_key(rel: Any) -> str:
    """``rel`` if it is a plain relative POSIX path inside a bundle; else
    :class:`IntegrityError`."""
    problem = _key_problem(rel)
    if problem:
        raise IntegrityError(f"bundle path {rel!r}: expected a plain relative path inside the "
                             f"bundle, found {problem}")
    return str(rel)


def _key_problem(rel: Any) -> str | None:
    if not isinstance(rel, str) or not rel:
        return "no path"
    if rel.startswith("/") or rel.endswith("/"):
        return "a leading or trailing '/'"
    if "\\" in rel or _CONTROL.search(rel) or "::" in rel:
        return "a backslash, a control character or '::'"
    if any(part in ("", ".", "..") for part in rel.split("/")):
        return "an empty, '.' or '..' part"
    if posixpath.normpath(rel) != rel:
        return f"a path that normalises to {posixpath.normpath(rel)!r}"
    return None


@dataclass(frozen=True)
class BundleCaps:
    """The most a bundle may hold (``pull:`` in the user's config); ``where`` names it."""

    max_files: int = 10_000
    max_bytes: int = 4 << 30
    max_depth: int = 8
    where: str = "the pull: section of your rlhub config"

    @classmethod
    def from_config(cls, config: UserConfig) -> BundleCaps:
        section = config.section("pull")
        base = cls()
        return cls(int(section.get("max_files", base.max_files)),
                   int(section.get("max_bytes", base.max_bytes)),
                   int(section.get("max_depth", base.max_depth)), f"pull: in {config.path}")


def check_files(files: Any, caps: BundleCaps, where: str) -> dict[str, int]:
    """Refuse a lock's ``files`` whose keys are not plain paths, whose entries are malformed or
    that pass ``caps``; return ``{key: size}``."""
    if not isinstance(files, dict):
        raise IntegrityError(f"bundle at {where}: expected the lock's files as a mapping, found "
                             f"{type(files).__name__}. {REFUSED}")
    sizes: dict[str, int] = {}
    for rel, info in files.items():
        try:
            lock_key(rel)
        except IntegrityError as exc:
            raise IntegrityError(f"bundle at {where}: {exc}. {REFUSED}") from None
        if rel == LOCK_FILE:
            raise IntegrityError(f"bundle at {where}: the lock lists {LOCK_FILE} among its files "
                                 f"(a lock cannot hash itself; a second one would replace it). "
                                 f"{REFUSED}")
        size = info.get("size") if isinstance(info, dict) else None
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise IntegrityError(f"bundle at {where}: file {rel}: expected its size in bytes in "
                                 f"the lock, found {size!r}. {REFUSED}")
        sizes[rel] = size
    _check_caps(sizes, caps, where)
    return sizes


def _check_caps(sizes: dict[str, int], caps: BundleCaps, where: str) -> None:
    deepest = max(sizes, key=lambda r: r.count("/"), default="")
    found = [("files", len(sizes), caps.max_files, "max_files"),
             ("bytes", sum(sizes.values()), caps.max_bytes, "max_bytes"),
             ("folders deep", deepest.count("/"), caps.max_depth, "max_depth")]
    for what, value, cap, key in found:
        if value > cap:
            example = f" ({deepest})" if key == "max_depth" else ""
            raise IntegrityError(f"bundle at {where}: expected at most {cap} {what} ({key}, "
                                 f"{caps.where}), found {value}{example}. {REFUSED}")


def stream_to(chunks: Iterable[bytes], dest: Path, size: int, rel: str, where: str) -> None:
    """Write ``chunks`` to ``dest``, refusing the file as soon as it passes ``size`` bytes."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(dest, "wb") as out:
        for chunk in chunks:
            written += len(chunk)
            if written > size:
                out.close()
                os.unlink(dest)
                raise IntegrityError(f"bundle at {where}: file {rel} has the wrong size: "
                                     f"expected {size} bytes, found more. {REFUSED}")
            out.write(chunk)


def read_bounded(chunks: Iterable[bytes], limit: int, what: str) -> bytes:
    """The bytes of ``chunks``, refusing more than ``limit`` of them."""
    out = bytearray()
    for chunk in chunks:
        out += chunk
        if len(out) > limit:
            raise IntegrityError(f"{what}: expected at most {limit} bytes, found more. {REFUSED}")
    return bytes(out)


def file_chunks(fh: Any) -> Iterable[bytes]:
    """The chunks of an open binary file, :data:`CHUNK` bytes at a time."""
    while chunk := fh.read(CHUNK):
        yield chunk
