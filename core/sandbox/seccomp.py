"""The seccomp filter every job runs under (part of the resident worker's source, after
``isolation.py``; standard library only).

It denies, with EPERM, the syscalls in :data:`DENIED_SYSCALLS` (module loading, kexec, BPF,
io_uring, userfaultfd, keyrings, ptrace and cross-process memory, mounts and namespaces, clocks,
swap, reboot) and POSIX message queues. Two settings follow where the job runs:

* ``sockets``: the families ``socket()`` may open. ``all`` (unix, IPv4, IPv6, netlink) where each
  slot has its own network namespace; ``ip`` (IPv4, IPv6) for jobs that share the host's network
  on purpose; ``none`` where jobs share one network namespace (a container). Outside ``all``,
  ``socketpair()`` gives only connected unix stream or seqpacket pairs, so no job can bind an
  abstract unix address another job could reach. Other families (vsock, packet, alg, ...) never.
* ``sysv_ipc``: System V shared memory, semaphores and message queues, allowed only where each
  slot has its own IPC namespace (which the worker empties after every job) and a memory cgroup
  (which bounds what the objects hold).

A syscall through a foreign ABI (i386 ``int 0x80`` on x86_64) kills the process; x32 calls are
denied like the listed ones.
"""

import ctypes
import errno
import os

try:  # importable as a module; in the worker's source isolation.py is inlined ahead of this
    from rlhub.sandbox.isolation import libc
except ImportError:
    pass

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
# (x86_64, aarch64) numbers; None where the architecture has no such call.
DENIED_SYSCALLS = {
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "kcmp": (312, 272), "syslog": (103, 116), "acct": (163, 89), "settimeofday": (164, 170),
    "clock_settime": (227, 112), "clock_adjtime": (305, 266), "adjtimex": (159, 171),
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "chroot": (161, 51),
    "open_tree": (428, 428), "move_mount": (429, 429), "fsopen": (430, 430),
    "fsconfig": (431, 431), "fsmount": (432, 432), "fspick": (433, 433),
    "mount_setattr": (442, 442), "unshare": (272, 97), "setns": (308, 268),
    "swapon": (167, 224), "swapoff": (168, 225), "reboot": (169, 142),
    "sethostname": (170, 161), "setdomainname": (171, 162), "vhangup": (153, 58),
    "init_module": (175, 105), "finit_module": (313, 273), "delete_module": (176, 106),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294), "quotactl": (179, 60),
    "lookup_dcookie": (212, 18), "add_key": (248, 217), "request_key": (249, 218),
    "keyctl": (250, 219), "perf_event_open": (298, 241), "fanotify_init": (300, 262),
    "name_to_handle_at": (303, 264), "open_by_handle_at": (304, 265), "bpf": (321, 280),
    "userfaultfd": (323, 282), "io_uring_setup": (425, 425), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427), "iopl": (172, None), "ioperm": (173, None),
    "modify_ldt": (154, None), "uselib": (134, None), "_sysctl": (156, None),
    "mq_open": (240, 180), "mq_unlink": (241, 181), "mq_timedsend": (242, 182),
    "mq_timedreceive": (243, 183), "mq_notify": (244, 184), "mq_getsetattr": (245, 185),
}
SYSV_IPC_SYSCALLS = {
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
}
SOCKET, SOCKETPAIR = (41, 198), (53, 199)
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_SEQPACKET, SOCK_TYPE_MASK = 1, 5, 0xF
SOCKET_FAMILIES = {
    "all": (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK),
    "ip": (AF_INET, AF_INET6),
    "none": (),
}
# classic BPF: BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_ALU|AND|K, BPF_RET|K
LD, JEQ, JGE, AND, RET = 0x20, 0x15, 0x35, 0x54, 0x06
ALLOW, KILL = 0x7FFF0000, 0x80000000
DENY, NO_FAMILY = 0x00050000 | errno.EPERM, 0x00050000 | errno.EAFNOSUPPORT
ARG0, ARG1 = 16, 24  # offsets of the low 32 bits of args[0], args[1] in seccomp_data


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]


def assemble(program):
    """Instructions ``(code, jt, jf, k)`` whose jump targets may be label names, with
    ``("label", name)`` markers between them, as BPF tuples with relative jumps."""
    labels, position = {}, 0
    for ins in program:
        if ins[0] == "label":
            labels[ins[1]] = position
        else:
            position += 1
    out = []
    for ins in program:
        if ins[0] == "label":
            continue
        code, jt, jf, k = ins
        here = len(out) + 1
        jt, jf = (labels[j] - here if isinstance(j, str) else j for j in (jt, jf))
        if not (0 <= jt <= 255 and 0 <= jf <= 255):
            raise ValueError(f"seccomp: a jump does not fit in 8 bits: {ins}")
        out.append((code, jt, jf, k))
    return out


def search(numbers, hit, miss, name="n"):
    """Jump to ``hit`` when the accumulator is one of the sorted ``numbers``, else to ``miss``:
    a binary search, so a syscall passes the filter in a dozen instructions, and the kernel's
    cache of always-allowed syscalls (built by running the filter once per syscall when it is
    installed, in every job) costs a few microseconds instead of a tenth of a millisecond."""
    if len(numbers) <= 3:
        return [("label", name)] + [(JEQ, hit, 0, n) for n in numbers[:-1]] + [
            (JEQ, hit, miss, numbers[-1])]
    half = len(numbers) // 2
    return ([("label", name), (JGE, f"{name}r", 0, numbers[half])]
            + search(numbers[:half], hit, miss, f"{name}l")
            + search(numbers[half:], hit, miss, f"{name}r"))


def filter_code(machine, sockets="all", sysv_ipc=True):
    """The filter for ``machine`` (a key of :data:`AUDIT_ARCH`) as BPF tuples."""
    column = 0 if machine == "x86_64" else 1
    denied = dict(DENIED_SYSCALLS, **({} if sysv_ipc else SYSV_IPC_SYSCALLS))
    numbers = sorted({nrs[column] for nrs in denied.values() if nrs[column] is not None})
    code = [(LD, 0, 0, 4), (JEQ, 1, 0, AUDIT_ARCH[machine]), (RET, 0, 0, KILL), (LD, 0, 0, 0)]
    if machine == "x86_64":
        code.append((JGE, "deny", 0, 0x40000000))  # the x32 ABI
    code += search(numbers, "deny", "listed")
    code += [("label", "listed")]
    if sockets == "all":
        code += [(JEQ, "socket", "allow", SOCKET[column])]
    else:
        code += [(JEQ, "socket", 0, SOCKET[column]),
                 (JEQ, "socketpair", "allow", SOCKETPAIR[column])]
    code += [("label", "socket"), (LD, 0, 0, ARG0)]
    code += [(JEQ, "allow", 0, family) for family in SOCKET_FAMILIES[sockets]]
    code += [(RET, 0, 0, NO_FAMILY)]
    code += [("label", "socketpair"), (LD, 0, 0, ARG0), (JEQ, 0, "deny", AF_UNIX),
             (LD, 0, 0, ARG1), (AND, 0, 0, SOCK_TYPE_MASK),
             (JEQ, "allow", 0, SOCK_STREAM), (JEQ, "allow", "deny", SOCK_SEQPACKET)]
    code += [("label", "allow"), (RET, 0, 0, ALLOW), ("label", "deny"), (RET, 0, 0, DENY)]
    return assemble(code)


def seccomp_program(sockets="all", sysv_ipc=True):
    """The filter as a ``SockFprog`` for this machine, or None on an architecture without a
    syscall table here."""
    machine = os.uname().machine
    if machine not in AUDIT_ARCH:
        return None
    code = filter_code(machine, sockets, sysv_ipc)
    return SockFprog(len(code), (SockFilter * len(code))(*code))  # ctypes keeps the array alive


def install_seccomp(program):
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"install the seccomp filter: {os.strerror(err)}")


def seccomp_works(program):
    """Install ``program`` in a throwaway child and check a denied call fails with EPERM."""
    pid = os.fork()
    if pid == 0:
        ok = libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) == 0
        nr = DENIED_SYSCALLS["keyctl"][0 if os.uname().machine == "x86_64" else 1]
        ok = ok and libc.syscall(nr, 0, 0, 0, 0, 0) == -1 and ctypes.get_errno() == errno.EPERM
        os._exit(0 if ok else 1)
    return os.waitpid(pid, 0)[1] == 0
