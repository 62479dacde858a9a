"""Sandboxed code execution: one request/result API over several backends.

A backend's ``run(request)`` executes one :class:`ExecRequest` and returns an
:class:`ExecResult`; ``run_batch(requests)`` is the async batch form. Backends are named by the
``rlhub_sandbox_backends`` hook, each started once per registry (:class:`Sandboxes`, reached as
``registry.services.sandbox(name)``); ``local`` is the embedded default.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from rlhub.errors import SandboxError, did_you_mean

STATUSES = ("ok", "error", "compile_error", "timeout", "memory", "output_limit", "killed",
            "infra_error")


@dataclass
class Limits:
    """Per-job limits. ``memory_mb`` bounds the memory of the whole job (every process it starts,
    its pipes and IPC objects; its work dir's files, up to ``disk_mb``, come on top) where the
    backend has a memory cgroup per job, and each process's address space always (see
    ``missing``); ``output_bytes`` caps stdout and stderr each;
    ``disk_mb`` caps the work dir's files (and any one file's size); ``network`` opts the job
    into the host's network. A compiled language's compile step is a phase of its own with its
    own budget (``compile_wall_s``, ``compile_cpu_s``, ``compile_memory_mb``); the run's limits
    start when it ends."""

    wall_s: float = 10.0
    cpu_s: float = 10.0
    memory_mb: int = 512
    output_bytes: int = 1 << 20
    processes: int = 64
    network: bool = False
    disk_mb: int = 64
    compile_wall_s: float = 60.0
    compile_cpu_s: float = 60.0
    compile_memory_mb: int = 2048

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Limits:
        data = data or {}
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise SandboxError(
                f"limits: expected keys {sorted(cls.__dataclass_fields__)}, "
                f"found unknown {sorted(unknown)}"
            )
        return cls(**data)


@dataclass
class ExecRequest:
    """One job: a program in ``language`` (``code``), extra ``files``, ``argv``, ``stdin``
    (text, or bytes for binary input), ``env`` entries added to the sandbox's clean env, and the
    ``libraries`` (installed distributions) it may import beyond the standard library."""

    code: str
    language: str = "python"
    files: dict[str, str] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)
    stdin: str | bytes = ""
    limits: Limits = field(default_factory=Limits)
    env: dict[str, str] = field(default_factory=dict)
    libraries: list[str] = field(default_factory=list)


@dataclass
class ExecResult:
    """What a job did. ``missing`` names every protection that was not in force for it;
    ``leftovers`` counts what the job left behind that the sandbox removed after it: processes
    still running and System V IPC objects. For a compiled language, ``compile_s`` is the compile
    phase's wall time (``wall_s`` and ``cpu_s`` are the run's); a failed compile is status
    ``compile_error`` with the compiler's message, trimmed, as ``stderr``."""

    status: str
    exit_code: int | None
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float = 0.0
    max_rss_mb: float = 0.0
    backend: str = ""
    missing: list[str] = field(default_factory=list)
    detail: str = ""
    leftovers: int = 0
    compile_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Backend(Protocol):
    """What a sandbox backend provides (see ``rlhub_sandbox_backends``)."""

    name: str

    def run(self, request: ExecRequest) -> ExecResult: ...

    async def run_batch(self, requests: Sequence[ExecRequest]) -> list[ExecResult]: ...

    def info(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def default_backend_name() -> str:
    return os.environ.get("RLHUB_SANDBOX", "local")


class Sandboxes:
    """The sandbox backends of one registry, by name, each started once on first use.

    ``make(name, options)`` builds a backend (the registry asks its plugins)
    and ``names()`` lists the names that can be built. ``default`` is the backend used when a
    request names none: a name, a :class:`Backend` object (a test double, say), or None for
    ``$RLHUB_SANDBOX`` (read at use), else ``local``. Backends started here stop on :meth:`close`.
    """

    def __init__(self, make: Callable[[str, dict[str, Any]], Backend | None],
                 names: Callable[[], list[str]], default: str | Backend | None = None):
        self._make, self._names = make, names
        self._started: dict[str, Backend] = {}
        self._lock = threading.Lock()
        self.default: str | None = None
        if isinstance(default, str) or default is None:
            self.default = default
        else:
            self.default = default.name
            self._started[default.name] = default

    def names(self) -> list[str]:
        """Every backend name that can be started, sorted."""
        return sorted({*self._names(), *self._started})

    def get(self, name: str | None = None, **options: Any) -> Backend:
        """The backend ``name`` (default: see the class docstring), started on first use with
        ``options``; an unknown name raises :class:`SandboxError` with a did-you-mean."""
        name = name or self.default or default_backend_name()
        with self._lock:
            if name not in self._started:
                backend = self._make(name, options)
                if backend is None:
                    raise SandboxError(did_you_mean(name, self.names(), what="sandbox backend",
                                                    listing="rlhub sandbox info"))
                self._started[name] = backend
            return self._started[name]

    def run(self, request: ExecRequest, name: str | None = None) -> ExecResult:
        """Run one job; an infrastructure failure comes back as ``infra_error``."""
        try:
            return self.get(name).run(request)
        except SandboxError as exc:
            return ExecResult("infra_error", None, "", "", 0.0, detail=str(exc))

    async def run_batch(self, requests: Sequence[ExecRequest],
                        name: str | None = None) -> list[ExecResult]:
        """Run many jobs concurrently, results in request order."""
        return await self.get(name).run_batch(requests)

    def close(self) -> None:
        """Stop every backend started here (pools, containers, actors)."""
        with self._lock:
            started, self._started = list(self._started.values()), {}
        for backend in started:
            backend.close()
