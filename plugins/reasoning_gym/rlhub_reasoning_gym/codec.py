"""A lossless JSON encoding for reasoning-gym entries.

Tasks cross rlhub as JSON (HTTP, Parquet), but reasoning-gym entries hold tuples and dicts with
non-string keys, and some ``score_answer`` functions compare against them exactly: ``arc_agi``
compares a parsed board, a tuple of tuples, with ``metadata["output"]``, so after a plain
``json.dumps``/``json.loads`` round trip (tuples become lists) its own gold answer scores 0.05.

:func:`encode` maps an entry onto JSON values and :func:`decode` restores it exactly. JSON values
pass through unchanged, so most entries read as they are; the rest are tagged objects:

* a tuple is ``{"$tuple": [...]}``, a set ``{"$set": [...]}``, a frozenset
  ``{"$frozenset": [...]}``;
* a dict with a non-string key, or with a key starting with ``$``, is ``{"$items": [[k, v], ...]}``;
* a non-finite float is ``{"$float": "inf"}`` (strict JSON has no NaN or Infinity).

numpy scalars and arrays become Python numbers and lists (reasoning-gym 0.1.25 entries hold none).
"""

from __future__ import annotations

import json
import math
from typing import Any

_SEQUENCE_TAGS: dict[str, type] = {"$tuple": tuple, "$set": set, "$frozenset": frozenset}
_TAGS = {*_SEQUENCE_TAGS, "$items", "$float"}


def encode(value: Any, path: str = "entry") -> Any:
    """``value`` as JSON-compatible data that :func:`decode` turns back into an equal value."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, list):
        return [encode(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, f"{path}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, (set, frozenset)):
        tag = "$set" if isinstance(value, set) else "$frozenset"
        items = [encode(v, f"{path}{{}}") for v in value]
        return {tag: sorted(items, key=lambda item: json.dumps(item, sort_keys=True))}
    if isinstance(value, dict):
        return _encode_dict(value, path)
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy, without importing it
        return encode(value.tolist(), path)
    raise TypeError(f"{path}: expected JSON-like data (dict, list, tuple, set, str, number, bool, "
                    f"None), found {type(value).__name__}")


def _encode_dict(value: dict[Any, Any], path: str) -> Any:
    if all(isinstance(k, str) and not k.startswith("$") for k in value):
        return {k: encode(v, f"{path}.{k}") for k, v in value.items()}
    return {"$items": [[encode(k, f"{path} key"), encode(v, f"{path}[{k!r}]")]
                       for k, v in value.items()]}


def decode(data: Any) -> Any:
    """The value :func:`encode` was given."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if len(data) == 1:
        (tag, inner), = data.items()
        if tag in _SEQUENCE_TAGS:
            return _SEQUENCE_TAGS[tag](decode(v) for v in inner)
        if tag == "$items":
            return {_hashable(decode(k)): decode(v) for k, v in inner}
        if tag == "$float":
            return float(inner)
    return {k: decode(v) for k, v in data.items()}


def _hashable(key: Any) -> Any:
    if isinstance(key, (list, dict, set)):
        raise ValueError(f"entry: a dict key decoded to an unhashable {type(key).__name__}")
    return key


def is_tagged(data: Any) -> bool:
    """Whether ``data`` is one of the tagged objects above (used by tests and diagnostics)."""
    return isinstance(data, dict) and len(data) == 1 and next(iter(data)) in _TAGS
