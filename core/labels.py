"""Labels: the task a reward request names, and how a reward server knows it is genuine.

A label is ``{"domain": ID, "task": Task.to_dict(), "at": {split, seed, index}, "sig": ...}``,
sent as an object or as its JSON string (what ``rlhub export`` writes). The task inside carries
its own gold answer and tests, so a server that verified whatever a label says would pay 1.0 to
any client that sends its own answer. :class:`LabelGate` is the server's label path; it trusts
only what it can re-derive or has signed:

* a label with ``sig`` must carry an HMAC-SHA256 of its domain and task made with the server's
  key (:func:`sign`; ``rlhub export --label-key-file`` and the server's own ``/v1/sample`` make
  them), else it is forged;
* an unsigned label is regenerated: the domain's task at the label's coordinates (``at``, or
  the ``domain:split:seed:index`` task id the domain gave it) must equal the label's task,
  field for field (their canonical JSON bytes are compared), else it is forged. A stochastic
  domain cannot be regenerated, so its labels must be signed;
* a label for a domain outside the served set is refused.

Refusals raise :class:`rlhub.errors.LabelError` (failure class ``label``); the server answers
them with the domain's minimum reward, never an HTTP error.

A reward server sees the same label many times (OpenRLHF sends each prompt's label with every one
of its samples), so the gate remembers the labels sent as text that it admitted, by their exact
text, in a bounded LRU (:meth:`LabelGate.recall`). Only admitted labels are remembered: a
refused one, a forged one among them, is checked in full every time it comes.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from rlhub.errors import DomainNotFound, LabelError, ManifestError
from rlhub.manifest import Manifest
from rlhub.task import Task

if TYPE_CHECKING:
    from rlhub.plugins import Registry

SIG_PREFIX = "hmac-sha256:"
KEY_ENV = "RLHUB_LABEL_KEY"


@dataclass(frozen=True)
class At:
    """Where a task comes from: ``domain.task(split, seed, index)``."""

    split: str
    seed: int
    index: int

    def to_dict(self) -> dict[str, Any]:
        return {"split": self.split, "seed": self.seed, "index": self.index}


def canonical(value: Any, *, parsed: bool = False) -> bytes:
    """Sorted-key compact JSON of ``value`` as it looks after a trip through JSON.

    ``parsed``: ``value`` is what JSON parsing gave (a label sent as text), so the trip would
    give it back unchanged and is skipped.
    """
    plain = value if parsed else json.loads(json.dumps(value, default=str))
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sign(domain: str, task: dict[str, Any], key: bytes, *, parsed: bool = False) -> str:
    """The signature of a (domain, task dict) pair under ``key`` (``parsed``: see
    :func:`canonical`)."""
    digest = hmac.new(key, canonical({"domain": domain, "task": task}, parsed=parsed),
                      hashlib.sha256)
    return SIG_PREFIX + digest.hexdigest()


def make_label(task: Task, *, at: At | None = None, key: bytes | None = None) -> dict[str, Any]:
    """The label of ``task``: coordinates when known, a signature when a key is given."""
    label: dict[str, Any] = {"domain": task.domain, "task": task.to_dict()}
    if at is not None:
        label["at"] = at.to_dict()
    if key is not None:
        label["sig"] = sign(task.domain, label["task"], key)
    return label


def label_json(task: Task, *, at: At | None = None, key: bytes | None = None) -> str:
    """:func:`make_label` as the JSON string an OpenRLHF dataset column holds."""
    return json.dumps(make_label(task, at=at, key=key), ensure_ascii=False, sort_keys=True)


def load_key(path: str | os.PathLike[str] | None = None) -> bytes | None:
    """The label key from ``path`` (its bytes, stripped) or ``$RLHUB_LABEL_KEY``; else None."""
    if path is not None:
        with open(path, "rb") as fh:
            key = fh.read().strip()
        if len(key) < 16:
            raise LabelError(f"label key file {path}: expected at least 16 bytes of secret, "
                             f"found {len(key)}")
        return key
    value = os.environ.get(KEY_ENV, "").strip()
    return value.encode() if value else None


def new_key() -> bytes:
    """A fresh random key (what a server without a configured key signs its own labels with)."""
    return secrets.token_hex(32).encode()


def parse(label: Any) -> tuple[str, Task, At | None, str | None]:
    """``(domain, task, at, sig)`` of a label object or JSON string; raise :class:`LabelError`."""
    if isinstance(label, str):
        try:
            label = json.loads(label)
        except (ValueError, RecursionError) as exc:
            raise LabelError(f"label: expected a JSON object string, found invalid JSON "
                             f"({str(exc)[:200]})") from None
    if not isinstance(label, dict):
        raise LabelError(f"label: expected an object with 'domain' and 'task', found "
                         f"{type(label).__name__}")
    task = _task(label.get("task"))
    domain = label.get("domain", task.domain)
    if domain != task.domain:
        raise LabelError(f"label: 'domain' is {domain!r} but the task belongs to {task.domain!r}")
    sig = label.get("sig")
    if sig is not None and not isinstance(sig, str):
        raise LabelError(f"label: expected 'sig' to be a string, found {type(sig).__name__}")
    return str(domain), task, _at(label.get("at")), sig


def _task(data: Any) -> Task:
    if not isinstance(data, dict):
        raise LabelError("label: expected 'task' to be an object (Task.to_dict()), found "
                         f"{type(data).__name__}")
    try:
        task = Task.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise LabelError(f"label: {exc}") from None
    if not isinstance(task.domain, str) or not isinstance(task.id, str):
        raise LabelError("label: expected the task's 'id' and 'domain' to be strings")
    return task


def _at(data: Any) -> At | None:
    if data is None:
        return None
    try:
        split, seed, index = data["split"], data["seed"], data["index"]
    except (KeyError, TypeError):
        raise LabelError(f"label: expected 'at' as {{split, seed, index}}, found {data!r}"[:300]) \
            from None
    if not isinstance(split, str) or not all(type(v) is int for v in (seed, index)):
        raise LabelError("label: expected 'at' to hold a string split and integer seed and index")
    return At(split, seed, index)


def at_from_id(task: Task) -> At | None:
    """The coordinates in a ``domain:split:seed:index`` task id (:func:`rlhub.task.task_id`)."""
    head = f"{task.domain}:"
    if not task.id.startswith(head):
        return None
    parts = task.id[len(head):].split(":")
    if len(parts) != 3 or not all(p.lstrip("-").isdigit() for p in parts[1:]):
        return None
    return At(parts[0], int(parts[1]), int(parts[2]))


class LabelGate:
    """The reward server's label path (see the module docstring).

    ``registry`` builds domains; ``key`` checks signatures (None: signed labels are refused);
    ``domains`` is the served set (None: every registered domain). ``cache_size`` bounds the
    regenerated tasks remembered (their digests, per coordinates), ``remember_chars`` the text of
    the admitted labels remembered (one label is remembered only when it is at most a 64th of it;
    the tasks parsed from them take a few times as many bytes).
    """

    def __init__(self, registry: Registry, *, key: bytes | None,
                 domains: Collection[str] | None = None, cache_size: int = 8192,
                 remember_chars: int = 8 << 20):
        self.registry = registry
        self.key = key
        self.domains = None if domains is None else frozenset(domains)
        self._regenerate = functools.lru_cache(maxsize=cache_size)(self._regenerate_uncached)
        self._remembered: OrderedDict[str, tuple[Task, Manifest]] = OrderedDict()
        self._remembered_chars = 0
        self._remember_chars = remember_chars
        self._lock = threading.Lock()  # the gate is called from the server's threads at once

    def open(self, label: Any) -> Task:
        """The task to verify for ``label``; raises :class:`LabelError` when it is refused."""
        return self.admitted(label)[0]

    def admitted(self, label: Any) -> tuple[Task, Manifest]:
        """:meth:`open`'s task and its domain's manifest (looked up once, here)."""
        remembered = self.recall(label)
        if remembered is not None:
            return remembered
        parsed = isinstance(label, str)  # its task is as JSON gives it: see canonical()
        try:
            domain, task, at, sig = parse(label)
            manifest = self.admit(domain)
            if sig is not None:
                task = self._signed(domain, task, sig, parsed=parsed)
            else:
                task = self._regenerated(manifest, task, at or at_from_id(task), parsed=parsed)
        except (RecursionError, ValueError, TypeError) as exc:
            raise LabelError(f"label: not a well-formed task ({type(exc).__name__}: "
                             f"{str(exc)[:200]})") from None
        if parsed:
            self._remember(label, (task, manifest))
        return task, manifest

    def recall(self, label: Any) -> tuple[Task, Manifest] | None:
        """What :meth:`admitted` answered for this exact label text before, if it is still
        remembered (None: not remembered, or not text). Cheap: a dict lookup, no parsing.

        The task is the one admitted before, handed out again (verifiers read tasks, never
        change them)."""
        if not isinstance(label, str):
            return None
        with self._lock:
            found = self._remembered.get(label)
            if found is not None:
                self._remembered.move_to_end(label)
            return found

    def _remember(self, text: str, admitted: tuple[Task, Manifest]) -> None:
        if len(text) * 64 > self._remember_chars:
            return
        with self._lock:
            if text in self._remembered:
                return
            self._remembered[text] = admitted
            self._remembered_chars += len(text)
            while self._remembered_chars > self._remember_chars:
                oldest, _ = self._remembered.popitem(last=False)
                self._remembered_chars -= len(oldest)

    def admit(self, domain: str) -> Manifest:
        """The manifest of ``domain``; refuse a domain that is not registered or not served."""
        if self.domains is not None and domain not in self.domains:
            raise LabelError(f"label: domain {domain!r} is not served here ({len(self.domains)} "
                             "domains are); the operator can add it with --allow-domain")
        try:
            return self.registry.manifest(domain)
        except DomainNotFound:
            raise LabelError(f"label: unknown domain {domain!r}") from None
        except ManifestError as exc:
            raise LabelError(f"label: domain {domain!r} cannot be used: {exc}") from None

    def _signed(self, domain: str, task: Task, sig: str, *, parsed: bool) -> Task:
        if self.key is None:
            raise LabelError("label: signed, but this server holds no label key to check it "
                             f"(set {KEY_ENV} or --label-key-file)")
        if not hmac.compare_digest(sig, sign(domain, _fields(task, parsed), self.key,
                                             parsed=parsed)):
            raise LabelError("label: forged: the signature does not match the label's task")
        return task

    def _regenerated(self, manifest: Manifest, task: Task, at: At | None, *,
                     parsed: bool) -> Task:
        """``task`` when it equals the one its domain generates at ``at``, else
        :class:`LabelError`."""
        domain = manifest.id
        if at is None:
            raise LabelError("label: unsigned and without coordinates ('at' or a "
                             "domain:split:seed:index task id), so the task cannot be re-derived")
        if manifest.data["determinism"] != "seeded":
            raise LabelError(f"label: domain {domain!r} is stochastic, so its tasks cannot be "
                             "re-derived; its labels must be signed (rlhub export "
                             "--label-key-file)")
        if self._regenerate(domain, at) != _digest(task, parsed=parsed):
            raise LabelError(f"label: forged: the task differs from the one {domain} generates at "
                             f"(split {at.split!r}, seed {at.seed}, index {at.index})")
        return task

    def _regenerate_uncached(self, domain: str, at: At) -> str:
        """The digest of the canonical JSON of ``domain``'s task at ``at``."""
        try:
            task = self.registry.get(domain).task(at.split, at.seed, at.index)
        except (ValueError, IndexError, KeyError) as exc:
            raise LabelError(f"label: {domain} has no task at {at.to_dict()}: {exc}") from None
        return _digest(task)


def _digest(task: Task, *, parsed: bool = False) -> str:
    """The sha256 of ``task``'s canonical JSON (``parsed``: see :func:`canonical`)."""
    return hashlib.sha256(canonical(_fields(task, parsed), parsed=parsed)).hexdigest()


def _fields(task: Task, parsed: bool) -> dict[str, Any]:
    """``task.to_dict()``; for a task parsed from JSON, its fields as they are: they hold only
    what JSON gives (dicts, lists, strings, numbers), which ``to_dict``'s deep copy would copy
    unchanged."""
    if not parsed:
        return task.to_dict()
    return {f.name: getattr(task, f.name) for f in _TASK_FIELDS}


_TASK_FIELDS = fields(Task)
