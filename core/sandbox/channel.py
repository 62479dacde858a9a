"""The host side of the worker protocol, shared by every backend that runs ``worker.py``.

A :class:`Channel` owns one byte stream to one resident worker (pipes to a bubblewrap sandbox, a
unix socket into a container). It frames requests, matches results to futures by id on a reader
thread, and turns the worker's raw report into an :class:`~rlhub.sandbox.ExecResult` with one
status rule (:func:`classify`) for all backends. When the stream breaks, every pending job ends
as ``infra_error`` and the channel reports itself dead so its owner can replace the worker.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import asdict
from importlib import resources
from typing import Any

from rlhub.errors import SandboxError
from rlhub.sandbox import ExecRequest, ExecResult, Limits
from rlhub.sandbox.languages import Languages

MAX_STDIN = 256 << 20
COMPILE_MESSAGE_BYTES = 4096
GRACE_S = 30.0
# What worker.py gives every job on any backend (each backend adds its own isolation layers).
WORKER_PROTECTIONS = (
    "private_workdir",
    "per_job_uid",
    "rlimits",
    "wall_timeout",
    "output_caps",
    "clean_env",
    "process_cleanup",
    "seccomp",
)
# What keeps concurrent and successive jobs apart; each backend provides them its own way.
JOB_ISOLATION = (
    "minimal_runtime",
    "private_ipc",
    "private_sockets",
    "hidden_processes",
    "job_memory_limit",
    "job_disk_quota",
)
PROTECTION_NOTES = {
    "user_namespace": "the sandbox runs in a user namespace of its own",
    "pid_namespace": "jobs see and signal no process outside the sandbox",
    "mount_namespace": "the sandbox's file system view is its own",
    "network_namespace": "no network: jobs reach neither the host's loopback nor anything else",
    "ipc_namespace": "the sandbox has an IPC namespace of its own",
    "readonly_root": "everything outside the work dir is read-only",
    "no_nested_userns": "jobs cannot create user namespaces",
    "private_workdir": "each job has a fresh work dir no other job can read",
    "per_job_uid": "each running job has a uid no other job has (signals, /proc, NPROC)",
    "rlimits": "cpu, address space, processes, file size and open files are limited per job",
    "wall_timeout": "a job is killed at its wall-clock limit",
    "output_caps": "stdout and stderr are capped",
    "clean_env": "jobs get a fixed environment, never the host's",
    "process_cleanup": "every process a job starts dies with it (setsid and double forks too)",
    "seccomp": "a filter denies syscalls that widen the kernel's attack surface",
    "minimal_runtime": "jobs see a read-only runtime (interpreter, its standard library, tools, "
                       "declared libraries) and their work dir; no home, project, virtualenv, "
                       "$RLHUB_HOME, dataset or plugin source",
    "private_ipc": "System V IPC and POSIX queues are the job's own (or denied); what a job "
                   "leaves is removed and counted in leftovers",
    "private_sockets": "no loopback, abstract unix socket or netlink channel between jobs",
    "hidden_processes": "a job sees only its own processes in /proc",
    "job_memory_limit": "memory_mb bounds the job's total (all its processes, files, IPC) through "
                        "a memory cgroup per slot",
    "job_disk_quota": "a job's files live in a filesystem of their own of disk_mb",
    "memory_cgroup": "the container's memory is bounded",
    "pids_cgroup": "the container's processes are bounded",
    "capabilities_dropped": "the container holds only the capabilities the worker needs",
    "no_new_privileges": "no process in the container gains privileges by exec",
}
# Modules a worker's zygote imports once, so jobs find them ready: importing them in a fresh job
# costs 1-5 ms (typing alone ~3 ms), a preloaded one nothing (each job still gets its own
# copy-on-write state). What solutions and the verifiers' harnesses import most, kept small
# because every job's fork and exit pay for the zygote's size (this set adds ~1.3 MB).
PRELOAD = (
    "ast", "bisect", "collections", "copy", "functools", "heapq", "itertools", "math",
    "operator", "random", "re", "string", "textwrap", "typing",
)
WARM_PROGRAMS: list[str] = []
WARM_BUDGET = 64 << 10  # they travel in a worker's start-up arguments (128 KiB per argument)


def warm_program(source: str) -> bool:
    """Have workers started from now on compile the Python job ``source`` once, so a program sent
    with every job (a verifier's harness) skips its compile (~2 ms for 300 lines) each time.

    Returns False, and changes nothing, once the warm programs would pass ``WARM_BUDGET``
    characters: such a job then compiles in the job, as any other does."""
    if source in WARM_PROGRAMS:
        return True
    if sum(map(len, WARM_PROGRAMS)) + len(source) > WARM_BUDGET:
        return False
    WARM_PROGRAMS.append(source)
    return True


WORKER_PARTS = ("isolation.py", "seccomp.py", "zygote.py", "worker.py")


def worker_source() -> str:
    """The resident worker's source, passed to ``python3 -c`` wherever a worker starts: its
    parts joined in order (each imports the earlier ones only when loaded as a module)."""
    package = resources.files("rlhub.sandbox")
    return "\n".join(package.joinpath(part).read_text() for part in WORKER_PARTS)


def validate(request: ExecRequest, languages: Languages, available: Iterable[str],
             disk_mb: int) -> None:
    """Raise :class:`SandboxError` when ``request`` cannot run on a backend whose registered
    ``languages`` have toolchains for ``available``, and whose jobs' work dirs hold ``disk_mb``."""
    spec = languages.get(request.language)
    available = list(available)
    if request.language not in available:
        raise SandboxError(
            f"language {request.language!r} is not available on this backend "
            f"(available: {available}); install its toolchain to use it "
            f"(Debian packages: {' '.join(spec.packages) or 'none declared'})"
        )
    for name in request.files:
        parts = name.split("/")
        if not name or name.startswith("/") or ".." in parts or "" in parts:
            raise SandboxError(
                f"files: expected relative paths inside the work dir, found {name!r}"
            )
        if name in spec.own_files():
            raise SandboxError(
                f"files: {name!r} is where the job's own {request.language} code goes; "
                "expected another name"
            )
    limits = request.limits
    for key in ("wall_s", "cpu_s", "memory_mb", "output_bytes", "processes", "disk_mb",
                "compile_wall_s", "compile_cpu_s", "compile_memory_mb"):
        if getattr(limits, key) <= 0:
            raise SandboxError(
                f"limits.{key}: expected a positive number, found {getattr(limits, key)}"
            )
    if limits.disk_mb > disk_mb:
        raise SandboxError(
            f"limits.disk_mb: expected at most {disk_mb} (the work dir this backend gives each "
            f"job), found {limits.disk_mb}; start the backend with disk_mb={limits.disk_mb}"
        )


def answer_within(request: ExecRequest) -> float:
    """How long a caller waits for a job's result before calling its worker unresponsive: its
    wall limit, its compile step's, and a grace period."""
    return request.limits.wall_s + request.limits.compile_wall_s + GRACE_S


def encode(job_id: int, request: ExecRequest, languages: Languages,
           views: dict[str, str] | None = None) -> bytes:
    """One request frame: header, then the job blob and the stdin blob. The job blob carries
    the language's plan (what to write, compile and run); ``views`` maps a language to the root
    its jobs are shut in (the local backend's runtimes)."""
    spec = languages.get(request.language)
    plan = spec.plan(request.code, request.limits.memory_mb)
    meta = json.dumps(
        {"code": request.code, "files": request.files, "argv": request.argv, "env": request.env,
         "plan": plan},
        ensure_ascii=False,
    ).encode("utf-8", "surrogateescape")
    stdin = (
        request.stdin
        if isinstance(request.stdin, bytes)
        else request.stdin.encode("utf-8", "surrogateescape")
    )
    if len(stdin) > MAX_STDIN:
        raise SandboxError(f"stdin: expected at most {MAX_STDIN} bytes, found {len(stdin)}")
    header = json.dumps(
        {
            "id": job_id,
            "lang": request.language,
            "limits": asdict(request.limits),
            "compiled": spec.compiled,
            "watch": not spec.in_process,  # the worker reads its child's messages
            "view": (views or {}).get(request.language),
            "memory_words": list(spec.memory_words),
            "meta_len": len(meta),
            "stdin_len": len(stdin),
        }
    ).encode()
    return len(header).to_bytes(4, "big") + header + meta + stdin


def classify(report: dict[str, Any], limits: Limits) -> str:
    """The one status rule: what the worker saw, mapped onto :data:`~rlhub.sandbox.STATUSES`."""
    if not report["dispatched"]:
        return "infra_error"
    if report.get("compile_error"):
        return "compile_error"
    if report["timed_out"]:
        return "timeout"
    if report["over"]:
        return "output_limit"
    sig, code = report["signal"], report["exit_code"]
    cpu_limit = max(1, int(limits.cpu_s + 0.999))
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and report["cpu_s"] >= cpu_limit - 0.05):
        return "timeout"
    if report.get("oom") or code != 0 and (
        report["memory_words"]
        or (
            sig in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS)
            and report["max_rss_mb"] >= 0.9 * limits.memory_mb
        )
    ):
        return "memory"
    if sig:
        return "killed"
    return "ok" if code == 0 else "error"


def to_result(
    report: dict[str, Any], out: bytes, err: bytes, limits: Limits, backend: str, missing: list[str]
) -> ExecResult:
    status = classify(report, limits)
    detail = ""
    if status == "compile_error":
        detail, err = "compile error", trim(err)
    if status == "infra_error":
        detail = report.get("why") or "the worker could not start the job"
    return ExecResult(
        status,
        report["exit_code"],
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        round(report["wall_s"], 6),
        round(report["cpu_s"], 6),
        round(report["max_rss_mb"], 3),
        backend,
        list(missing),
        detail,
        leftovers=report["leftovers"],
        compile_s=round(report.get("compile_s", 0.0), 6),
    )


def trim(message: bytes, head: int = COMPILE_MESSAGE_BYTES) -> bytes:
    """A compiler's message cut to its first ``head`` bytes (the first errors are the ones that
    matter), saying how much was left out."""
    if len(message) <= head:
        return message
    cut = message[:head].rsplit(b"\n", 1)[0]
    return cut + b"\n[... %d more bytes of compiler output]\n" % (len(message) - len(cut))


def infra_error(backend: str, missing: list[str], why: str) -> ExecResult:
    return ExecResult(
        "infra_error", None, "", "", 0.0, backend=backend, missing=list(missing), detail=why
    )


class Channel:
    """Framed request/response stream to one worker; see the module docstring."""

    def __init__(
        self,
        rfd: int,
        wfd: int,
        backend: str,
        missing: list[str],
        on_close: Callable[[], None] | None = None,
        languages: Languages | None = None,
        views: dict[str, str] | None = None,
    ):
        from rlhub.sandbox.languages import builtin

        self.rfd, self.wfd = rfd, wfd
        self.languages, self.views = languages or builtin(), views or {}
        self.backend, self.missing = backend, missing
        self.on_close = on_close
        self.pending: dict[int, tuple[Future[ExecResult], Limits]] = {}
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.alive = True
        try:
            self.ready = self._read_header()
        except (OSError, EOFError, ValueError) as exc:
            raise SandboxError(f"sandbox worker: expected a ready message, found none: {exc}") from exc
        if self.ready.get("op") != "ready":
            raise SandboxError(f"sandbox worker: expected a ready message, found {self.ready}")
        self.reader = threading.Thread(
            target=self._read_loop, name=f"rlhub-{backend}-reader", daemon=True
        )
        self.reader.start()

    def load(self) -> int:
        return len(self.pending)

    def submit(self, request: ExecRequest) -> Future[ExecResult]:
        future: Future[ExecResult] = Future()
        with self.lock:
            if not self.alive:
                raise SandboxError(f"{self.backend} sandbox worker is gone")
            job_id = next(self.ids)
            frame = encode(job_id, request, self.languages, self.views)
            self.pending[job_id] = (future, request.limits)
            try:
                write_all(self.wfd, frame)
            except OSError as exc:
                self.pending.pop(job_id, None)
                self.alive = False
                raise SandboxError(f"{self.backend} sandbox worker stopped reading: {exc}") from exc
        return future

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = os.read(self.rfd, min(n, 1 << 20))
            if not chunk:
                raise EOFError("the sandbox worker closed its output")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _read_header(self) -> dict[str, Any]:
        size = int.from_bytes(self._read_exact(4), "big")
        return json.loads(self._read_exact(size))

    def _read_loop(self) -> None:
        try:
            while True:
                report = self._read_header()
                out = self._read_exact(report["out_len"]) if report.get("out_len") else b""
                err = self._read_exact(report["err_len"]) if report.get("err_len") else b""
                entry = self.pending.pop(report.get("id"), None)
                if entry is not None:
                    future, limits = entry
                    future.set_result(
                        to_result(report, out, err, limits, self.backend, self.missing)
                    )
        except (OSError, EOFError, ValueError) as exc:
            self._fail_all(f"the sandbox worker died: {exc}")

    def _fail_all(self, why: str) -> None:
        with self.lock:
            self.alive = False
            pending, self.pending = self.pending, {}
        for future, _ in pending.values():
            future.set_result(infra_error(self.backend, self.missing, why))
        if self.on_close is not None:
            self.on_close()


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
