"""Workspace conformance: every workspace backend keeps state for an episode and every
protection of the one-shot jobs, per command.

``workspaces`` is parametrized over the backends (local; docker and ray with their markers).
Each test opens its own workspaces from small snapshots and closes them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlhub.errors import SandboxError
from rlhub.sandbox import Limits, leases
from rlhub.sandbox.snapshots import make_snapshot
from rlhub.sandbox.workspaces import Lease

from .conftest import HOST_SECRET

REPO = {"pkg/__init__.py": "VALUE = 1\n", "pkg/util.py": "def double(x):\n    return 2 * x\n",
        "tests/test_util.py": "from pkg.util import double\n\ndef test_double():\n"
                              "    assert double(2) == 4\n"}
QUICK = Limits(wall_s=20, cpu_s=10, memory_mb=256, processes=32, disk_mb=64)


def _local(tmp: Path):  # noqa: ANN202
    from rlhub.sandbox.ws_local import LocalWorkspaces

    return LocalWorkspaces(spares=1, disk_mb=64, lease_dir=str(tmp / "leases"))


def _docker(tmp: Path):  # noqa: ANN202
    from rlhub.sandbox.docker_backend import engine_problem
    from rlhub.sandbox.ws_docker import DockerWorkspaces

    problem = engine_problem()
    if problem:
        pytest.skip(f"no Docker engine reachable ({problem}); run .ci/docker-setup.sh")
    return DockerWorkspaces(spares=1, disk_mb=64, lease_dir=str(tmp / "leases"))


def _ray(tmp: Path):  # noqa: ANN202
    pytest.importorskip("ray", reason="ray is not installed (pip install 'rlhub[ray]')")
    from rlhub.sandbox.ws_ray import RayWorkspaces

    os.environ["RLHUB_WORKSPACES_DIR"] = str(tmp / "leases")  # the actors' records
    os.environ["RLHUB_CACHE"] = str(tmp / "cache")
    # num_cpus 0: the session's Ray may already hold a sandbox pool whose actors take every CPU
    backend = RayWorkspaces(actors=1, num_cpus=0, spares=1, disk_mb=64)
    backend.lease_dir = tmp / "leases"  # type: ignore[attr-defined] # on this one machine
    return backend


MAKERS = {"local": _local, "docker": _docker, "ray": _ray}


@pytest.fixture(scope="module", params=[pytest.param("local"),
                                        pytest.param("docker", marks=pytest.mark.docker),
                                        pytest.param("ray", marks=pytest.mark.ray)])
def workspaces(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[object]:
    tmp = tmp_path_factory.mktemp(f"ws-{request.param}")
    saved = {k: os.environ.get(k) for k in ("RLHUB_WORKSPACES_DIR", "RLHUB_CACHE")}
    backend = MAKERS[request.param](tmp)
    backend.tmp = tmp  # type: ignore[attr-defined]
    yield backend
    backend.close()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def ws(workspaces) -> Iterator[object]:  # noqa: ANN001
    workspace = workspaces.open(REPO, QUICK, Lease("test"), libraries=["pytest"])
    yield workspace
    workspace.close()


def test_files_persist_across_commands_and_reset_returns_to_the_snapshot(ws):
    ws.write("pkg/util.py", "def double(x):\n    return x + x + 1\n")
    assert ws.run(["python3", "-c", "from pkg.util import double; print(double(2))"]).stdout == "5\n"
    ws.run("echo made > notes.txt")
    assert ws.read_text("notes.txt") == "made\n"
    assert "notes.txt" in ws.files()
    ws.reset()
    assert ws.read_text("pkg/util.py") == REPO["pkg/util.py"]
    assert "notes.txt" not in ws.files()
    assert ws.run(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]).status == "ok"


def test_a_workspace_never_writes_its_snapshot(workspaces, ws):
    ws.write("pkg/__init__.py", "VALUE = 2\n")
    ws.run("echo x >> tests/test_util.py")
    ws.delete("pkg/util.py")
    snapshot = make_snapshot(REPO)  # the machine's store, which every backend here uses
    assert (snapshot.path / "pkg/__init__.py").read_text() == "VALUE = 1\n"
    assert (snapshot.path / "pkg/util.py").exists()


def test_each_command_has_its_limits(ws):
    assert ws.run("sleep 30", limits=Limits(wall_s=1, cpu_s=5)).status == "timeout"
    spin = ws.run(["python3", "-c", "while True: pass"], limits=Limits(wall_s=20, cpu_s=1))
    assert spin.status == "timeout"
    big = ws.run(["python3", "-c", "x = bytearray(600 << 20)"],
                 limits=Limits(wall_s=20, memory_mb=256))
    assert big.status == "memory"
    flood = ws.run(["python3", "-c", "print('x' * 100000)"], limits=Limits(output_bytes=1000))
    assert flood.status == "output_limit" and len(flood.stdout) <= 1000
    bomb = ws.run(["python3", "-c", "import os\nfor _ in range(200):\n    os.fork()\n"],
                  limits=Limits(wall_s=10, processes=16))
    assert bomb.status != "ok"
    assert ws.run(["python3", "-c", "pass"]).status == "ok"  # usable after each


DAEMON = """\
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 3)
        time.sleep(300)
    os._exit(0)
print("started")
"""
SLEEPERS = ("import os; print([p for p in os.listdir('/proc') if p.isdigit() and "
            "p != str(os.getpid()) and 'sleep' in open(f'/proc/{p}/cmdline').read()])")


def test_every_process_a_command_starts_dies_with_it(ws):
    started = ws.run(["python3", "-c", DAEMON])
    assert started.stdout == "started\n" and started.leftovers >= 1
    background = ws.run("sleep 300 & echo started")
    assert background.stdout == "started\n" and background.wall_s < 20
    assert ws.run(["python3", "-c", SLEEPERS]).stdout == "[]\n"


def test_a_workspace_has_no_network(ws, listener):
    code = (f"import socket\ns = socket.socket()\ns.settimeout(2)\n"
            f"try:\n    s.connect(('127.0.0.1', {listener.port})); print('connected')\n"
            "except OSError as e:\n    print('refused', e)\n"
            "try:\n    socket.getaddrinfo('pypi.org', 443); print('resolved')\n"
            "except OSError:\n    print('no dns')\n")
    out = ws.run(["python3", "-c", code]).stdout
    assert "connected" not in out and "resolved" not in out
    assert listener.accepted == 0


def test_a_workspace_sees_nothing_of_the_host(workspaces, ws):
    code = ("import os\nprint(os.environ.get('RLHUB_CONFORMANCE_SECRET'))\n"
            "for p in ['/rlhub/private', '/rlhub/private/store', '/root', os.getcwd() + '/..']:\n"
            "    try:\n        print(p, sorted(os.listdir(p))[:5])\n"
            "    except OSError as e:\n        print(p, 'denied', e.errno)\n")
    out = ws.run(["python3", "-c", code]).stdout
    assert HOST_SECRET not in out and "None" in out
    assert "/rlhub/private denied" in out and "/rlhub/private/store denied" in out
    assert str(Path.cwd()) not in ws.run("ls -R / 2>/dev/null").stdout
    assert ws.run(": > /usr/x || : > /etc/x").status == "error"


def test_workspaces_share_no_files_processes_or_tmp(workspaces, ws):
    other = workspaces.open(REPO, QUICK, Lease("other"))
    try:
        ws.write("pkg/__init__.py", "VALUE = 'mine'\n")
        ws.run("echo secret > /tmp/mine")
        assert other.read_text("pkg/__init__.py") == "VALUE = 1\n"
        assert other.run("cat /tmp/mine").status == "error"
        listing = other.run(["python3", "-c", "import os; print([p for p in os.listdir('/proc') "
                                              "if p.isdigit()])"]).stdout
        assert len(eval(listing)) <= 3  # noqa: S307 - its own python only
        whoami = {w.run(["python3", "-c", "import os; print(os.getuid())"]).stdout for w in
                  (ws, other)}
        if workspaces.name == "docker":  # bwrap maps both onto ns uid 1000 of distinct host uids
            assert len(whoami) == 2
    finally:
        other.close()


def test_file_requests_cannot_leave_the_workspace(ws):
    ws.run(["python3", "-c", "import os; os.symlink('/rlhub/private/store', 'store-link'); "
            "os.symlink('/etc/hosts', 'host-link')"])
    assert ws.files("store-link") == []  # the walk cannot enter it
    with pytest.raises(SandboxError, match="PermissionError|FileNotFoundError"):
        ws.read("store-link/" + ws.snapshot.id + "/pkg/__init__.py")
    with pytest.raises(SandboxError, match="inside the workspace"):
        ws.read("../../etc/passwd")
    assert ws.read("host-link")  # what a command could read anyway


def test_a_workspace_has_a_record_until_it_is_closed(workspaces):
    workspace = workspaces.open(REPO, QUICK, Lease("recorded"))
    mine = [r for r in leases.records(workspaces.lease_dir) if r.label == "recorded"]
    assert len(mine) == 1 and mine[0].state == "open" and mine[0].owner_alive
    workspace.close()
    assert not [r for r in leases.records(workspaces.lease_dir) if r.label == "recorded"]
    assert workspace.run(["python3", "-c", "pass"]).status == "infra_error"


def test_an_expired_workspace_ends_itself(workspaces):
    workspace = workspaces.open(REPO, QUICK, Lease("short", ttl_s=1.0))
    import time

    time.sleep(4)
    assert workspace.run(["python3", "-c", "pass"]).status == "infra_error"
    workspace.close()


OWNER = """\
import sys, time
from rlhub.sandbox.workspaces import Lease
backend = sys.argv[1]
if backend == "local":
    from rlhub.sandbox.ws_local import LocalWorkspaces as B
else:
    from rlhub.sandbox.ws_docker import DockerWorkspaces as B
b = B(spares=1, disk_mb=64, lease_dir=sys.argv[2])
open_ = [b.open({"a.py": "A = 1\\n"}, lease=Lease(f"owner-{i}")) for i in range(2)]
open_[0].write("made.txt", "x")
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("backend", [pytest.param("local"),
                                     pytest.param("docker", marks=pytest.mark.docker)])
def test_a_killed_owner_leaves_nothing_once_reaped(backend, tmp_path):
    import json
    import signal
    import subprocess
    import sys

    if backend == "docker":
        _docker(tmp_path).close()  # skips without an engine
    leases_dir = tmp_path / "leases"
    owner = subprocess.Popen([sys.executable, "-c", OWNER, backend, str(leases_dir)],
                             stdout=subprocess.PIPE, text=True)
    assert owner.stdout.readline().strip() == "ready"  # type: ignore[union-attr]
    held = leases.records(leases_dir)
    assert len(held) >= 2 and all(r.owner_pid == owner.pid for r in held)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    env = {**os.environ, "RLHUB_WORKSPACES_DIR": str(leases_dir)}
    listed = json.loads(subprocess.run([sys.executable, "-m", "rlhub", "sandbox", "workspaces",
                                        "--json"], env=env, capture_output=True, text=True,
                                       check=True).stdout)
    assert {w["id"] for w in listed["workspaces"]} == {r.id for r in held}
    assert not any(w["owner_alive"] for w in listed["workspaces"])
    reaped = json.loads(subprocess.run([sys.executable, "-m", "rlhub", "sandbox", "workspaces",
                                        "--reap", "--json"], env=env, capture_output=True,
                                       text=True, check=True).stdout)
    assert reaped["workspaces"] == [] and len(reaped["reaped"]) == len(held)
    assert not any(leases.alive(r.server_pid, r.server_start) for r in held)
    if backend == "docker":
        import docker

        client = docker.from_env()
        left = [c for r in held for c in client.containers.list(all=True,
                                                                filters={"label": f"rlhub.workspace={r.id}"})]
        assert left == []


def test_a_workspace_reports_what_it_changed_since_its_snapshot(ws):
    ws.write("pkg/util.py", "def double(x):\n    return x * 2\n")
    ws.write("pkg/new/mod.py", "N = 1\n")
    ws.delete("pkg/__init__.py")
    ws.run(["python3", "-c", "import shutil; shutil.rmtree('tests')"])
    changed, deleted = ws.changes()
    assert changed == ["pkg/new/mod.py", "pkg/util.py"]
    assert deleted == ["pkg/__init__.py", "tests/test_util.py"]
    ws.reset()
    assert ws.changes() == ([], [])


@pytest.mark.ray
def test_ray_workspaces_that_no_node_can_place_fail_rather_than_wait(tmp_path):
    """An actor the cluster cannot place (here: more CPUs than it has) is an error that says so,
    not a wait without end (one hung a whole test worker for an hour)."""
    pytest.importorskip("ray", reason="ray is not installed (pip install 'rlhub[ray]')")
    from rlhub.sandbox.ws_ray import RayWorkspaces

    with pytest.raises(SandboxError, match=r"no workspace actor started within 5 s.*asks for 1000"):
        RayWorkspaces(actors=1, num_cpus=1000, spares=0, disk_mb=16, start_timeout_s=5)
