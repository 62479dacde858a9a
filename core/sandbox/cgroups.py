"""Memory cgroups for sandbox jobs, made on the host and handed to each worker: one per slot.

``memory_mb`` bounds a job's total (every process it starts, its work dir's tmpfs pages, its IPC
objects, pipes and kernel memory) through the memory cgroup of the slot it runs in::

    <parent>/rlhub-sandbox-<pid>-<n>/<group>/s<k>      one group per worker or container

A group is owned by the uid its worker runs as and is mode 0700, so the worker sets limits and
its children join their slot before they drop to the slot's uid, and jobs can reach none of it.

cgroup v1: ``<parent>`` is this process's own cgroup in the ``memory`` hierarchy, so whatever
bounds rlhub bounds its jobs too. cgroup v2: a cgroup with processes cannot enable controllers for
children, so ``<parent>`` is the cgroup *above* ours, used when it enables memory for its children
(a delegated cgroup, e.g. a systemd scope with ``Delegate=yes`` running rlhub in a leaf); rlhub
never changes its cgroups' settings. A process may move only between cgroups whose common
ancestor's ``cgroup.procs`` it may write, so under v2 the worker itself is put in
``<group>/worker`` and the group's ``cgroup.procs`` is given to it. (This machine's kernel binds
memory to v1, so the v2 path is written to the kernel's rules but not exercised by the suite.)
:func:`detect` says why when neither is usable; the backends then list ``job_memory_limit`` as
missing and ``memory_mb`` falls back to a per-process address-space limit (a job's total is then
bounded by ``memory_mb`` times its process limit).
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

# Per version: files the worker writes or reads in each slot (chowned to it), and the file its
# children write themselves into: under v1 ``tasks``, because a thread moving itself alone skips
# the kernel's global threadgroup lock, whose writer waits an RCU grace period and meanwhile stalls
# every fork and exit on the machine (a job's child is single-threaded then, so it moves whole);
# v2 moves a process into a domain cgroup only through ``cgroup.procs``.
SLOT_FILES = {
    1: ("tasks", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
    2: ("cgroup.procs", "memory.max", "memory.swap.max"),
}
PREFIX = "rlhub-sandbox-"
_counter = itertools.count(1)


@dataclass
class CgroupSupport:
    """Where this process's memory cgroup is (``version`` 1 or 2), or why none is usable."""

    version: int | None
    parent: Path | None
    why: str = ""


def mounts() -> list[tuple[str, str, str, str]]:
    """``(root, mount point, fs type, super options)`` of every mount (from mountinfo)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rest = left.split(), right.split()
            if len(fields) >= 5 and len(rest) >= 3:
                out.append((fields[3], fields[4], rest[0], rest[2]))
    return out


def own_cgroups() -> dict[str, str]:
    """This process's cgroup path per v1 controller list, and ``""`` for the v2 tree."""
    paths = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            paths[controllers] = path
    return paths


def detect() -> CgroupSupport:
    """Find a memory cgroup tree this process may build job cgroups in."""
    if os.geteuid() != 0:
        return CgroupSupport(None, None, "not running as root, so it cannot create cgroups")
    own = own_cgroups()
    for root, point, fstype, opts in mounts():
        if fstype == "cgroup" and "memory" in opts.split(","):
            path = next((p for c, p in own.items() if "memory" in c.split(",")), None)
            if path is not None and path.startswith(root):
                return usable(CgroupSupport(1, inside(point, root, path)))
    for root, point, fstype, _ in mounts():
        if fstype == "cgroup2" and "" in own and own[""].startswith(root):
            parent = inside(point, root, os.path.dirname(own[""].rstrip("/")) or "/")
            if "memory" in read(parent / "cgroup.controllers").split():
                return usable(delegated(CgroupSupport(2, parent)))
    return CgroupSupport(None, None, "no cgroup hierarchy with the memory controller is mounted "
                                     "for this process (v1 memory or v2 with memory enabled)")


def inside(point: str, root: str, path: str) -> Path:
    """Where cgroup ``path`` is, in a hierarchy whose ``root`` is mounted at ``point``."""
    return Path(point) / os.path.relpath(path, root)


def read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def delegated(support: CgroupSupport) -> CgroupSupport:
    """Under v2, child cgroups get the memory controller only where their parent enables it."""
    assert support.parent is not None
    if "memory" in read(support.parent / "cgroup.subtree_control").split():
        return support
    return CgroupSupport(None, None, f"cgroup v2: {support.parent} does not enable the memory "
                                     "controller for its children (cgroup.subtree_control); run "
                                     "rlhub in a leaf of a cgroup that delegates memory (e.g. a "
                                     "systemd scope with Delegate=yes)")


def usable(support: CgroupSupport) -> CgroupSupport:
    if support.parent is None or not os.access(support.parent, os.W_OK):
        return CgroupSupport(None, None, f"cannot create cgroups in {support.parent}")
    return support


class JobCgroups:
    """One backend instance's tree: ``<parent>/rlhub-sandbox-<pid>-<n>``, with its groups."""

    def __init__(self, support: CgroupSupport):
        assert support.version is not None and support.parent is not None
        self.version, self.parent = support.version, support.parent
        remove_stale(self.parent)
        self.root = self.parent / f"{PREFIX}{os.getpid()}-{next(_counter)}"
        self.root.mkdir()
        self.enable(self.root)

    def enable(self, path: Path) -> None:
        if self.version == 2:
            (path / "cgroup.subtree_control").write_text("+memory")

    def group(self, name: str, slots: int, owner: int) -> Path:
        """Make ``<root>/<name>`` with a cgroup per slot, handed to uid ``owner``; its path."""
        path = self.root / name
        path.mkdir()
        self.enable(path)
        for index in range(slots):
            (path / f"s{index}").mkdir()
            for name in SLOT_FILES[self.version]:
                if (path / f"s{index}" / name).exists():
                    os.chown(path / f"s{index}" / name, owner, owner)
        if self.version == 2:
            (path / "worker").mkdir()
            os.chown(path / "cgroup.procs", owner, owner)
        os.chown(path, owner, owner)
        path.chmod(0o700)
        return path

    def adopt(self, group: Path, pids: list[int]) -> None:
        """Under v2, move a worker's first processes into its group (see module docstring)."""
        if self.version == 2:
            for pid in pids:
                (group / "worker" / "cgroup.procs").write_text(str(pid))

    def remove_group(self, group: Path) -> None:
        remove_tree(group)

    def close(self) -> None:
        remove_tree(self.root)


def remove_tree(path: Path, wait_s: float = 5.0) -> None:
    """rmdir a cgroup tree bottom-up, waiting a little for its last processes to be gone."""
    deadline = time.monotonic() + wait_s
    for dirpath, _, _ in sorted(os.walk(path), key=lambda entry: -len(entry[0])):
        while True:
            try:
                os.rmdir(dirpath)
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)


def remove_stale(parent: Path) -> None:
    """Remove trees left by backends whose process died without closing them."""
    for entry in parent.glob(f"{PREFIX}*"):
        pid = entry.name[len(PREFIX):].split("-")[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            remove_tree(entry, wait_s=0.0)

