"""The publishing transports: which remote serves a bundle URL.

A transport is a class with the :class:`~rlhub.integrations.hub.remote.Remote` methods, built from the
URL without its scheme. The Hugging Face Hub (``hf://``, :mod:`rlhub.integrations.hub.hf`) is listed
here; every other URL goes to :class:`~rlhub.integrations.hub.remote.FsspecRemote` (``file://``,
``s3://``, ``memory://``, ...). A new transport is one more entry in :data:`TRANSPORTS`.
"""

from __future__ import annotations

from collections.abc import Callable

from rlhub.integrations.hub.hf import HfRemote
from rlhub.integrations.hub.remote import FsspecRemote, Remote

# URL prefix -> the remote serving such URLs, given the URL without the prefix.
TRANSPORTS: dict[str, Callable[[str], Remote]] = {"hf://": HfRemote}


def open_remote(url: str) -> Remote:
    """The remote serving ``url``."""
    for prefix, transport in TRANSPORTS.items():
        if url.startswith(prefix):
            return transport(url.removeprefix(prefix))
    return FsspecRemote(url)
