"""One worker of the ``local`` backend: ``worker.py`` started in bubblewrap (or on the host when
bubblewrap cannot run), with its channel and the protections it reports.

In bubblewrap every namespace is unshared (user, pid, mount, network, ipc, uts, cgroup) and the
root is built from the minimal runtime (``runtime.py``), a private ``/dev``, ``/proc`` and
``/tmp``, the job's declared libraries and, when jobs get memory cgroups, the worker's cgroup
group (``cgroups.py``). Started as root, the worker gets a host uid block through a custom uid map
(ns root -> one unprivileged host uid, slot uids -> distinct host uids), so every concurrent job
runs as a uid no other job has.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlhub.errors import SandboxError
from rlhub.sandbox.cgroups import JobCgroups
from rlhub.sandbox.channel import WARM_PROGRAMS, Channel, worker_source, write_all
from rlhub.sandbox.host import SAFE_PATH, SLOT_UID, HostSupport
from rlhub.sandbox.languages import Languages
from rlhub.sandbox.runtime import LIBRARY_DIR, library_binds, resolve, runtime_args

NAMESPACED = (
    "user_namespace",
    "pid_namespace",
    "mount_namespace",
    "network_namespace",
    "ipc_namespace",
    "readonly_root",
    "no_nested_userns",
)
SECCOMP_MACHINES = ("x86_64", "aarch64")  # those seccomp.py has syscall tables for
CGROUP_DIR = "/tmp/rlhub-cgroup"
VIEWS_DIR = "/rlhub/runtimes"  # where a worker sees the language runtimes  # the worker's /tmp: under every job's own /tmp mount
# The worker's source arrives on stdin ahead of the first frame (no file of ours needs to be
# readable by the sandbox's uids, and `ps` shows a short command line).
BOOTSTRAP = (
    "import sys; f = sys.stdin.buffer; n = int(f.readline()); "
    "exec(compile(f.read(n), 'rlhub-sandbox-worker', 'exec'))"
)


@dataclass(frozen=True)
class WorkerSpec:
    """What a pool's workers provide: slots, work dir size, network, libraries, and the
    protections turned off on purpose (``disabled``, for benchmarks and broken hosts)."""

    slots: int
    disk_mb: int
    network: bool = False
    libraries: tuple[str, ...] = ()
    preload: tuple[str, ...] = ()
    disabled: frozenset[str] = field(default_factory=frozenset)
    views: str | None = None  # the host folder of the language runtimes (toolchains.py)


def slot_namespaces(support: HostSupport, spec: WorkerSpec) -> list[str]:
    """The namespaces each slot gets of its own (they need root in the sandbox's userns)."""
    if not (support.bwrap and support.root):
        return []
    kinds = [] if "private_ipc" in spec.disabled else ["ipc"]
    if not spec.network and "private_sockets" not in spec.disabled:
        kinds.append("net")
    return kinds


def missing_for(support: HostSupport, spec: WorkerSpec, ready: dict[str, Any] | None = None
                ) -> list[str]:
    """The protections not in force for a job of ``spec`` on this host: predicted from the
    machine, or (given the worker's ``ready`` message) as the worker reports them."""
    facts = ready or predicted(support, spec)
    sandboxed, root_ns = bool(support.bwrap), bool(support.bwrap and support.root)
    missing = [] if sandboxed else [*NAMESPACED, "minimal_runtime"]
    if not facts["seccomp"]:
        missing.append("seccomp")
    if not support.root:
        missing += ["per_job_uid", "no_nested_userns"] if sandboxed else ["per_job_uid"]
    elif root_ns and not facts["no_nested_userns"]:
        missing.append("no_nested_userns")
    if not facts["subreaper"]:
        missing.append("process_cleanup")
    missing += [] if root_ns else ["job_disk_quota"]
    kinds = facts["slot_namespaces"]
    missing += [] if "ipc" in kinds or facts["seccomp"] else ["private_ipc"]
    sockets_denied = facts["seccomp"] and not spec.network
    missing += [] if "net" in kinds or sockets_denied else ["private_sockets"]
    missing += [] if facts["hidden_processes"] else ["hidden_processes"]
    missing += [] if facts["memory_cgroup"] else ["job_memory_limit"]
    missing += [p for p in spec.disabled if p == "minimal_runtime" and sandboxed]
    if spec.network and "network_namespace" in missing:
        missing.remove("network_namespace")  # the job asked for the network
    return sorted(set(missing))


def predicted(support: HostSupport, spec: WorkerSpec) -> dict[str, Any]:
    root_ns = bool(support.bwrap and support.root)
    return {
        "seccomp": platform.machine() in SECCOMP_MACHINES,
        "no_nested_userns": root_ns,
        "subreaper": True,
        "slot_namespaces": slot_namespaces(support, spec),
        "hidden_processes": root_ns and "hidden_processes" not in spec.disabled,
        "memory_cgroup": memory_cgroups_on(support, spec),
    }


def memory_cgroups_on(support: HostSupport, spec: WorkerSpec) -> bool:
    wanted = "job_memory_limit" not in spec.disabled
    return bool(support.root and support.cgroups.version and wanted)


class WorkerProcess:
    """One sandboxed worker process and its channel; see the module docstring."""

    def __init__(self, support: HostSupport, spec: WorkerSpec, host_uid: int | None,
                 cgroups: JobCgroups | None, name: str, languages: Languages | None = None,
                 views: dict[str, str] | None = None):
        self.support, self.spec = support, spec
        self.stderr = tempfile.TemporaryFile()
        self.cgroups = cgroups if memory_cgroups_on(support, spec) else None
        owner = host_uid if support.bwrap else 0
        self.group = self.cgroups.group(name, self.slot_count(), owner) if self.cgroups else None
        # Inside bubblewrap, /tmp is the sandbox's own tmpfs; on the host, a fresh private dir
        # that slot uids may traverse (0711) but not list.
        self.jobs_dir = "/tmp/rlhub-jobs"
        if not support.bwrap:
            self.jobs_dir = tempfile.mkdtemp(prefix="rlhub-jobs-")
            os.chmod(self.jobs_dir, 0o711)
        self.minimal = bool(support.bwrap) and "minimal_runtime" not in spec.disabled
        self.binds = library_binds(spec.libraries, support.python) if self.minimal else []
        argv = [support.python, "-I", "-S", "-c", BOOTSTRAP, json.dumps(self.config(host_uid))]
        try:
            self.proc, rfd, wfd = self._start(argv, host_uid)
            source = worker_source().encode()
            write_all(wfd, b"%d\n" % len(source) + source)  # read by BOOTSTRAP before any frame
            self.channel = Channel(rfd, wfd, "local", [], languages=languages, views=views)
        except (OSError, SandboxError) as exc:
            if getattr(self, "proc", None) is not None:
                self.proc.kill()
            said = self.stderr_text()
            self.close()
            raise SandboxError(f"local sandbox: the worker did not start: {exc}; it said: {said}"
                               ) from exc
        self.channel.missing[:] = missing_for(support, spec, self.channel.ready)

    def slot_count(self) -> int:
        return self.spec.slots if self.support.root else 1  # no per-job uid: one job at a time

    def config(self, host_uid: int | None) -> dict[str, Any]:
        support, spec = self.support, self.spec
        root_ns = bool(support.bwrap and support.root)
        libraries = [LIBRARY_DIR] if self.binds else []
        if spec.libraries and not self.minimal:  # the host's / is visible: their install dirs
            libraries = sorted({str(d.locate_file("")) for d in resolve(spec.libraries).values()})
        uid_base = None
        if support.root:
            uid_base = SLOT_UID if support.bwrap else host_uid + SLOT_UID  # type: ignore[operator]
        return {
            "slots": self.slot_count(),
            "disk_mb": spec.disk_mb,
            "mount_ns": root_ns,
            "jobs_dir": self.jobs_dir,
            "own_userns": root_ns,
            "uid_base": uid_base,
            "preload": list(spec.preload),
            "warm_programs": list(WARM_PROGRAMS),
            "network": spec.network,
            "slot_namespaces": slot_namespaces(support, spec),
            "hide_processes": root_ns and "hidden_processes" not in spec.disabled,
            "cgroup": (CGROUP_DIR if support.bwrap else str(self.group)) if self.group else None,
            "cgroup_version": self.cgroups.version if self.cgroups else None,
            "libraries": libraries,
        }

    def _start(self, argv: list[str], host_uid: int | None
               ) -> tuple[subprocess.Popen[bytes], int, int]:
        env = {"PATH": SAFE_PATH, "LANG": "C.UTF-8"}
        if not self.support.bwrap:
            adopt = self.group is not None and self.cgroups and self.cgroups.version == 2
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=self.stderr, env=env, close_fds=True,
                                    start_new_session=True, cwd="/",
                                    preexec_fn=self._adopt_self if adopt else None)
            return proc, proc.stdout.fileno(), proc.stdin.fileno()  # type: ignore[union-attr]
        cmd = [self.support.bwrap, *self.bwrap_args()]
        if not self.support.root:
            proc = subprocess.Popen(cmd + ["--uid", "1000", "--gid", "1000", "--", *argv],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=self.stderr, env=env, close_fds=True, cwd="/",
                                    umask=0o022)
            return proc, proc.stdout.fileno(), proc.stdin.fileno()  # type: ignore[union-attr]
        assert host_uid is not None
        return self._start_mapped(cmd, argv, host_uid, env)

    def _adopt_self(self) -> None:
        """In the forked worker before exec (host mode, v2): join the group's worker cgroup."""
        (self.group / "worker" / "cgroup.procs").write_text("0")  # type: ignore[operator]

    def bwrap_args(self) -> list[str]:
        root = ["--ro-bind", "/", "/"]
        if self.minimal:
            root = runtime_args(self.support.python, self.support.tools.values())
            for folder in ("/rlhub", LIBRARY_DIR):  # bubblewrap would make them 0700
                root += ["--perms", "0755", "--dir", folder]
            for source, target in self.binds:
                root += ["--ro-bind", source, target]
            if self.spec.views:  # each job of a language is shut in its runtime there
                root += ["--ro-bind", self.spec.views, VIEWS_DIR]
        args = ["--unshare-all", "--new-session", "--die-with-parent", *root, "--dev", "/dev",
                "--proc", "/proc", "--tmpfs", "/tmp", "--hostname", "rlhub-sandbox"]
        args += ["--share-net"] if self.spec.network else []
        if self.group is not None:
            args += ["--bind", str(self.group), CGROUP_DIR]
        return args

    def _start_mapped(self, cmd: list[str], argv: list[str], host_uid: int, env: dict[str, str]
                      ) -> tuple[subprocess.Popen[bytes], int, int]:
        """Start bubblewrap as ``host_uid`` and map ns root and the slot uids onto its block."""
        block_r, block_w = os.pipe()
        info_r, info_w = os.pipe()
        cmd += ["--unshare-user", "--userns-block-fd", str(block_r), "--info-fd", str(info_w),
                "--uid", "0", "--gid", "0", "--cap-add", "ALL", "--", *argv]
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=self.stderr, env=env, pass_fds=(block_r, info_w),
                                user=host_uid, group=host_uid, extra_groups=[], cwd="/",
                                umask=0o022)  # the sandbox's own dirs (/etc, ...) traversable
        self.proc = proc
        os.close(block_r)
        os.close(info_w)
        try:
            child = read_info(info_r)
            if self.cgroups is not None and self.group is not None:
                self.cgroups.adopt(self.group, [proc.pid, child])
            mapping = f"0 {host_uid} 1\n{SLOT_UID} {host_uid + SLOT_UID} {self.slot_count()}\n"
            for name in ("uid_map", "gid_map"):
                Path(f"/proc/{child}/{name}").write_text(mapping)
            os.write(block_w, b"1")
        except (OSError, ValueError) as exc:
            raise SandboxError(f"local sandbox: could not map uids into bubblewrap: {exc}") from exc
        finally:
            os.close(info_r)
            os.close(block_w)
        return proc, proc.stdout.fileno(), proc.stdin.fileno()  # type: ignore[union-attr]

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-2000:].decode(errors="replace").strip()

    def close(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is not None:
            stop(proc)
        self.stderr.close()
        if not self.support.bwrap:
            import shutil

            shutil.rmtree(self.jobs_dir, ignore_errors=True)
        if self.cgroups is not None and self.group is not None:
            self.cgroups.remove_group(self.group)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Close the worker's input (it then kills its jobs and exits) and wait for it."""
    for pipe in (proc.stdin, proc.stdout):
        try:
            pipe.close()  # type: ignore[union-attr]
        except OSError:
            pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def read_info(fd: int) -> int:
    """The sandbox child's pid from bubblewrap's ``--info-fd`` JSON."""
    data = b""
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            raise ValueError(f"bwrap closed --info-fd early: {data!r}")
        data += chunk
        try:
            return int(json.loads(data)["child-pid"])
        except ValueError:
            continue
