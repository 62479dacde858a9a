"""The sandbox conformance suite: every backend must contain these jobs and report them right.

Each test runs hostile or heavy jobs and then checks three things: the result's status, that
nothing escaped to the host (no leftover process, no file written, no connection made), and that
the backend still runs an ordinary job afterwards.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import textwrap
import time
import uuid
from typing import Any

from rlhub.sandbox import STATUSES, ExecRequest, ExecResult, Limits
from tests.sandbox.conftest import HOST_SECRET, Listener, host_processes_with


def py(code: str, **limits: Any) -> ExecRequest:
    return ExecRequest(code=textwrap.dedent(code), limits=Limits(**limits))


def batch(sandbox: Any, requests: list[ExecRequest]) -> list[ExecResult]:
    return asyncio.run(sandbox.run_batch(requests))


def assert_pool_alive(sandbox: Any) -> None:
    result = sandbox.run(py("print('still here')"))
    assert (result.status, result.stdout) == ("ok", "still here\n"), result


def assert_no_process_with(token: str) -> None:
    deadline = time.monotonic() + 2
    while host_processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_processes_with(token) == []


def test_a_trivial_job_returns_its_output_and_a_known_status(sandbox: Any) -> None:
    result = sandbox.run(py("import sys; print('hello'); print('warn', file=sys.stderr)"))
    assert result.status == "ok" and result.status in STATUSES
    assert (result.exit_code, result.stdout, result.stderr) == (0, "hello\n", "warn\n")
    assert result.wall_s > 0 and result.max_rss_mb > 0
    assert result.missing == sandbox.info()["missing"]


def test_a_failing_job_is_an_error_with_its_exit_code(sandbox: Any) -> None:
    result = sandbox.run(py("import sys; sys.exit(3)"))
    assert (result.status, result.exit_code) == ("error", 3)
    raised = sandbox.run(py("raise ValueError('boom')"))
    assert raised.status == "error" and "ValueError: boom" in raised.stderr


def test_a_job_sleeping_past_its_wall_limit_is_a_timeout(sandbox: Any) -> None:
    started = time.monotonic()
    result = sandbox.run(py("import time; time.sleep(60)", wall_s=1.0))
    assert result.status == "timeout"
    assert time.monotonic() - started < 30  # stopped at its 1 s limit, long before its 60 s sleep
    assert_pool_alive(sandbox)


def test_a_job_spinning_past_its_cpu_limit_is_a_timeout(sandbox: Any) -> None:
    result = sandbox.run(py("while True: pass", cpu_s=1, wall_s=60))
    assert result.status == "timeout"
    # stopped by its CPU limit, not by the wall clock (however slowly a loaded machine runs it):
    # the kernel's SIGXCPU says so; rusage's sampled CPU time can read low on a busy VM
    assert result.exit_code == -signal.SIGXCPU or result.cpu_s >= 0.8, result
    assert result.cpu_s < 5 and result.wall_s < 45


def test_a_job_allocating_past_its_memory_limit_is_a_memory_status(sandbox: Any) -> None:
    big = sandbox.run(py("x = bytearray(2 << 30)", memory_mb=256))
    assert big.status == "memory", big
    grow = sandbox.run(
        py(
            """
        chunks = []
        while True:
            chunks.append(bytearray(16 << 20))
        """,
            memory_mb=256,
        )
    )
    assert grow.status == "memory", grow
    assert_pool_alive(sandbox)


def test_a_fork_bomb_is_contained_and_leaves_no_process(sandbox: Any) -> None:
    token = "bomb-" + uuid.uuid4().hex
    result = sandbox.run(
        py(
            f"""
        import os, time
        TOKEN = {token!r}
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
        """,
            processes=16,
            wall_s=2,
        )
    )
    assert result.status in ("timeout", "error", "killed")
    assert_no_process_with(token)
    assert_pool_alive(sandbox)


def test_a_process_limit_stops_forks_before_the_host_runs_out(sandbox: Any) -> None:
    result = sandbox.run(
        py(
            """
        import os, time
        n = 0
        try:
            while n < 500:
                if os.fork() == 0:
                    time.sleep(5)
                    os._exit(0)
                n += 1
        except OSError:
            pass
        print(n)
        """,
            processes=16,
            wall_s=5,
        )
    )
    assert result.status == "ok", result
    assert 0 < int(result.stdout) < 16


def test_setsid_and_double_forked_daemons_die_with_their_job(sandbox: Any) -> None:
    token = "daemon-" + uuid.uuid4().hex
    result = sandbox.run(
        py(f"""
        import os, subprocess, sys, time
        sleeper = [sys.executable, "-c", "import time; time.sleep(300)", {token!r}]
        subprocess.Popen(sleeper, start_new_session=True)          # setsid'd child
        if os.fork() == 0:                                         # double fork
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, sleeper)
            os._exit(0)
        time.sleep(0.3)
        print("parent done")
        """)
    )
    assert (result.status, result.stdout) == ("ok", "parent done\n"), result
    assert result.leftovers >= 2
    assert_no_process_with(token)


def test_a_stdout_flood_is_capped_and_reported(sandbox: Any) -> None:
    started = time.monotonic()
    result = sandbox.run(
        py(
            """
        import sys
        while True:
            sys.stdout.write("x" * 65536)
        """,
            output_bytes=100_000,
            wall_s=60,
        )
    )
    assert result.status == "output_limit"
    assert 0 < len(result.stdout) <= 100_000
    assert time.monotonic() - started < 45  # stopped at its output cap, not its wall limit


def test_a_stderr_flood_is_capped_and_reported(sandbox: Any) -> None:
    result = sandbox.run(
        py(
            """
        import os
        while True:
            os.write(2, b"e" * 65536)
        """,
            output_bytes=50_000,
            wall_s=20,
        )
    )
    assert result.status == "output_limit"
    assert len(result.stderr) <= 50_000
    assert_pool_alive(sandbox)


def test_a_compile_flooding_its_diagnostics_is_a_compile_error_not_an_output_limit(
    sandbox: Any,
) -> None:
    """Each error echoes its line: 50 KB lines of nested parentheses make gcc write far more than
    the job may print. The compile failed, and that is what the result says."""
    line = "(" * 25_000 + "987654321" + ")" * 25_000
    code = "\n".join([line] * 40) + "\nint main(void) { return 0; }\n"
    result = sandbox.run(ExecRequest(code=code, language="c", limits=Limits(output_bytes=16_384)))
    assert (result.status, result.detail) == ("compile_error", "compile error"), result
    assert "error" in result.stderr and "more bytes of compiler output" in result.stderr
    assert_pool_alive(sandbox)


def test_writes_outside_the_work_dir_fail_and_reach_nothing_on_the_host(
    sandbox: Any, tmp_path: Any
) -> None:
    tmp_path.chmod(0o777)
    targets = [
        str(tmp_path / "escaped.txt"),
        "/etc/rlhub-escaped",
        "/usr/rlhub-escaped",
        "/var/tmp/rlhub-escaped",
        "/root/rlhub-escaped",
        "/rlhub-escaped",
    ]
    result = sandbox.run(
        py(f"""
        import os
        for target in {targets!r}:
            try:
                with open(target, "w") as f:
                    f.write("escaped")
                print("WROTE", target)
            except OSError as exc:
                print("refused", target, exc.errno)
        with open("inside.txt", "w") as f:
            f.write("fine")
        print("inside ok")
        """)
    )
    assert result.status == "ok", result
    assert "WROTE" not in result.stdout and "inside ok" in result.stdout
    assert list(tmp_path.iterdir()) == []
    for target in targets[1:]:
        assert not __import__("os").path.exists(target)


def test_jobs_have_no_network_to_the_host_loopback_or_elsewhere(
    sandbox: Any, listener: Listener
) -> None:
    result = sandbox.run(
        py(
            f"""
        import socket
        for addr in [("127.0.0.1", {listener.port}), ("192.0.2.1", 80)]:
            try:  # where jobs share a network namespace, socket() itself is refused
                s = socket.socket()
                s.settimeout(2)
                s.connect(addr)
                print("CONNECTED", addr)
            except OSError as exc:
                print("refused", addr, exc.errno)
        """,
            wall_s=10,
        )
    )
    assert result.status == "ok", result
    assert "CONNECTED" not in result.stdout and result.stdout.count("refused") == 2
    assert listener.accepted == 0


def lifetimes(*outputs: str) -> list[tuple[float, float]]:
    """``(start, end)`` wall-clock times each job printed as ``T <start>`` ... ``T <end>``."""
    spans = []
    for out in outputs:
        stamps = [float(line.split()[1]) for line in out.splitlines() if line.startswith("T ")]
        assert len(stamps) == 2, out
        spans.append((stamps[0], stamps[1]))
    return spans


def assert_overlapped(victim_out: str, attacker_out: str) -> None:
    """The attack ran while the victim was alive: otherwise the test proved nothing."""
    (v_start, v_end), (a_start, a_end) = lifetimes(victim_out, attacker_out)
    assert v_start < a_start and a_end < v_end, (
        f"the attack ({a_start:.2f}-{a_end:.2f}) did not run inside the victim's life "
        f"({v_start:.2f}-{v_end:.2f}); the pool ran them one after the other")


def test_a_job_cannot_read_another_running_jobs_files(sandbox: Any) -> None:
    secret = "victim-secret-" + uuid.uuid4().hex
    victim = py(f"""
        import os, time
        print("T", time.time())
        with open("secret.txt", "w") as f:
            f.write({secret!r})
        os.chmod("secret.txt", 0o666)
        os.chmod(".", 0o777)
        time.sleep(6)
        print(open("secret.txt").read())
        print("T", time.time())
        """, wall_s=30)
    half = len(secret) // 2
    attacker = py(
        f"""
        import glob, os, time
        SECRET = {secret[:half]!r} + {secret[half:]!r}   # never whole in this job's own files
        time.sleep(1.0)
        print("T", time.time())
        found = []
        patterns = ["/tmp/**", "/work/**", "/proc/*/cwd/*", "/proc/*/root/tmp/**",
                    "/proc/*/root/work/**", "/dev/shm/*", "/run/**/secret.txt"]
        for pattern in patterns:
            for path in glob.glob(pattern, recursive=True)[:5000]:
                try:
                    with open(path, errors="ignore") as f:
                        if SECRET in f.read(1 << 16):
                            found.append(path)
                except OSError:
                    pass
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    if SECRET.encode() in open(f"/proc/{{pid}}/cmdline", "rb").read():
                        found.append(pid)
                except OSError:
                    pass
        print("FOUND" if found else "nothing", found)
        print("T", time.time())
        """,
        wall_s=30,
    )
    victim_result, attacker_result = batch(sandbox, [victim, attacker])
    assert victim_result.status == "ok" and secret + "\n" in victim_result.stdout, victim_result
    assert attacker_result.status == "ok", attacker_result
    assert "nothing" in attacker_result.stdout and "FOUND" not in attacker_result.stdout
    assert_overlapped(victim_result.stdout, attacker_result.stdout)


def test_host_environment_variables_do_not_reach_jobs(sandbox: Any) -> None:
    result = sandbox.run(
        py(f"""
        import os
        leaks = [k for k, v in os.environ.items() if {HOST_SECRET!r} in v]
        for pid in ["1", str(os.getppid()), "self"]:
            try:
                if {HOST_SECRET!r}.encode() in open(f"/proc/{{pid}}/environ", "rb").read():
                    leaks.append(pid)
            except OSError:
                pass
        print(leaks, sorted(os.environ))
        """)
    )
    assert result.status == "ok", result
    assert result.stdout.startswith("[]"), result.stdout
    assert "RLHUB_CONFORMANCE_SECRET" not in result.stdout


def test_a_huge_stdin_arrives_whole(sandbox: Any) -> None:
    data = (uuid.uuid4().hex * 400_000)[: 12 << 20]
    result = sandbox.run(
        ExecRequest(
            code="import sys, hashlib; d = sys.stdin.buffer.read(); "
            "print(len(d), hashlib.sha256(d).hexdigest())",
            stdin=data,
            limits=Limits(wall_s=30),
        )
    )
    assert result.status == "ok", result
    assert result.stdout.split() == [str(len(data)), hashlib.sha256(data.encode()).hexdigest()]


def test_binary_and_non_utf8_output_comes_back_without_failing(sandbox: Any) -> None:
    result = sandbox.run(
        py("""
        import sys
        sys.stdout.buffer.write(bytes(range(256)) + b"\\xff\\xfe end")
        sys.stderr.buffer.write(b"\\x80\\x81 bad utf-8")
        """)
    )
    assert result.status == "ok", result
    assert result.stdout.endswith(" end") and "\ufffd" in result.stdout
    assert "bad utf-8" in result.stderr


def test_a_hundred_jobs_at_once_all_finish_in_order(sandbox: Any) -> None:
    requests = [py(f"import time; time.sleep(0.02); print({i} * {i})") for i in range(100)]
    started = time.monotonic()
    results = batch(sandbox, requests)
    assert [r.status for r in results] == ["ok"] * 100
    assert [r.stdout for r in results] == [f"{i * i}\n" for i in range(100)]
    assert time.monotonic() - started < 90  # bounded, however loaded the machine
    assert_pool_alive(sandbox)


def test_a_job_cannot_signal_another_running_job(sandbox: Any) -> None:
    victim = py("""
        import os, time
        print("T", time.time())
        time.sleep(5)
        print("survived", os.getuid())
        print("T", time.time())
        """, wall_s=30)
    attacker = py("""
        import os, signal, time
        time.sleep(1.0)
        print("T", time.time())
        try:
            os.kill(-1, signal.SIGKILL)   # everything this uid may signal, except itself
        except OSError:
            pass
        for pid in os.listdir("/proc"):
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        print("tried")
        print("T", time.time())
        """, wall_s=30)
    victim_result, attacker_result = batch(sandbox, [victim, attacker])
    assert victim_result.status == "ok", victim_result
    survived = [line.split() for line in victim_result.stdout.splitlines() if line.startswith("s")]
    assert survived and survived[0][0] == "survived" and survived[0][1] != "0"
    assert "tried" in attacker_result.stdout.splitlines()
    assert_overlapped(victim_result.stdout, attacker_result.stdout)
    assert_pool_alive(sandbox)


def test_a_job_cannot_create_namespaces_of_its_own(sandbox: Any) -> None:
    result = sandbox.run(
        py("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        for name, flag in [("user", 0x10000000), ("mount", 0x00020000), ("net", 0x40000000)]:
            if libc.unshare(flag) == 0:
                print("UNSHARED", name)
            else:
                print("refused", name, os.strerror(ctypes.get_errno()))
        """)
    )
    assert result.status == "ok", result
    assert "UNSHARED" not in result.stdout and result.stdout.count("refused") == 3


def test_bash_jobs_run_with_argv_and_files(sandbox: Any) -> None:
    result = sandbox.run(
        ExecRequest(
            code='cat data.txt; echo "args:$*"',
            language="bash",
            files={"data.txt": "from a file\n"},
            argv=["a", "b"],
        )
    )
    assert (result.status, result.stdout) == ("ok", "from a file\nargs:a b\n"), result


def test_syscalls_that_widen_the_kernel_attack_surface_are_denied(sandbox: Any) -> None:
    # keyrings, BPF, ptrace, io_uring, userfaultfd, module loading, kexec: EPERM under the
    # filter; without one (an architecture with no table) the result must say so.
    result = sandbox.run(py("""
        import ctypes, errno, json, os
        libc = ctypes.CDLL(None, use_errno=True)
        numbers = {
            "x86_64": {"keyctl": 250, "bpf": 321, "ptrace": 101, "io_uring_setup": 425,
                       "userfaultfd": 323, "finit_module": 313, "kexec_load": 246},
            "aarch64": {"keyctl": 219, "bpf": 280, "ptrace": 117, "io_uring_setup": 425,
                        "userfaultfd": 282, "finit_module": 273, "kexec_load": 104},
        }.get(os.uname().machine, {})
        found = {}
        for name, nr in numbers.items():
            failed = libc.syscall(nr, 0, 0, 0, 0, 0) == -1
            found[name] = errno.errorcode.get(ctypes.get_errno()) if failed else "ran"
        print(json.dumps({"found": found, "pid": os.getpid() > 0}))
    """))
    assert result.status == "ok", result
    report = json.loads(result.stdout)
    assert report["pid"]  # ordinary syscalls still work under the filter
    if "seccomp" in result.missing:
        return
    assert report["found"] and set(report["found"].values()) == {"EPERM"}, report


def test_jobs_share_no_module_state_or_random_stream(sandbox: Any) -> None:
    # Workers import common modules once for speed; a job must still see them fresh.
    token = uuid.uuid4().hex
    planted = sandbox.run(py(f"""
        import math, random, collections
        math.planted = {token!r}
        collections.Counter.planted = {token!r}
        print(random.random())
    """))
    after = batch(sandbox, [py("""
        import math, random, collections
        print(getattr(math, "planted", None), getattr(collections.Counter, "planted", None))
        print(random.random())
    """) for _ in range(4)])
    assert planted.status == "ok", planted
    assert all(r.status == "ok" for r in after), after
    seen = [r.stdout.splitlines() for r in after]
    assert all(lines[0] == "None None" for lines in seen), seen
    draws = {planted.stdout.strip(), *(lines[1] for lines in seen)}
    assert len(draws) == 5, draws  # every job draws its own random numbers
