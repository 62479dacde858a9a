"""Names on the rlhub side of the bridge: domain ids, component names, versions."""

from __future__ import annotations

import re

PLUGIN = "vf"
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*([.+-][A-Za-z0-9.+-]+)?$")


def domain_id(taskset: str) -> str:
    """``vf/<name>-v1`` for a taskset id (a name that already ends in ``-vN`` keeps it)."""
    name = re.sub(r"[^A-Za-z0-9_.+-]+", "-", taskset.rsplit("/", 1)[-1].split("@", 1)[0])
    name = name.strip("-._+") or "env"
    return f"{PLUGIN}/{name}" if re.search(r"-v[0-9]+$", name) else f"{PLUGIN}/{name}-v1"


def component(name: str) -> str:
    """A verifiers reward name as an rlhub component name (``[a-z][a-z0-9_]*``)."""
    clean = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")
    return clean if clean[:1].isalpha() else f"r_{clean}"


def version(text: str) -> str:
    """A distribution version in the manifest's form (``1.0rc1`` -> ``1.0-rc1``)."""
    if _VERSION.match(text):
        return text
    head = re.match(r"^[0-9]+(\.[0-9]+)*", text)
    rest = re.sub(r"[^A-Za-z0-9.+-]", "", text[head.end():]) if head else ""
    return f"{head.group(0)}-{rest}" if head and rest else (head.group(0) if head else "0")


def summary(text: str, taskset: str) -> str:
    """A distribution's summary as a manifest's (at most 300 characters, never empty)."""
    return (text.strip() or f"verifiers environment {taskset}")[:300]
