"""What keeps concurrent jobs of one sandbox worker apart: namespaces, memory cgroups, IPC cleanup.

The first part of the resident worker's source (``channel.worker_source`` joins it with
``seccomp.py`` and ``worker.py``): standard library only, run by the sandbox's own interpreter.

* :class:`SlotNamespaces`: one System V IPC namespace and (without the network opt-in) one network
  namespace per slot, made once when the worker starts. A slot's child enters them before it drops
  to the slot's uid, so concurrent jobs share no loopback, abstract unix socket or IPC object;
  after each job the worker removes whatever IPC objects it left and counts them.
* :class:`SlotMemory`: the per-slot memory cgroups the host made (v1 or v2); a job's total memory
  (every process, its work dir's tmpfs pages, its IPC objects, pipes and kernel memory) is bounded
  there, and an OOM kill anywhere in the job is seen.
* :func:`hide_other_processes`: ``/proc`` remounted with ``hidepid=invisible``, so a job sees its
  own processes only (no other job's pids, command lines or titles).
"""

import ctypes
import fcntl
import os
import socket
import struct

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWIPC, CLONE_NEWNET = 0x08000000, 0x40000000
NS_FLAGS = {"ipc": CLONE_NEWIPC, "net": CLONE_NEWNET}
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_REC, MS_PRIVATE = 2, 4, 8, 32, 16384, 1 << 18
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40
IPC_RMID = 0
# /proc/sysvipc file -> how to remove one object by id
IPC_KINDS = {
    "shm": lambda ident: libc.shmctl(ident, IPC_RMID, None),
    "msg": lambda ident: libc.msgctl(ident, IPC_RMID, None),
    "sem": lambda ident: libc.semctl(ident, 0, IPC_RMID),
}


def check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def hide_other_processes():
    """Remount this pid namespace's ``/proc`` so unprivileged uids see only their own processes."""
    flags = MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC
    return libc.mount(None, b"/proc", None, flags, b"hidepid=invisible") == 0


def loopback_up():
    """Bring up ``lo`` in the current network namespace (a new one starts with it down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        ifreq = struct.pack("16sH22x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING)
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, ifreq)


class SlotNamespaces:
    """Namespaces of ``kinds`` (``ipc``, ``net``) for each of ``count`` slots, held by fds."""

    def __init__(self, count, kinds):
        self.kinds = tuple(kinds)
        self.own = self._open()
        self.slots = []
        self.listings = []  # per slot, /proc/sysvipc files opened inside its IPC namespace
        try:
            for _ in range(count if self.kinds else 0):
                check(libc.unshare(sum(NS_FLAGS[k] for k in self.kinds)), "unshare")
                self.slots.append(self._open())
                if "ipc" in self.kinds:  # such a file lists the namespace it was opened in
                    self.listings.append(
                        {k: os.open(f"/proc/sysvipc/{k}", os.O_RDONLY) for k in IPC_KINDS})
                if "net" in self.kinds:
                    loopback_up()
        finally:
            self.enter(self.own)

    def _open(self):
        return {kind: os.open(f"/proc/self/ns/{kind}", os.O_RDONLY) for kind in self.kinds}

    @staticmethod
    def enter(fds):
        for kind, fd in fds.items():
            check(libc.setns(fd, NS_FLAGS[kind]), f"setns({kind})")

    def fds(self):
        return [fd for ns in (self.own, *self.slots) for fd in ns.values()]

    def clear_ipc(self, index):
        """Remove every System V IPC object in slot ``index``'s namespace; returns how many.

        Listing costs a read per kind; only when something is left does the worker enter the
        namespace to remove it."""
        if "ipc" not in self.kinds:
            return 0
        rows = {kind: ipc_ids(fd) for kind, fd in self.listings[index].items()}
        count = sum(map(len, rows.values()))
        if count:
            self.enter({"ipc": self.slots[index]["ipc"]})
            try:
                for kind, ids in rows.items():
                    for ident in ids:
                        IPC_KINDS[kind](ident)
            finally:
                self.enter({"ipc": self.own["ipc"]})
        return count


def ipc_ids(fd):
    """The ids in a /proc/sysvipc listing (read afresh from its start)."""
    data, offset = b"", 0
    while chunk := os.pread(fd, 1 << 16, offset):
        data += chunk
        offset += len(chunk)
    return [int(row.split()[1]) for row in data.splitlines()[1:] if row.strip()]


class SlotMemory:
    """The memory cgroups ``<root>/s<index>`` the host made for each slot (v1 or v2 files)."""

    FILES = {
        1: ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.oom_control"),
        2: ("memory.max", "memory.swap.max", "memory.events"),
    }

    def __init__(self, root, version, count):
        self.version = version
        limit, swap, events = self.FILES[version]
        self.limit = [self._open(root, i, limit, os.O_WRONLY) for i in range(count)]
        self.swap = [self._open(root, i, swap, os.O_WRONLY, optional=True) for i in range(count)]
        self.events = [self._open(root, i, events, os.O_RDONLY) for i in range(count)]
        self.current = [None] * count
        self.seen = [self.oom_kills(i) for i in range(count)]
        if version == 2:  # v2 counts swap on its own: none for jobs
            for fd in self.swap:
                if fd is not None:
                    os.write(fd, b"0")

    @staticmethod
    def _open(root, index, name, mode, optional=False):
        try:
            return os.open(f"{root}/s{index}/{name}", mode)
        except FileNotFoundError:
            if optional:  # no swap accounting on this kernel
                return None
            raise

    def set_limit(self, index, nbytes):
        """Bound slot ``index``'s total to ``nbytes`` (memory and, on v1, memory plus swap)."""
        if self.current[index] == nbytes:
            return
        data = b"%d" % nbytes
        grows = self.current[index] is not None and nbytes > self.current[index]  # else unlimited
        files = [self.limit[index]]
        if self.version == 1 and self.swap[index] is not None:  # memsw may never be below limit
            files = [self.swap[index], *files] if grows else [*files, self.swap[index]]
        self.current[index] = None  # unknown until every write went through
        for fd in files:
            os.pwrite(fd, data, 0)
        self.current[index] = nbytes

    def oom_killed(self, index):
        """Whether the OOM killer killed a process in slot ``index`` since the last call."""
        before, self.seen[index] = self.seen[index], self.oom_kills(index)
        return self.seen[index] > before

    def oom_kills(self, index):
        """How many processes the OOM killer has killed in slot ``index`` so far."""
        for line in os.pread(self.events[index], 4096, 0).splitlines():
            if line.startswith(b"oom_kill "):
                return int(line.split()[1])
        return 0
