"""Lazy references: ``"module:attr"`` strings, imported on first use.

Manifests name their domain's factory this way, and hooks name verifiers, sandbox backends and
strategies, so that discovery imports none of their code.
"""

from __future__ import annotations

import importlib
from typing import Any


def load_object(ref: str) -> Any:
    """Import ``"module:attr.sub"`` and return the attribute."""
    module_name, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
