"""The jobs' seccomp filter, run through a small classic-BPF interpreter for both architectures
(the conformance suite checks the filter the kernel actually enforces on this machine)."""

from __future__ import annotations

import errno
import struct

import pytest

from rlhub.sandbox.seccomp import (
    AUDIT_ARCH,
    DENIED_SYSCALLS,
    SOCKET,
    SOCKETPAIR,
    SYSV_IPC_SYSCALLS,
    filter_code,
)

ALLOW, KILL = 0x7FFF0000, 0x80000000
COLUMN = {"x86_64": 0, "aarch64": 1}


def run(code: list[tuple[int, int, int, int]], arch: int, nr: int, *args: int) -> int:
    """Evaluate a filter on one ``seccomp_data`` (little-endian), as the kernel would."""
    return steps(code, arch, nr, *args)[0]


def steps(code: list[tuple[int, int, int, int]], arch: int, nr: int, *args: int
          ) -> tuple[int, int]:
    """The filter's action on one syscall, and how many instructions it ran to decide."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(list(args) + [0] * 6)[:6])
    acc, pc, ran = 0, 0, 0
    while True:
        op, jt, jf, k = code[pc]
        pc, ran = pc + 1, ran + 1
        if op == 0x20:  # BPF_LD|W|ABS
            acc = struct.unpack_from("<I", data, k)[0]
        elif op == 0x54:  # BPF_ALU|AND|K
            acc &= k
        elif op in (0x15, 0x35):  # BPF_JMP|JEQ|K, JGE|K
            pc += jt if (acc == k if op == 0x15 else acc >= k) else jf
        elif op == 0x06:  # BPF_RET|K
            return k, ran
        else:
            raise AssertionError(f"unexpected instruction {op:#x}")


def errno_of(action: int) -> int | None:
    return action & 0xFFFF if action & 0xFFFF0000 == 0x00050000 else None


@pytest.mark.parametrize("machine", sorted(AUDIT_ARCH))
def test_the_filter_denies_what_it_lists_and_allows_the_rest(machine: str) -> None:
    arch, col = AUDIT_ARCH[machine], COLUMN[machine]
    open_nr = {"x86_64": 257, "aarch64": 56}[machine]  # openat
    for sockets in ("all", "ip", "none"):
        for sysv in (True, False):
            code = filter_code(machine, sockets, sysv)
            assert run(code, arch, open_nr) == ALLOW
            assert run(code, 0x40000003, open_nr) == KILL  # i386 through int 0x80
            for name, nrs in DENIED_SYSCALLS.items():
                if nrs[col] is not None:
                    assert errno_of(run(code, arch, nrs[col])) == errno.EPERM, name
            shmget = SYSV_IPC_SYSCALLS["shmget"][col]
            assert (run(code, arch, shmget) == ALLOW) is sysv
            assert errno_of(run(code, arch, SOCKET[col], 40, 1)) == errno.EAFNOSUPPORT  # vsock


@pytest.mark.parametrize("machine", sorted(AUDIT_ARCH))
def test_socket_families_follow_the_namespaces_a_slot_has(machine: str) -> None:
    arch, col = AUDIT_ARCH[machine], COLUMN[machine]
    opened = {}
    for sockets in ("all", "ip", "none"):
        code = filter_code(machine, sockets, True)
        opened[sockets] = [f for f in (1, 2, 10, 16) if run(code, arch, SOCKET[col], f, 1) == ALLOW]
        stream = run(code, arch, SOCKETPAIR[col], 1, 1 | 0o2000000)  # SOCK_STREAM|SOCK_CLOEXEC
        dgram = run(code, arch, SOCKETPAIR[col], 1, 2)
        assert stream == ALLOW
        assert (dgram == ALLOW) is (sockets == "all")  # a datagram pair can be unbound, then bound
    assert opened == {"all": [1, 2, 10, 16], "ip": [2, 10], "none": []}


@pytest.mark.parametrize("machine", sorted(AUDIT_ARCH))
def test_an_allowed_syscall_passes_the_filter_in_a_few_instructions(machine: str) -> None:
    # The kernel runs the filter for every syscall number whenever a job installs it (to cache
    # the always-allowed ones), so its length per syscall is paid by every job.
    code = filter_code(machine, "all", True)
    worst = max(steps(code, AUDIT_ARCH[machine], nr)[1] for nr in range(0, 460)
                if nr not in (SOCKET[COLUMN[machine]], SOCKETPAIR[COLUMN[machine]]))
    assert worst <= 16, worst
