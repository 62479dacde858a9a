"""The local backend beyond the shared suite: languages, the network opt-in, degraded modes,
and recovery from a dead worker."""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlhub.errors import SandboxError
from rlhub.sandbox import ExecRequest, Limits
from rlhub.sandbox.cgroups import CgroupSupport
from rlhub.sandbox.host import HostSupport
from rlhub.sandbox.local import LocalBackend
from rlhub.sandbox.local_worker import NAMESPACED, SECCOMP_MACHINES, WorkerSpec, missing_for
from tests.sandbox.conftest import Listener


@pytest.fixture(scope="module")
def local() -> Iterator[LocalBackend]:
    backend = LocalBackend(workers=1, slots=8)
    yield backend
    backend.close()


def needs(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed on this machine")


def test_c_programs_compile_and_run_inside_the_job(local: LocalBackend) -> None:
    needs("gcc")
    ok = local.run(
        ExecRequest(
            code='#include <stdio.h>\nint main(int c, char **v){printf("%s\\n", v[1]); return 0;}',
            language="c",
            argv=["hi"],
        )
    )
    assert (ok.status, ok.stdout) == ("ok", "hi\n"), ok
    broken = local.run(ExecRequest(code="int main( {", language="c"))
    assert (broken.status, broken.detail) == ("compile_error", "compile error")
    assert "error" in broken.stderr and broken.compile_s > 0


def test_cpp_programs_compile_and_run_inside_the_job(local: LocalBackend) -> None:
    needs("g++")
    result = local.run(
        ExecRequest(
            code="#include <iostream>\nint main(){std::cout << 6 * 7;}",
            language="cpp",
            limits=Limits(wall_s=30, cpu_s=30),
        )
    )
    assert (result.status, result.stdout) == ("ok", "42"), result


def test_javascript_runs_under_node_with_a_heap_cap(local: LocalBackend) -> None:
    needs("node")
    result = local.run(
        ExecRequest(code="console.log([1, 2, 3].map(x => x * 2).join(','))", language="javascript")
    )
    assert (result.status, result.stdout) == ("ok", "2,4,6\n"), result
    hog = local.run(
        ExecRequest(
            code="let a = []; while (true) a.push(new Array(1e6).fill(1));",
            language="javascript",
            limits=Limits(memory_mb=256, wall_s=20),
        )
    )
    assert hog.status == "memory", hog


def test_an_unknown_language_is_an_infra_error_naming_the_choices(local: LocalBackend) -> None:
    result = local.run(ExecRequest(code="print 1", language="pearl"))
    assert result.status == "infra_error"
    assert f"expected one of {local.languages.names()}" in result.detail
    assert "unknown sandbox language 'pearl'; did you mean 'perl'?" in result.detail


def test_paths_escaping_the_work_dir_are_refused(local: LocalBackend) -> None:
    result = local.run(ExecRequest(code="pass", files={"../evil.py": "x"}))
    assert result.status == "infra_error" and "'../evil.py'" in result.detail


def test_the_network_opt_in_reaches_a_host_listener(local: LocalBackend) -> None:
    listener = Listener()
    try:
        result = local.run(
            ExecRequest(
                code=f"import socket; socket.create_connection(('127.0.0.1', {listener.port}), 5)"
                "; print('connected')",
                limits=Limits(network=True),
            )
        )
        assert (result.status, result.stdout) == ("ok", "connected\n"), result
        deadline = time.monotonic() + 2
        while listener.accepted == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert listener.accepted == 1
        assert "network_namespace" not in result.missing
    finally:
        listener.close()


def test_a_killed_worker_is_replaced_and_the_pool_keeps_serving() -> None:
    backend = LocalBackend(workers=1, slots=4)
    try:
        assert backend.run(ExecRequest(code="print(1)")).status == "ok"
        worker = backend.pools[(False, ())][0]
        assert worker is not None
        os.kill(worker.proc.pid, signal.SIGKILL)
        worker.proc.wait()
        deadline = time.monotonic() + 5
        while worker.channel.alive and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not worker.channel.alive  # the sandbox went down with its bwrap
        result = backend.run(ExecRequest(code="print('again')"))
        assert (result.status, result.stdout) == ("ok", "again\n"), result
    finally:
        backend.close()


def test_without_namespaces_every_missing_protection_is_named_and_limits_still_hold() -> None:
    backend = LocalBackend(workers=1, slots=4, namespaces=False)
    try:
        info = backend.info()
        assert set(NAMESPACED) <= set(info["missing"])
        assert "namespaces" in info["why"]
        timeout = backend.run(
            ExecRequest(code="import time; time.sleep(30)", limits=Limits(wall_s=0.5))
        )
        assert timeout.status == "timeout" and timeout.missing == info["missing"]
        ok = backend.run(ExecRequest(code="print('degraded but running')"))
        assert (ok.status, ok.stdout) == ("ok", "degraded but running\n")
    finally:
        backend.close()


def test_missing_protections_follow_what_the_machine_offers() -> None:
    spec, net = WorkerSpec(slots=4, disk_mb=64), WorkerSpec(slots=4, disk_mb=64, network=True)
    v1 = CgroupSupport(1, Path("/sys/fs/cgroup/memory"))
    full = HostSupport(bwrap="/usr/bin/bwrap", root=True, python="/usr/bin/python3", cgroups=v1)
    no_filter = [] if platform.machine() in SECCOMP_MACHINES else ["seccomp"]
    assert missing_for(full, spec) == no_filter
    # network jobs share the host's network, so they could reach each other through it
    assert missing_for(full, net) == sorted(["private_sockets", *no_filter])
    unprivileged = HostSupport(bwrap="/usr/bin/bwrap", root=False, python="/usr/bin/python3")
    alone = ["hidden_processes", "job_disk_quota", "job_memory_limit"]
    denied = ["private_ipc", "private_sockets"] if no_filter else []  # no namespace, no filter
    assert missing_for(unprivileged, spec) == sorted(
        ["no_nested_userns", "per_job_uid", *alone, *denied, *no_filter]
    )
    bare = HostSupport(bwrap=None, root=False, python="/usr/bin/python3")
    assert set(missing_for(bare, spec)) == {
        *NAMESPACED, "minimal_runtime", "per_job_uid", *alone, *denied, *no_filter}
    assert "network_namespace" not in missing_for(bare, net)
    off = WorkerSpec(slots=4, disk_mb=64, disabled=frozenset({"job_memory_limit", "private_ipc"}))
    assert missing_for(full, off) == sorted(["job_memory_limit", *no_filter])  # IPC: denied


def test_uid_leases_of_any_size_never_overlap(tmp_path) -> None:
    from rlhub.sandbox.host import UID_RANGE_SIZE, UidLease

    big = UidLease(3 * UID_RANGE_SIZE + 1, directory=str(tmp_path))
    small = UidLease(directory=str(tmp_path))
    try:
        assert small.base >= big.base + 4 * UID_RANGE_SIZE or small.base + UID_RANGE_SIZE <= big.base
    finally:
        big.release()
        small.release()
    again = UidLease(2 * UID_RANGE_SIZE, directory=str(tmp_path))  # released ranges are reusable
    assert again.base == big.base
    again.release()


def test_a_warm_program_runs_exactly_like_a_cold_one() -> None:
    from rlhub.sandbox.channel import WARM_PROGRAMS, warm_program

    program = (
        "import sys\n"
        "print(__name__, sys.argv[1:], sys.stdin.read())\n"
        "raise ValueError('from line three')\n"
    )
    assert warm_program(program)
    assert not warm_program("#" * (64 << 10))  # past the budget: left to compile in the job
    backend = LocalBackend(workers=1, slots=2)
    try:
        warm, cold = (
            backend.run(ExecRequest(code=code, argv=["a"], stdin="in"))
            for code in (program, program + "# cold\n")
        )
    finally:
        backend.close()
        WARM_PROGRAMS.remove(program)
    assert (warm.status, warm.stdout) == (cold.status, cold.stdout) == ("error", "__main__ ['a'] in\n")
    assert "raise ValueError('from line three')" in warm.stderr  # the traceback shows the source
    assert warm.stderr == cold.stderr


def test_requests_that_would_clobber_the_job_or_escape_the_work_dir_are_refused(local) -> None:
    cases = {
        "main.py": "is where the job's own python code goes",
        "../outside.txt": "expected relative paths inside the work dir",
        "/etc/passwd": "expected relative paths inside the work dir",
    }
    for name, message in cases.items():
        result = local.run(ExecRequest(code="print(1)", files={name: "x"}))
        assert result.status == "infra_error" and message in result.detail, (name, result)
    if "c" in local.available:  # the compiled binary's name is taken too
        compiled = local.run(ExecRequest(code="int main(){}", language="c", files={"main": "x"}))
        assert compiled.status == "infra_error" and "'main'" in compiled.detail
    allowed = local.run(ExecRequest(code="print(open('main.sh').read())", files={"main.sh": "ok"}))
    assert (allowed.status, allowed.stdout) == ("ok", "ok\n")  # another language's name is fine


def test_nonsense_sizes_are_refused_up_front(local) -> None:
    from rlhub.errors import SandboxError

    for options in ({"slots": 0}, {"disk_mb": -1}, {"workers": -2}):
        with pytest.raises(SandboxError, match=f"expected {next(iter(options))} >= 1"):
            LocalBackend(**options)
    result = local.run(ExecRequest(code="pass", limits=Limits(disk_mb=0)))
    assert result.status == "infra_error" and "limits.disk_mb: expected a positive" in result.detail


def test_a_job_imports_no_library_its_request_does_not_declare(local: LocalBackend) -> None:
    alone = local.run(ExecRequest(code="import pluggy"))
    assert alone.status == "error" and "No module named 'pluggy'" in alone.stderr, alone
    grader = local.run(ExecRequest(code="import rlhub_code", libraries=["rlhub-code"]))
    assert grader.status == "infra_error" and "is rlhub or one of its plugins" in grader.detail


def test_python_tests_jobs_import_the_libraries_the_verifier_is_given() -> None:
    from rlhub.plugins import Registry
    from rlhub.task import Task
    from rlhub.verifiers.pytests import PythonTests

    task = Task(id="t", domain="d/x-v1", prompt="p", meta={"entry_point": "name"},
                answer="def check(f):\n    assert f() == 'pluggy'\n")
    answer = "```python\nimport pluggy\ndef name():\n    return pluggy.__name__\n```"
    registry = Registry(autoload=False)
    try:
        declared = PythonTests({"libraries": ["pluggy"], "backend": "local"},
                               registry.services).check(task, answer)
        undeclared = PythonTests({"backend": "local"}, registry.services).check(task, answer)
    finally:
        registry.services.close()
    assert declared.components == {"pass_frac": 1.0, "all_pass": 1.0}, declared
    assert undeclared.components["all_pass"] == 0.0 and "pluggy" in undeclared.feedback


def test_protections_turned_off_are_named_missing_and_memory_falls_back_per_process() -> None:
    backend = LocalBackend(workers=1, slots=2, disable=["job_memory_limit", "hidden_processes"])
    try:
        info = backend.info()
        assert {"job_memory_limit", "hidden_processes"} <= set(info["missing"])
        assert info["why"]["job_memory_limit"] == "turned off by the disable= option"
        # the documented bound without a cgroup: memory_mb per process, not per job
        hogs = ("import os\nkids = [os.fork() for _ in range(2)]\n"
                "if 0 in kids:\n    b = bytearray(150 << 20); b[::4096] = b'x' * len(b[::4096])\n"
                "    os._exit(0)\nprint([os.waitpid(k, 0)[1] for k in kids])\n")
        result = backend.run(ExecRequest(code=hogs, limits=Limits(memory_mb=256)))
        assert (result.status, result.stdout) == ("ok", "[0, 0]\n"), result
        assert "job_memory_limit" in result.missing
    finally:
        backend.close()
    with pytest.raises(SandboxError, match="disable: expected names among"):
        LocalBackend(disable=["seccomp"])


def test_a_request_asking_more_disk_than_the_work_dir_holds_is_refused(local) -> None:
    result = local.run(ExecRequest(code="pass", limits=Limits(disk_mb=65)))
    assert result.status == "infra_error"
    assert "limits.disk_mb: expected at most 64" in result.detail and "disk_mb=65" in result.detail


def test_job_memory_cgroups_are_removed_with_the_backend() -> None:
    backend = LocalBackend(workers=1, slots=2)
    assert backend.cgroups is not None, backend.info()["why"]
    root = backend.cgroups.root
    assert backend.run(ExecRequest(code="print(1)")).status == "ok"
    assert (root / "g0" / "s0").is_dir()
    backend.close()
    assert not root.exists()


def test_without_namespaces_per_slot_jobs_are_denied_ipc_and_sockets_instead() -> None:
    backend = LocalBackend(workers=1, slots=2, disable=["private_ipc", "private_sockets"])
    try:
        result = backend.run(ExecRequest(code=(
            "import ctypes, errno, socket\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print(libc.shmget(0, 4096, 0o1600), ctypes.get_errno() == errno.EPERM)\n"
            "for family in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):\n"
            "    try:\n        socket.socket(family, socket.SOCK_DGRAM); print('opened', family)\n"
            "    except OSError as exc:\n        print(exc.errno == errno.EAFNOSUPPORT)\n"
            "a, b = socket.socketpair()\na.send(b'x'); print(b.recv(1))\n"
            "try:\n    socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); print('dgram pair')\n"
            "except OSError as exc:\n    print(exc.errno == errno.EPERM)\n")))
        assert result.status == "ok", result
        assert result.stdout.split("\n") == ["-1 True", "True", "True", "True", "True", "b'x'",
                                             "True", ""]
        assert not {"private_ipc", "private_sockets"} & set(result.missing)
    finally:
        backend.close()


def test_a_jobs_files_no_longer_count_against_its_slots_memory_once_the_next_job_runs() -> None:
    # One slot, so the second job runs where the first one filled its work dir; the worker frees
    # a slot only once the first job's mount namespace (and its tmpfs) is torn down.
    backend = LocalBackend(workers=1, slots=1)
    try:
        assert backend.cgroups is not None, backend.info()["why"]
        filled = backend.run(ExecRequest(code="open('fill', 'wb').write(b'x' * (48 << 20))"))
        assert filled.status == "ok", filled
        slot = backend.pools[(False, ())][0].group / "s0"  # type: ignore[union-attr]
        future = backend.submit(ExecRequest(
            code="import time\nprint(time.time(), flush=True)\ntime.sleep(1.5)"))
        readings = []
        while not future.done():
            readings.append((time.time(), int((slot / "memory.usage_in_bytes").read_text())))
            time.sleep(0.05)
        started = float(future.result().stdout)
        during = [usage for at, usage in readings if at > started + 0.1]
        assert during and max(during) < 32 << 20, (started, readings)
    finally:
        backend.close()


def test_a_job_starts_without_the_modules_the_worker_imports_for_itself(local) -> None:
    # threading's fork hooks would run in every process a job forks, at the job's memory's cost.
    result = local.run(ExecRequest(
        code="import sys\nprint(sorted({'threading', 'queue'} & set(sys.modules)))"))
    assert (result.status, result.stdout) == ("ok", "[]\n"), result


def test_concurrent_callers_and_a_batch_each_get_their_own_results(local) -> None:
    # Callers of run() read the stream themselves in turn, the reader thread reads for the batch.
    def job(tag: str) -> ExecRequest:
        return ExecRequest(code=f"import time\ntime.sleep(0.01 * {len(tag) % 5})\nprint({tag!r})")

    got: dict[str, str] = {}
    threads = [threading.Thread(target=lambda t=f"run{i}": got.__setitem__(
        t, local.run(job(t)).stdout)) for i in range(6)]
    for thread in threads:
        thread.start()
    batch = asyncio.run(local.run_batch([job(f"batch{i}") for i in range(6)]))
    for thread in threads:
        thread.join()
    assert got == {f"run{i}": f"run{i}\n" for i in range(6)}
    assert [r.stdout for r in batch] == [f"batch{i}\n" for i in range(6)]


def test_a_worker_that_stops_answering_times_out_and_its_late_result_is_still_read(
    monkeypatch,
) -> None:
    backend = LocalBackend(workers=1, slots=2)
    try:
        assert backend.run(ExecRequest(code="print(1)")).status == "ok"
        worker = backend.pools[(False, ())][0]
        assert worker is not None
        monkeypatch.setattr("rlhub.sandbox.local.answer_within", lambda request: 0.5)
        pid = worker.proc.pid  # bubblewrap; below it, bubblewrap's init, then the worker
        while "python" not in Path(f"/proc/{pid}/comm").read_text():
            pid = int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0])
        os.kill(pid, signal.SIGSTOP)
        try:
            late = backend.run(ExecRequest(code="print('late')", limits=Limits(wall_s=0.5)))
        finally:
            os.kill(pid, signal.SIGCONT)
        assert (late.status, late.detail) == ("infra_error",
                                              "the sandbox worker did not answer in time"), late
        assert worker.channel.alive
        after = backend.run(ExecRequest(code="print('after')"))
        assert (after.status, after.stdout) == ("ok", "after\n"), after
        assert not worker.channel.pending  # the late result was read by the reader thread
    finally:
        backend.close()
