"""Where bundles live: any fsspec URL (``file://``, ``s3://``, ``memory://``, ...) or the Hub.

A reference is ``URL[@revision]``: ``file:///srv/envs/math@v1``, ``s3://bucket/envs/math``,
``hf://org/math-env@v1`` (or just ``org/math-env@v1``). The revision is a tag, ``main`` (the
default: the last push) or, on fsspec remotes, a bundle id. The Hugging Face Hub is served by
:mod:`rlhub.integrations.hub.hf`; every other URL by :class:`FsspecRemote`
(:mod:`rlhub.integrations.hub.transports` picks one), whose layout is::

    <base>/bundles/<bundle id>/...   one folder per bundle, never modified once complete
    <base>/refs/main                 the id of the last pushed bundle
    <base>/refs/<tag>                a tag: set once, never moved to another bundle

A push uploads the bundle's files with its ``rlhub.lock`` last, and only then writes the refs,
each atomically (a local file is renamed into place; an object store's PUT is atomic), so an
interrupted push never leaves a ref pointing at an incomplete bundle.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from rlhub.integrations.hub.bundle import Bundle
from rlhub.integrations.hub.errors import HubError, IntegrityError, RevisionNotFound
from rlhub.integrations.hub.fetching import (
    MAX_LOCK_BYTES,
    REFUSED,
    BundleCaps,
    check_files,
    file_chunks,
    read_bounded,
    stream_to,
)
from rlhub.integrations.hub.lock import LOCK_FILE, parse_lock

DEFAULT_REVISION = "main"
TAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
BUNDLE_ID_RE = re.compile(r"^[0-9a-f]{64}$")
HF_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Ref:
    """A parsed reference: the remote's URL and the requested revision (None: ``main``)."""

    url: str
    revision: str | None = None

    def __str__(self) -> str:
        return f"{self.url}@{self.revision}" if self.revision else self.url


@dataclass(frozen=True)
class Fetched:
    """A downloaded, not yet verified bundle folder, and what the reference resolved to."""

    root: Path
    expected_id: str | None  # the bundle id the ref named, when the remote knows it
    resolved: str  # a bundle id (fsspec) or a commit sha (Hub)
    revision: str


class Remote(Protocol):
    """A place bundles are pushed to and pulled from."""

    url: str

    def push(self, bundle: Bundle, revision: str | None) -> dict[str, Any]: ...

    def fetch(self, revision: str | None, dest: Path, caps: BundleCaps) -> Fetched: ...


def parse_ref(text: str) -> Ref:
    """Split ``URL[@revision]``; a bare ``org/name`` that is not a local path means the Hub."""
    url, revision = text, None
    head, sep, tail = text.rpartition("@")
    if sep and head and tail and "/" not in tail:
        url, revision = head, tail
    if "://" not in url:
        local = Path(url)
        url = (
            f"hf://{url}"
            if HF_REPO_RE.match(url) and not local.exists()
            else local.resolve().as_uri()
        )
    return Ref(normalise_url(url), revision)


def normalise_url(url: str) -> str:
    """One spelling per remote, so that pins, install records and refusals agree: the scheme in
    lower case, no empty, ``.`` or trailing path part; a ``file:`` URL as its resolved absolute
    path (``file://localhost/a/../b``, ``%20``); a Hub repo id without a ``datasets/`` prefix."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url.rstrip("/")
    scheme = scheme.lower()
    if scheme == "file":
        from urllib.parse import unquote

        path = unquote(rest.removeprefix("localhost"))
        return Path("/" + path.lstrip("/")).resolve().as_uri()
    parts = [p for p in rest.split("/") if p not in ("", ".")]
    if scheme == "hf" and len(parts) == 3 and parts[0] == "datasets":
        parts = parts[1:]
    return f"{scheme}://" + "/".join(parts)


def remote_key(url: str) -> str:
    """The key one remote is known by in pins and install records: its normalised URL, and a
    Hub repo id in lower case (the Hub's repo ids are case-insensitive)."""
    url = normalise_url(url)
    return url.lower() if url.startswith("hf://") else url


def check_tag(tag: str) -> str:
    """Refuse tag names that are not plain names, or that could be read as a bundle id."""
    if not TAG_RE.match(tag) or BUNDLE_ID_RE.match(tag):
        raise HubError(
            f"revision {tag!r}: expected a tag name of letters, digits, '.', '_' and "
            "'-' (at most 128, not a 64-character hex bundle id)"
        )
    return tag


class FsspecRemote:
    """Bundles under an fsspec base URL, in the layout of the module docstring."""

    def __init__(self, url: str):
        import fsspec

        self.url = url.rstrip("/")
        try:
            self.fs, self.base = fsspec.core.url_to_fs(self.url, skip_instance_cache=True)
        except (ImportError, ValueError) as exc:
            raise HubError(f"{self.url}: expected a URL fsspec can open, found {exc}") from exc
        self.base = self.base.rstrip("/")

    def _path(self, *parts: str) -> str:
        return "/".join([self.base, *parts])

    # -- refs ----------------------------------------------------------------------------

    def refs(self) -> dict[str, str]:
        """Every ref name and the bundle id it points at."""
        try:
            names = [p.rsplit("/", 1)[-1] for p in self.fs.ls(self._path("refs"), detail=False)]
        except FileNotFoundError:
            return {}
        return {n: v for n in sorted(names) if TAG_RE.match(n) and (v := self.read_ref(n))}

    def read_ref(self, name: str) -> str | None:
        """The bundle id a ref names (read through no link, at most 128 bytes), or None."""
        try:
            with self._open(("refs", name), f"{self.url}@{name}") as fh:
                value = fh.read(128).decode().strip()
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        return value if BUNDLE_ID_RE.match(value) else None

    def _write_ref(self, name: str, bundle_id: str) -> None:
        path, data = self._path("refs", name), (bundle_id + "\n").encode()
        if _is_local(self.fs):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp-{uuid.uuid4().hex}"
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        else:
            self.fs.pipe_file(path, data)

    # -- push ----------------------------------------------------------------------------

    def push(self, bundle: Bundle, revision: str | None) -> dict[str, Any]:
        """Upload ``bundle`` (unless already there), then move ``main`` and set the tag."""
        if revision is not None:
            existing = self.read_ref(check_tag(revision))
            if existing not in (None, bundle.id):
                raise HubError(
                    f"{self.url}: tag {revision!r} already points at bundle {existing}; "
                    f"tags never move, so push bundle {bundle.id} under a new tag"
                )
        uploaded = not self.fs.exists(self._path("bundles", bundle.id, LOCK_FILE))
        if uploaded:
            self._upload(bundle)
        self._write_ref(DEFAULT_REVISION, bundle.id)
        if revision is not None:
            self._write_ref(revision, bundle.id)
        return {
            "url": self.url,
            "bundle": bundle.id,
            "revision": revision or DEFAULT_REVISION,
            "uploaded": uploaded,
        }

    def _upload(self, bundle: Bundle) -> None:
        for rel in bundle.paths():  # the lock comes last: its presence marks a complete upload
            target = self._path("bundles", bundle.id, rel)
            if _is_local(self.fs):
                os.makedirs(os.path.dirname(target), exist_ok=True)
            self.fs.put_file(str(bundle.root / rel), target)

    # -- fetch ---------------------------------------------------------------------------

    def fetch(self, revision: str | None, dest: Path, caps: BundleCaps = BundleCaps()) -> Fetched:
        """Download the files the bundle's lock lists into ``dest`` (verification is separate).

        Every lock key is checked (:mod:`rlhub.integrations.hub.fetching`) before any file is
        downloaded; each file is read by that key, through no link, and no further than its size.
        """
        rev = revision or DEFAULT_REVISION
        bundle_id = rev if BUNDLE_ID_RE.match(rev) else self.read_ref(rev)
        if bundle_id is None:
            raise RevisionNotFound(self._not_found(rev))
        where = f"{self.url}@{rev}"
        src = ("bundles", bundle_id)
        try:
            with self._open((*src, LOCK_FILE), where) as fh:
                lock_bytes = read_bounded(file_chunks(fh), MAX_LOCK_BYTES,
                                          f"{LOCK_FILE} of {where}")
        except FileNotFoundError:
            raise RevisionNotFound(
                f"{where}: expected the bundle {bundle_id} at {self._path(*src)}, found no "
                f"{LOCK_FILE} there"
            ) from None
        lock = parse_lock(lock_bytes.decode(), f"{LOCK_FILE} of {where}")
        sizes = check_files(lock.get("files", {}), caps, where)
        dest.mkdir(parents=True, exist_ok=True)
        (dest / LOCK_FILE).write_bytes(lock_bytes)
        for rel, size in sorted(sizes.items()):
            try:
                with self._open((*src, *rel.split("/")), where) as fh:
                    _check_size(fh, size, rel, where)
                    stream_to(file_chunks(fh), dest / rel, size, rel, where)
            except FileNotFoundError:
                continue  # reported, with every other problem, by verify_bundle
        return Fetched(dest, bundle_id, bundle_id, rev)

    def _open(self, parts: tuple[str, ...], where: str) -> BinaryIO:
        """The remote file at ``parts`` under the base, opened for reading through no link."""
        if not _is_local(self.fs):
            return self.fs.open(self._path(*parts), "rb")  # type: ignore[no-any-return]
        try:
            return open_no_links(self.base, parts)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise FileNotFoundError(exc.errno, exc.strerror) from None
            rel = "/".join(parts[2:] if parts[0] == "bundles" else parts)
            raise IntegrityError(
                f"bundle at {where}: file {rel} is a symbolic link (or lies under one) or not a "
                f"regular file; a bundle holds regular files only. {REFUSED}"
            ) from None

    def _not_found(self, rev: str) -> str:
        refs = self.refs()
        known = ", ".join(sorted(refs)) if refs else "none (nothing was pushed here)"
        return (
            f"revision {rev!r} not found at {self.url}: expected a tag, 'main' or a bundle "
            f"id; the refs there are {known}"
        )


def _check_size(fh: Any, size: int, rel: str, where: str) -> None:
    """Refuse, before reading it, a file whose size the remote reports and that differs from
    the lock's (the stream is bounded by the lock's size anyway)."""
    try:
        found = os.fstat(fh.fileno()).st_size
    except (AttributeError, OSError, ValueError):
        found = getattr(fh, "size", None)
    if isinstance(found, int) and found != size:
        raise IntegrityError(f"bundle at {where}: file {rel} has the wrong size: expected {size} "
                             f"bytes, found {found}. {REFUSED}")


def open_no_links(base: str, parts: tuple[str, ...]) -> BinaryIO:
    """Open ``base/parts...`` for reading, following no link at or below ``base`` (``base`` is
    the user's own and may be one): each folder is opened relative to the last one with
    ``O_NOFOLLOW``, and the file must be a regular file (a FIFO would block the pull)."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        leaf = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(leaf).st_mode):
        os.close(leaf)
        raise OSError(errno.EINVAL, "not a regular file")
    os.set_blocking(leaf, True)
    return os.fdopen(leaf, "rb")


def _is_local(fs: Any) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)
