"""The conformance suite, part two: jobs share nothing with the host or with each other.

Every backend must pass these: a job sees only its runtime and its work dir; what it leaves in
System V IPC is removed, counted and invisible to later jobs; ``memory_mb`` bounds its total;
one job exhausting disk, processes, memory or pipes changes no concurrent job's result; and
concurrent jobs have no channel between them. Attacks that need another job run with a victim
and several attackers in one batch (so one attacker shares the victim's worker or container),
and each checks from the jobs' own clocks that attacker and victim really overlapped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlhub.sandbox import ExecRequest
from tests.sandbox.test_conformance import assert_pool_alive, batch, py


@pytest.fixture
def planted() -> Iterator[Path]:
    """A world-readable host file, as a dataset or an $RLHUB_HOME file would be."""
    folder = Path(tempfile.mkdtemp(prefix="rlhub-planted-", dir="/var/tmp"))
    folder.chmod(0o755)
    secret = folder / "answers.jsonl"
    secret.write_text(json.dumps({"answer": "planted-" + uuid.uuid4().hex}))
    secret.chmod(0o644)
    yield secret
    shutil.rmtree(folder, ignore_errors=True)


def test_a_job_sees_its_runtime_and_work_dir_and_nothing_else_of_the_host(
    sandbox: Any, planted: Path
) -> None:
    import rlhub

    project = Path(rlhub.__file__).resolve().parent.parent
    plugin = importlib.util.find_spec("rlhub_code")
    assert plugin is not None and plugin.origin is not None
    grader = Path(plugin.origin).parent
    targets = [str(project), str(grader / "plugin.py"), str(Path(rlhub.__file__).resolve()),
               sys.prefix, str(planted), str(planted.parent), os.environ["RLHUB_HOME"]]
    result = sandbox.run(py(f"""
        import json, os, sys
        import decimal, sqlite3, zoneinfo   # the standard library is there
        leaks = []
        for path in {targets!r}:
            try:
                if os.path.isdir(path):
                    if os.listdir(path):
                        leaks.append(path)
                else:
                    open(path).read()
                    leaks.append(path)
            except OSError:
                pass
        sys.path.insert(0, {str(grader.parent)!r})
        try:
            import rlhub_code                # a grader's answer tables must be out of reach
            leaks.append("import rlhub_code")
        except ImportError:
            pass
        print(json.dumps(leaks))
        """))
    assert result.status == "ok", result
    assert json.loads(result.stdout) == []


def test_a_job_cannot_plant_modules_where_the_runtime_or_later_jobs_import_from(
    sandbox: Any,
) -> None:
    # The attack that once wrote into a host interpreter's standard library when a probe ran
    # outside the sandbox by mistake. Create-only, so a broken sandbox still overwrites nothing.
    name = f"rlhub_planted_{uuid.uuid4().hex[:12]}"
    plant = sandbox.run(py(f"""
        import os, sys
        for home in {{*sys.path, os.path.dirname(os.__file__), "/tmp", "/usr/lib", "."}}:
            try:
                with open(os.path.join(home or ".", "{name}.py"), "x") as out:
                    out.write("print('PLANTED')\\n")
            except OSError:
                pass
        """))
    assert plant.status == "ok", plant
    later = sandbox.run(py(f"""
        try:
            import {name}
        except ImportError:
            print("clean")
        """))
    assert (later.status, later.stdout.strip()) == ("ok", "clean"), later  # not later jobs ...
    host = {*sys.path, os.path.dirname(os.__file__), "/tmp", "/usr/lib", os.getcwd()}
    assert [d for d in host if d and Path(d, name + ".py").exists()] == []  # ... nor the host


def test_a_job_imports_the_libraries_its_request_declares(sandbox: Any) -> None:
    request = ExecRequest(code="import pluggy; print(pluggy.HookimplMarker.__name__)",
                          libraries=["pluggy"])
    result = sandbox.run(request)
    if sandbox.name == "docker":  # the image is the runtime: it must have them installed
        assert result.status == "infra_error" and "['pluggy']" in result.detail, result
        assert "Dockerfile" in result.detail
        return
    assert (result.status, result.stdout) == ("ok", "HookimplMarker\n"), result


IPC_MAKER = """
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
made, refused = 0, []
shm = libc.shmget(KEY, 1 << 20, 0o1000 | 0o666)
if shm >= 0:
    made += 1
    address = libc.shmat(shm, None, 0)
    ctypes.memmove(address, SECRET.encode(), len(SECRET))
else:
    refused.append(ctypes.get_errno())
for ident in (libc.msgget(KEY + 1, 0o1000 | 0o666), libc.semget(KEY + 2, 1, 0o1000 | 0o666)):
    if ident >= 0:
        made += 1
    else:
        refused.append(ctypes.get_errno())
print(json.dumps({"made": made, "refused": refused}))   # and exit without removing them
"""

IPC_READER = """
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
found = [k for k, n in ((KEY, 0), (KEY + 1, 1), (KEY + 2, 2))
         if (libc.shmget, libc.msgget, libc.semget)[n](*((k, 0, 0), (k, 0), (k, 0, 0))[n]) >= 0]
for kind in ("shm", "msg", "sem"):
    try:
        rows = open(f"/proc/sysvipc/{kind}").read().splitlines()[1:]
    except OSError:
        rows = []
    found += [row for row in rows if row.split() and int(row.split()[0]) in (KEY, KEY + 1, KEY + 2)]
print(json.dumps(found))
"""


def test_ipc_objects_a_job_leaves_are_removed_counted_and_unseen_by_later_jobs(
    sandbox: Any,
) -> None:
    key, secret = 0x5000 + uuid.uuid4().int % 0x7000, "ipc-" + uuid.uuid4().hex
    preamble = f"KEY, SECRET = {key}, {secret!r}\n"
    made = sandbox.run(py(preamble + IPC_MAKER))
    assert made.status == "ok", made
    report = json.loads(made.stdout)
    if report["made"] < 3:  # the backend denies System V IPC to jobs outright
        assert report["refused"] and set(report["refused"]) == {1}, report  # EPERM
    assert made.leftovers >= report["made"]
    readers = [sandbox.run(py(preamble + IPC_READER)) for _ in range(4)]
    assert all(r.status == "ok" for r in readers), readers
    assert [json.loads(r.stdout) for r in readers] == [[]] * 4


def test_ipc_memory_counts_against_the_jobs_memory_limit(sandbox: Any) -> None:
    # Segments that are detached again pin memory no address-space limit sees.
    result = sandbox.run(py("""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        for n in range(10):
            shm = libc.shmget(0, 32 << 20, 0o1000 | 0o600)
            if shm < 0:
                print("refused", ctypes.get_errno())
                raise SystemExit(0)
            address = libc.shmat(shm, None, 0)
            ctypes.memset(address, 1, 32 << 20)
            libc.shmdt(ctypes.c_void_p(address))
        print("pinned 320 MB")
        """, memory_mb=128, wall_s=20))
    if result.stdout.startswith("refused"):
        assert result.stdout.split() == ["refused", "1"] and "private_ipc" not in result.missing
    else:
        assert result.status == "memory", result
    assert_pool_alive(sandbox)


FORKED_HOGS = """
import os, time
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray(MB << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(1.0)
        os._exit(0)
    children.append(pid)
print([os.waitpid(pid, 0)[1] for pid in children])
"""


def test_memory_mb_bounds_the_whole_job_not_each_process(sandbox: Any) -> None:
    over = sandbox.run(py(f"MB = 150\n{FORKED_HOGS}", memory_mb=256, wall_s=30))
    assert over.status == "memory", over  # 4 x 150 MB: each under 256, the job over it
    under = sandbox.run(py(f"MB = 40\n{FORKED_HOGS}", memory_mb=256, wall_s=30))
    assert (under.status, under.stdout) == ("ok", "[0, 0, 0, 0]\n"), under
    if "job_memory_limit" not in under.missing:
        assert "job_memory_limit" in sandbox.info()["active"]


EXHAUSTER = """
import json, os, time
started = time.time()
written = 0
try:
    while True:                      # disk: files until the work dir (or the machine) is full
        with open(f"fill{written}", "wb") as f:
            f.write(b"x" * (8 << 20))
        written += 1
except OSError:
    pass
forks = 0
try:
    while True:                      # processes: children until fork fails
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        forks += 1
except OSError:
    pass
pipes, hog = [], []
try:
    while True:                      # pipes: until no fd is left, each buffer full
        r, w = os.pipe()
        os.set_blocking(w, False)
        try:
            while True:
                os.write(w, b"p" * 65536)
        except BlockingIOError:
            pass
        pipes.append((r, w))
except OSError:
    pass
try:
    while True:                      # memory: until allocation fails
        hog.append(bytearray(16 << 20))
except MemoryError:
    hog.pop()
exhausted = time.time()
time.sleep(5)
print(json.dumps({"started": started, "exhausted": exhausted, "ended": time.time(),
                  "files": written, "forks": forks, "pipes": len(pipes), "hog_mb": 16 * len(hog)}))
"""

VICTIM = """
import json, os, time
rounds = []
deadline = time.time() + 9
time.sleep(1)
while time.time() < deadline:
    begun = time.time()
    for n in range(2):
        with open(f"data{n}", "wb") as f:
            f.write(b"v" * (8 << 20))
        os.remove(f"data{n}")
    children = [os.fork() for _ in range(4)]
    if 0 in children:
        os._exit(0)
    assert all(os.waitpid(pid, 0)[1] == 0 for pid in children)
    block = bytearray(64 << 20)
    block[::4096] = b"m" * len(block[::4096])
    fds = [os.pipe() for _ in range(16)]
    for r, w in fds:
        os.write(w, b"q" * 4096)
        assert os.read(r, 4096) == b"q" * 4096
        os.close(r)
        os.close(w)
    del block
    rounds.append([begun, time.time()])
    time.sleep(0.3)
print(json.dumps(rounds))
"""


def test_one_job_exhausting_its_resources_never_changes_a_concurrent_jobs_result(
    sandbox: Any,
) -> None:
    attacker = py(EXHAUSTER, memory_mb=256, processes=32, wall_s=60, cpu_s=30)
    victim = py(VICTIM, memory_mb=256, processes=32, wall_s=60, cpu_s=30)
    results = batch(sandbox, [attacker, victim, victim, victim])
    assert all(r.status == "ok" for r in results), results
    report = json.loads(results[0].stdout)
    assert report["files"] >= 1 and report["forks"] >= 4 and report["pipes"] >= 16, report
    for result in results[1:]:
        rounds = json.loads(result.stdout)
        during = [r for r in rounds if report["exhausted"] < r[0] and r[1] < report["ended"]]
        assert during, (report, rounds)  # the victim worked while the attacker held everything
    assert_pool_alive(sandbox)


SENDER = """
import ctypes, json, os, socket, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
opened = []
def attempt(name, make):
    try:
        make()
        opened.append(name)
    except OSError:
        pass
def abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\\0rlhub-" + TOKEN)
    s.listen(8)
    keep.append(s)
def loopback():
    s = socket.socket()
    s.bind(("127.0.0.1", PORT))
    s.listen(8)
    keep.append(s)
def shm():
    ident = libc.shmget(KEY, 4096, 0o1000 | 0o666)
    if ident < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    ctypes.memmove(libc.shmat(ident, None, 0), TOKEN.encode(), len(TOKEN))
def shared_file():
    with open("channel.txt", "w") as f:
        f.write(TOKEN)
    os.chmod("channel.txt", 0o666)
    os.chmod(".", 0o777)
def title():
    keep.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(8)", TOKEN]))
keep = []
for name, make in [("abstract", abstract), ("loopback", loopback), ("shm", shm),
                   ("file", shared_file), ("title", title)]:
    attempt(name, make)
ready = time.time()
time.sleep(5)
print(json.dumps({"opened": opened, "ready": ready, "closed": time.time()}))
"""

RECEIVER = """
import ctypes, glob, json, os, socket, time
libc = ctypes.CDLL(None, use_errno=True)
found, tries = set(), []
def abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(0.2)
    s.connect("\\0rlhub-" + TOKEN)
    return True
def loopback():
    socket.create_connection(("127.0.0.1", PORT), 0.2)
    return True
def shm():
    return libc.shmget(KEY, 0, 0) >= 0
def shared_file():
    paths = glob.glob("/work/s*/j*/channel.txt") + glob.glob("/tmp/rlhub-jobs/*/channel.txt")
    paths += [f"/work/jobs/s{i}-{n}/channel.txt" for i in range(32) for n in range(1, 40)]
    paths += [f"/work/s{i}/j{n}/channel.txt" for i in range(32) for n in range(1, 40)]
    for path in paths:
        try:
            if TOKEN in open(path).read():
                return True
        except OSError:
            pass
    return False
def title():
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and TOKEN.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                return True
        except OSError:
            pass
    return False
deadline = time.time() + 9
while time.time() < deadline:
    tries.append(time.time())
    for name, probe in [("abstract", abstract), ("loopback", loopback), ("shm", shm),
                        ("file", shared_file), ("title", title)]:
        try:
            if probe():
                found.add(name)
        except OSError:
            pass
    time.sleep(0.3)
print(json.dumps({"found": sorted(found), "tries": tries}))
"""


def test_concurrent_jobs_have_no_channel_between_them(sandbox: Any) -> None:
    token = "chan" + uuid.uuid4().hex
    preamble = (f"TOKEN, PORT, KEY = {token!r}, {20000 + uuid.uuid4().int % 20000}, "
                f"{0x1000 + uuid.uuid4().int % 0x7000}\n")
    sender = py(preamble + SENDER, wall_s=30)
    receivers = [py(preamble + RECEIVER, wall_s=30) for _ in range(3)]
    results = batch(sandbox, [sender, *receivers])
    assert all(r.status == "ok" for r in results), results
    sent = json.loads(results[0].stdout)
    assert "file" in sent["opened"] and "title" in sent["opened"], sent
    for result in results[1:]:
        report = json.loads(result.stdout)
        assert any(sent["ready"] < t < sent["closed"] for t in report["tries"]), (sent, report)
        found = set(report["found"])
        if "hidden_processes" in result.missing:  # listed: jobs of one container share /proc
            found.discard("title")
        assert found == set(), (sent, report)


def test_jobs_cannot_open_sockets_of_families_that_reach_past_the_sandbox(sandbox: Any) -> None:
    # vsock reaches the hypervisor's host, alg the kernel's crypto API, packet raw frames.
    result = sandbox.run(py("""
        import socket
        opened = []
        for family, kind in [(40, socket.SOCK_STREAM), (38, socket.SOCK_SEQPACKET),
                             (17, socket.SOCK_RAW), (30, socket.SOCK_DGRAM),
                             (21, socket.SOCK_SEQPACKET)]:
            try:
                socket.socket(family, kind).close()
                opened.append(family)
            except OSError:
                pass
        print(opened)
        """))
    assert (result.status, result.stdout) == ("ok", "[]\n"), result
