"""Where rlhub keeps its files on this machine: ``$RLHUB_HOME``, else ``~/.cache/rlhub``.

Pulled environments live in ``envs/``, caches in ``cache/``; plugins may keep their own caches
under it too.
"""

from __future__ import annotations

import os
from pathlib import Path


def rlhub_home() -> Path:
    """Where pulled environments and caches live: ``$RLHUB_HOME`` or ``~/.cache/rlhub``."""
    return Path(os.environ.get("RLHUB_HOME") or Path.home() / ".cache" / "rlhub")
