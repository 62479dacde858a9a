"""Bundles on the Hugging Face Hub, through huggingface_hub.

A bundle lives in a **dataset repo** whose card (the bundle's ``README.md``) is tagged ``rlhub``.
A push is ``create_repo(repo_type="dataset", exist_ok=True)``, then one ``create_commit`` on
``main`` that adds every bundle file and deletes files of an earlier bundle (a commit is atomic,
so ``main`` never shows half a bundle), then ``create_tag`` for ``--revision``. Tags never move:
pushing another bundle under an existing tag is refused before anything is committed.

A pull resolves the revision to a commit with ``repo_info`` and downloads that exact commit: its
``rlhub.lock`` first, then each file the lock lists by its exact path (a GET of ``resolve/<commit>/
<path>`` through huggingface_hub's own session and headers; never a pattern, which the Hub client
would expand: ``data/`` matches any depth), once its size on the Hub matches the lock's, and no
further than that size while it streams; a tag or branch moving during the download cannot mix
two bundles, and no file outside the lock is fetched.
Parquet files and wheels travel through LFS (Xet when
``hf_xet`` is installed), which huggingface_hub handles.

The endpoint is ``$HF_ENDPOINT`` at call time (default ``https://huggingface.co``); the token is
huggingface_hub's usual one (``HF_TOKEN`` or ``hf auth login``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rlhub.integrations.hub.bundle import Bundle
from rlhub.integrations.hub.errors import HubError, IntegrityError, RevisionNotFound
from rlhub.integrations.hub.fetching import (
    CHUNK,
    MAX_LOCK_BYTES,
    REFUSED,
    BundleCaps,
    check_files,
    read_bounded,
    stream_to,
)
from rlhub.integrations.hub.lock import LOCK_FILE, parse_lock
from rlhub.integrations.hub.remote import DEFAULT_REVISION, Fetched, check_tag

REPO_TYPE = "dataset"
KEEP = {".gitattributes"}  # files the Hub creates with a repo; never deleted by a push


def endpoint() -> str:
    """The Hub's URL: ``$HF_ENDPOINT`` when set (read at each call), else huggingface_hub's."""
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


class HfRemote:
    """One dataset repo on the Hub, pushed to and pulled from as described above."""

    def __init__(self, repo_id: str):
        self.repo_id = repo_id.strip("/")
        self.url = f"hf://{self.repo_id}"

    def _api(self) -> Any:
        try:
            from huggingface_hub import HfApi
        except ImportError:
            raise HubError(
                "hf:// needs huggingface_hub, which is not installed; install it with "
                "`pip install 'rlhub[hub]'`"
            ) from None
        return HfApi(endpoint=endpoint())

    # -- push ----------------------------------------------------------------------------

    def push(self, bundle: Bundle, revision: str | None) -> dict[str, Any]:
        """Commit ``bundle`` to ``main`` and tag that commit ``revision``."""
        api = self._api()
        with self._errors("push"):
            api.create_repo(self.repo_id, repo_type=REPO_TYPE, exist_ok=True)
            tagged = self._tag_target(api, check_tag(revision)) if revision else None
            if tagged is not None and self._bundle_at(api, tagged) != bundle.id:
                raise HubError(
                    f"{self.url}: tag {revision!r} already points at commit {tagged} "
                    f"holding another bundle; tags never move, so push bundle "
                    f"{bundle.id} under a new tag"
                )
            commit = self._commit(api, bundle)
            if revision and tagged is None:
                api.create_tag(
                    self.repo_id,
                    tag=revision,
                    revision=commit,
                    repo_type=REPO_TYPE,
                    tag_message=f"rlhub bundle {bundle.id}",
                )
        return {
            "url": self.url,
            "bundle": bundle.id,
            "revision": revision or DEFAULT_REVISION,
            "commit": commit,
            "endpoint": endpoint(),
        }

    def _commit(self, api: Any, bundle: Bundle) -> str:
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        info = api.repo_info(self.repo_id, repo_type=REPO_TYPE, revision=DEFAULT_REVISION)
        current = {s.rfilename for s in info.siblings or []}
        paths = bundle.paths()
        ops: list[Any] = [
            CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(bundle.root / p)) for p in paths
        ]
        ops += [CommitOperationDelete(path_in_repo=p) for p in sorted(current - set(paths) - KEEP)]
        made = api.create_commit(
            self.repo_id,
            operations=ops,
            repo_type=REPO_TYPE,
            revision=DEFAULT_REVISION,
            commit_message=f"rlhub bundle {bundle.name} {bundle.id[:12]}",
            commit_description=f"rlhub bundle id {bundle.id}",
        )
        return str(made.oid)

    def _tag_target(self, api: Any, tag: str) -> str | None:
        refs = api.list_repo_refs(self.repo_id, repo_type=REPO_TYPE)
        return next((t.target_commit for t in refs.tags if t.name == tag), None)

    def _bundle_at(self, api: Any, commit: str) -> str | None:
        from huggingface_hub import hf_hub_download

        with tempfile.TemporaryDirectory(prefix="rlhub-hf-") as tmp:
            path = hf_hub_download(
                self.repo_id,
                LOCK_FILE,
                repo_type=REPO_TYPE,
                revision=commit,
                local_dir=tmp,
                endpoint=endpoint(),
            )
            return parse_lock(Path(path).read_text(), f"{self.url}@{commit}").get("lock_hash")

    # -- fetch ---------------------------------------------------------------------------

    def fetch(self, revision: str | None, dest: Path, caps: BundleCaps = BundleCaps()) -> Fetched:
        """Download the commit ``revision`` resolves to into ``dest`` (verified separately).

        The lock comes first, and its keys and caps are checked
        (:mod:`rlhub.integrations.hub.fetching`) before anything else is downloaded; then each file it
        lists, by that exact path (never a pattern), after its size on the Hub matched the
        lock's, and no further than that size while it streams.
        """
        rev = revision or DEFAULT_REVISION
        api = self._api()
        where = f"{self.url}@{rev}"
        with self._errors("pull", rev):
            info = api.repo_info(
                self.repo_id, repo_type=REPO_TYPE, revision=rev, files_metadata=True
            )
            commit = str(info.sha)
            files = self._lock_files(commit, dest, caps, where)
            self._check_sizes(info, files, where)
            for rel, size in sorted(files.items()):
                self._download(commit, rel, size, dest, where)
        return Fetched(dest, None, commit, rev)

    @contextmanager
    def _stream(self, commit: str, rel: str) -> Iterator[Any]:
        """The response of a GET of ``rel`` at ``commit``, through huggingface_hub's session."""
        from huggingface_hub import get_session, hf_hub_url
        from huggingface_hub.utils import build_hf_headers, hf_raise_for_status

        url = hf_hub_url(self.repo_id, rel, repo_type=REPO_TYPE, revision=commit,
                         endpoint=endpoint())
        with get_session().stream("GET", url, headers=build_hf_headers(),
                                  follow_redirects=True, timeout=60) as response:
            hf_raise_for_status(response)
            yield response

    def _lock_files(self, commit: str, dest: Path, caps: BundleCaps, where: str
                    ) -> dict[str, int]:
        """Download the commit's lock into ``dest``; ``{file: size}`` it lists, keys and caps
        checked (none if it is missing or unreadable: verify_bundle names what is wrong)."""
        from huggingface_hub import errors as hf_errors

        try:
            with self._stream(commit, LOCK_FILE) as response:
                data = read_bounded(response.iter_bytes(CHUNK), MAX_LOCK_BYTES,
                                    f"{LOCK_FILE} of {where}")
        except hf_errors.EntryNotFoundError:
            return {}
        dest.mkdir(parents=True, exist_ok=True)
        (dest / LOCK_FILE).write_bytes(data)
        try:
            lock = parse_lock(data.decode(errors="replace"), f"{LOCK_FILE} of {where}")
        except HubError:
            return {}
        return check_files(lock.get("files", {}), caps, where)

    def _download(self, commit: str, rel: str, size: int, dest: Path, where: str) -> None:
        from huggingface_hub import errors as hf_errors

        try:
            with self._stream(commit, rel) as response:
                stream_to(response.iter_bytes(CHUNK), dest / rel, size, rel, where)
        except hf_errors.EntryNotFoundError:
            return  # verify_bundle names the missing file

    @staticmethod
    def _check_sizes(info: Any, files: dict[str, int], where: str) -> None:
        sizes = {s.rfilename: s.size for s in info.siblings or []}
        for rel, size in sorted(files.items()):
            if rel in sizes and sizes[rel] != size:
                raise IntegrityError(
                    f"bundle at {where}: file {rel} has the wrong size: expected "
                    f"{size} bytes, found {sizes[rel]}. {REFUSED}"
                )

    def _known_refs(self) -> str:
        try:
            refs = self._api().list_repo_refs(self.repo_id, repo_type=REPO_TYPE)
        except Exception:  # noqa: BLE001 - only decorates an error message
            return "could not be listed"
        names = [f"branch {b.name}" for b in refs.branches] + [f"tag {t.name}" for t in refs.tags]
        return ", ".join(names) or "none"

    @contextmanager
    def _errors(self, action: str, revision: str | None = None) -> Iterator[None]:
        """Turn huggingface_hub's errors into HubErrors that say what to do."""
        from huggingface_hub import errors as hf_errors

        try:
            yield
        except hf_errors.RevisionNotFoundError:
            raise RevisionNotFound(
                f"revision {revision!r} not found in {self.url} at "
                f"{endpoint()}; its refs are: {self._known_refs()}"
            ) from None
        except hf_errors.RepositoryNotFoundError:
            raise HubError(
                f"{action} {self.url}: expected a dataset repo {self.repo_id} at "
                f"{endpoint()}, found none (or no access: check HF_TOKEN)"
            ) from None
        except hf_errors.OfflineModeIsEnabled:
            raise HubError(
                f"{action} {self.url}: HF_HUB_OFFLINE is set, so the Hub cannot be "
                "reached; unset it"
            ) from None
        except hf_errors.HfHubHTTPError as exc:
            raise HubError(f"{action} {self.url} at {endpoint()} failed: {exc}") from exc
