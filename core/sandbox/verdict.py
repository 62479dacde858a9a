"""The sandboxed-verdict protocol, spoken by every check that judges a program in a sandbox.

The host sends the job, with a :func:`fresh_nonce`, on the sandbox's stdin; a trusted parent
inside the sandbox runs the untrusted program and prints ``{"<tag>": payload, "nonce": nonce}``
as one JSON line. The host keeps the payload of the last line with its tag and nonce
(:func:`tagged_line`). The program never sees the nonce, so a line it prints to forge a pass is
ignored. ``python-tests`` (tag ``rlhub_verdict``) and the code plugin's SQL and regex domains use
it.
"""

from __future__ import annotations

import json
import secrets
from typing import Any


def fresh_nonce() -> str:
    """A random nonce for one job (128 bits, hex)."""
    return secrets.token_hex(16)


def tagged_line(stdout: str, tag: str, nonce: str) -> Any:
    """The payload of the last ``{"<tag>": ..., "nonce": nonce}`` line of ``stdout``, or None.

    Lines with another nonce (a candidate guessing the format) or that do not parse are skipped.
    """
    for line in reversed(stdout.splitlines()):
        if line.startswith('{"' + tag + '"'):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and tag in data and data.get("nonce", "") == nonce:
                return data[tag]
    return None
