"""The project's pull pins: what each pulled reference resolved to, in ``rlhub-pulls.lock``.

A bundle's own ``rlhub.lock`` travels with its files, so whoever can write the remote can change
the files and seal a new lock; a tag can be moved to another commit. The pins are the user's side
of the check: every ``rlhub pull URL@revision`` records, in the project's ``rlhub-pulls.lock``
(the current folder's, or ``--project-lock FILE``; commit it with the project), the commit or
bundle id the reference resolved to and the bundle's lock hash::

    {"kind": "pulls", "rlhub_lock": 1, "pulls": {"hf://org/env@v1": {
        "url": "hf://org/env", "revision": "v1", "resolved": "<commit>",
        "bundle": "<sha256 of the lock>", "name": "env", "trusted": false}}}

A later pull of the same reference that finds another bundle is refused unless ``--update``, and
the refusal says how to pull the pinned one (by its commit or bundle id, which never move). The
reference is keyed by its normalised URL (:func:`rlhub.integrations.hub.remote.remote_key`), so
another spelling of the same remote is the same pin. Discovery reads the pins too
(:mod:`rlhub.installs`): in this project, an environment is the bundle its last recorded pull
pinned, whatever another project pulled since.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rlhub.integrations.hub.errors import HubError
from rlhub.integrations.hub.lock import LOCK_VERSION, write_lock
from rlhub.integrations.hub.remote import DEFAULT_REVISION, Ref, remote_key
from rlhub.installs import PROJECT_LOCK

__all__ = ["PROJECT_LOCK", "PinMismatch", "Pins"]



class PinMismatch(HubError):
    """A reference now resolves to another bundle than the one the project pinned."""


class Pins:
    """The pins of one project lock file (read at construction; written by :meth:`record`)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.pulls: dict[str, dict[str, Any]] = self._read()

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise HubError(f"project lock {self.path}: expected a JSON file of pulls, found "
                           f"{exc}; fix it or delete it to pin afresh") from exc
        if not (isinstance(data, dict) and data.get("kind") == "pulls"
                and isinstance(data.get("pulls"), dict)):
            raise HubError(f"project lock {self.path}: expected {{\"kind\": \"pulls\", "
                           f"\"pulls\": {{...}}}}, found another document; pass another file "
                           "with --project-lock")
        return data["pulls"]

    @staticmethod
    def key(ref: Ref) -> str:
        return f"{remote_key(ref.url)}@{ref.revision or DEFAULT_REVISION}"

    def check(self, ref: Ref, bundle: str, resolved: str) -> None:
        """Raise :class:`PinMismatch` if ``ref`` is pinned to a bundle other than ``bundle``."""
        pinned = self.pulls.get(self.key(ref))
        if pinned is None or pinned.get("bundle") == bundle:
            return
        raise PinMismatch(
            f"pull {self.key(ref)}: refused: {self.path} pins it to bundle {pinned['bundle']} "
            f"(resolved {pinned.get('resolved')}), but it now resolves to bundle {bundle} "
            f"({resolved}): the tag moved or the files changed since this project pulled it. "
            f"Pull the pinned bundle with `rlhub pull {ref.url}@{pinned.get('resolved')}`, or "
            "accept the new one with --update. Nothing was installed."
        )

    def record(self, ref: Ref, entry: dict[str, Any]) -> None:
        """Pin ``ref`` to ``entry`` (``resolved``, ``bundle``, ...); write the file atomically."""
        self.pulls.pop(self.key(ref), None)  # the last pull recorded is the one discovery uses
        self.pulls[self.key(ref)] = {"url": ref.url,
                                     "revision": ref.revision or DEFAULT_REVISION, **entry}
        write_lock({"rlhub_lock": LOCK_VERSION, "kind": "pulls", "pulls": self.pulls}, self.path)
