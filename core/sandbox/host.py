"""What this machine offers the sandbox backends: bubblewrap, root, cgroups, interpreters, tools,
and exclusive host uid ranges for slot uids (:class:`UidLease`)."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rlhub.errors import SandboxError
from rlhub.sandbox.cgroups import CgroupSupport
from rlhub.sandbox.cgroups import detect as detect_cgroups
from rlhub.sandbox.runtime import outside_runtime

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
UID_RANGE_BASE, UID_RANGE_SIZE, UIDS_PER_WORKER = 1_000_000, 1 << 16, 4096
SLOT_UID = 1000


def world_executable(path: str) -> bool:
    """True when an unprivileged uid can reach and execute ``path`` (every parent traversable)."""
    real = Path(os.path.realpath(path))
    if not real.exists() or not real.stat().st_mode & stat.S_IXOTH:
        return False
    return all(p.stat().st_mode & stat.S_IXOTH for p in real.parents)


def find_tool(name: str, need_world: bool) -> str | None:
    path = shutil.which(name, path=SAFE_PATH)
    if path and (not need_world or world_executable(path)):
        return path
    return None


@dataclass
class HostSupport:
    """What this machine offers the backend: bubblewrap, root, cgroups, an interpreter, tools."""

    bwrap: str | None
    root: bool
    python: str
    tools: dict[str, str] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)
    cgroups: CgroupSupport = field(default_factory=lambda: CgroupSupport(None, None, "unprobed"))

    @property
    def mode(self) -> str:
        return ("bwrap" if self.bwrap else "host") + ("" if self.root else "-unprivileged")

    @property
    def views(self) -> bool:
        """Whether each job can be shut in its language's own runtime (a mount namespace per
        job, made as root in the sandbox's user namespace)."""
        return bool(self.bwrap and self.root)

    def has_tools(self, names: tuple[str, ...]) -> bool:
        """Whether every one of ``names`` runs here (on the safe PATH, inside the runtime)."""
        need_world = bool(self.bwrap and self.root)
        for name in names:
            path = find_tool(name, need_world)
            if path is None or (self.bwrap and outside_runtime({name: path})):
                return False
        return True


def detect(python: str | None = None) -> HostSupport:
    """Probe the machine once: which sandboxing mode and which languages are possible."""
    root = os.geteuid() == 0
    bwrap = shutil.which("bwrap", path=SAFE_PATH)
    why = {}
    if bwrap is None:
        why["namespaces"] = "bubblewrap is not installed (apt-get install -y bubblewrap)"
    if not root:
        why["per_job_uid"] = "the backend is not running as root, so it cannot map slot uids"
    need_world = bwrap is not None and root
    interpreter = find_interpreter(python, need_world, bwrap is not None)
    tools = {name: path for name in ("sh",) if (path := find_tool(name, need_world))}
    if bwrap:  # a job sees the runtime directories only
        for name, path in outside_runtime(tools).items():
            why[f"tool {name}"] = f"{path} is outside the sandbox runtime (/usr), so jobs lack it"
            del tools[name]
    if "sh" not in tools:
        raise SandboxError(f"local sandbox: expected /bin/sh on PATH ({SAFE_PATH}), found none")
    cgroups = detect_cgroups()
    if cgroups.version is None:
        why["job_memory_limit"] = (f"{cgroups.why}; memory_mb bounds each process's address "
                                   "space instead, so a job's total is memory_mb x processes")
    return HostSupport(bwrap, root, interpreter, tools, why, cgroups)


def find_interpreter(python: str | None, need_world: bool, bwrap: bool) -> str:
    candidates = [python] if python else ["/usr/bin/python3.11", "/usr/bin/python3", sys.executable]
    for candidate in candidates:
        if not candidate or not os.path.isabs(candidate) or not os.path.exists(candidate):
            continue
        if need_world and not world_executable(candidate):
            continue
        if bwrap and outside_runtime({"python": candidate}):
            continue
        return candidate
    raise SandboxError(
        f"local sandbox: expected a Python interpreter an unprivileged uid can run from the "
        f"system runtime (/usr), found none of {candidates}; pass python=PATH"
    )


class UidLease:
    """An exclusive host uid range of at least ``size`` uids, held by lock files while it lives.

    The range is made of consecutive blocks of ``UID_RANGE_SIZE`` uids, one lock file each, so
    backends of any size on one machine never share a uid (a shared uid would let one instance's
    jobs signal another's, and share their RLIMIT_NPROC)."""

    def __init__(self, size: int = UID_RANGE_SIZE, directory: str = "/tmp/rlhub-sandbox-uids"):
        os.makedirs(directory, mode=0o755, exist_ok=True)
        blocks = max(1, -(-size // UID_RANGE_SIZE))
        for index in range(4096 - blocks + 1):
            fds = self._lock_all(directory, range(index, index + blocks))
            if fds:
                self.fds, self.base = fds, UID_RANGE_BASE + index * UID_RANGE_SIZE
                return
        raise SandboxError(f"local sandbox: no {blocks} free consecutive uid ranges under "
                           f"{directory}")

    @staticmethod
    def _lock_all(directory: str, indices: range) -> list[int]:
        fds: list[int] = []
        for index in indices:
            fd = os.open(f"{directory}/{index}.lock", os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                for held in fds:
                    os.close(held)
                return []
            fds.append(fd)
        return fds

    def release(self) -> None:
        for fd in self.fds:
            os.close(fd)


class UidBlocks:
    """Blocks of ``UIDS_PER_WORKER`` uids in a lease, taken by live workers and given back."""

    def __init__(self, count: int):
        self.lease = UidLease(count * UIDS_PER_WORKER)
        self.free = list(range(count))
        self.lock = threading.Lock()

    def take(self) -> int:
        with self.lock:
            if not self.free:
                raise SandboxError(
                    "sandbox: every uid block is held by a live or draining worker; expected one "
                    "free (workers are replaced faster than they drain, or too many runtimes)")
            return self.free.pop(0)

    def give_back(self, block: int) -> None:
        with self.lock:
            self.free.append(block)

    def base(self, block: int) -> int:
        return self.lease.base + block * UIDS_PER_WORKER

    def release(self) -> None:
        self.lease.release()
