"""Where rlhub keeps its files on this machine: ``$RLHUB_HOME``, else ``~/.cache/rlhub``.

Pulled environments live in ``envs/``. Caches live in :func:`rlhub_cache` (``$RLHUB_CACHE``, else
``$RLHUB_HOME/cache``); plugins keep their own caches there too. Everything in it is keyed by what
it was derived from (a content hash, a version), so one cache may serve many homes: a cluster's
shared disk, or a test suite whose every test has an empty home of its own.
"""

from __future__ import annotations

import os
from pathlib import Path


def rlhub_home() -> Path:
    """Where pulled environments and caches live: ``$RLHUB_HOME`` or ``~/.cache/rlhub``."""
    return Path(os.environ.get("RLHUB_HOME") or Path.home() / ".cache" / "rlhub")


def rlhub_cache() -> Path:
    """Where derived, rebuildable files live: ``$RLHUB_CACHE`` or ``$RLHUB_HOME/cache``."""
    return Path(os.environ.get("RLHUB_CACHE") or rlhub_home() / "cache")
