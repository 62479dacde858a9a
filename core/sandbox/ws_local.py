"""The ``local`` workspace backend: one bubblewrap sandbox per workspace, from warm spares.

Each workspace server (``wsserver.py``) runs in bubblewrap with every namespace unshared, the
minimal read-only runtime of the one-shot jobs (``runtime.py``) plus the declared libraries, a
private ``/dev``, ``/proc`` (processes of other uids hidden) and ``/tmp``, and the snapshot store
bound read-only under ``/rlhub/private`` (mode 0700: commands cannot enter it). bubblewrap starts
as an unprivileged host uid of the workspace's own (a :class:`~rlhub.sandbox.host.UidLease` pair:
the server's and the commands'), with :data:`~rlhub.sandbox.snapshots.SNAPSHOT_UID` mapped in so
the overlay can copy snapshot files up. With a memory cgroup per workspace, ``memory_mb`` bounds
each command's total (its processes and the workspace's files).

Spares: ``spares`` servers per library set wait started and unmounted, so ``open`` is a mount
(milliseconds); a spawner thread refills them. That one long-lived thread starts every bubblewrap
(``--die-with-parent`` follows the spawning thread), so all of them die with this process, even
on ``kill -9``; their tmpfs and mounts go with their namespaces, and their records are then
reaped by ``rlhub sandbox workspaces --reap``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlhub.errors import SandboxError
from rlhub.sandbox import leases
from rlhub.sandbox.cgroups import JobCgroups
from rlhub.sandbox.host import SAFE_PATH, HostSupport, detect
from rlhub.sandbox.local_worker import read_info
from rlhub.sandbox.runtime import library_binds, runtime_args
from rlhub.sandbox.snapshots import SNAPSHOT_UID
from rlhub.sandbox.workspaces import BOOTSTRAP, Conn, server_source
from rlhub.sandbox.ws_pool import PooledServer, Runtime, SparePool

PRIVATE, LIBS = "/rlhub/private", "/rlhub/lib"
CMD_UID, SNAP_NS_UID = 1000, 2000
SPARE_TTL_S = 600.0
PROTECTIONS = ("user_namespace", "pid_namespace", "mount_namespace", "network_namespace",
               "ipc_namespace", "minimal_runtime", "per_workspace_uid", "rlimits",
               "wall_timeout", "output_caps", "clean_env", "process_cleanup", "seccomp",
               "hidden_processes", "job_memory_limit", "job_disk_quota", "copy_on_write")


@dataclass
class LocalServer(PooledServer):
    """One started workspace server: its bubblewrap process, connection, uids and record."""

    proc: subprocess.Popen[bytes] = None  # type: ignore[assignment]
    conn: Conn = None  # type: ignore[assignment]
    host_uid: int = 0
    libraries: Runtime = ()
    group: Path | None = None
    missing: list[str] = field(default_factory=list)
    stderr: Any = None

    def kill(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()  # type: ignore[union-attr]
            except OSError:
                pass
        self.proc.kill()
        self.proc.wait()


class LocalWorkspaces(SparePool):
    """See the module docstring. Options: ``spares`` (warm servers per library set, default 2),
    ``disk_mb`` (each workspace's tmpfs, default 256), ``python`` (the commands' interpreter),
    ``store`` (the snapshot store), ``lease_dir`` (where records go)."""

    name = "local"

    def __init__(self, spares: int = 2, disk_mb: int = 256, python: str | None = None,
                 store: str | None = None, lease_dir: str | None = None):
        self.support: HostSupport = detect(python)
        if not (self.support.bwrap and self.support.root):
            raise SandboxError("local workspaces: expected bubblewrap and root (for the overlay "
                               f"and the uid map), found bwrap={self.support.bwrap} "
                               f"root={self.support.root}; use the docker backend instead")
        on = self.support.cgroups.version is not None
        self.cgroups = JobCgroups(self.support.cgroups) if on else None
        super().__init__(spares, disk_mb, store, lease_dir)

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "active": [p for p in PROTECTIONS if p not in
                                                 self._missing()],
                "missing": self._missing(), "spares": self.spares, "disk_mb": self.disk_mb,
                "store": str(self.store), "python": self.support.python,
                "leases": str(self.lease_dir), "open_spares": self.spare_counts()}

    def _usable(self, server: LocalServer) -> bool:
        return server.proc.poll() is None and server.conn.alive

    def _end(self, server: LocalServer) -> None:
        server.kill()
        if server.stderr is not None:
            server.stderr.close()
        leases.drop(server.record.id, self.lease_dir)
        if self.cgroups is not None and server.group is not None:
            self.cgroups.remove_group(server.group)
        self.uids.give_back(server.host_uid)

    def _release(self) -> None:
        if self.cgroups is not None:
            self.cgroups.close()

    def _missing(self) -> list[str]:
        return [] if self.cgroups is not None else ["job_memory_limit"]

    # -- starting a server ---------------------------------------------------------------------

    def _start(self, runtime: Runtime) -> LocalServer:
        host_uid = self.uids.take()
        record = leases.own(f"local-{os.getpid()}-{host_uid}", self.name, SPARE_TTL_S)
        group = None
        if self.cgroups is not None:
            group = self.cgroups.group(f"ws{host_uid}", 1, host_uid)
            record.cgroup = str(group)
        binds = library_binds(runtime, self.support.python) if runtime else []
        config = {"uid": CMD_UID, "gid": CMD_UID, "repo": "/repo", "ws": f"{PRIVATE}/ws",
                  "store": f"{PRIVATE}/store", "disk_mb": self.disk_mb,
                  "expires_at": record.expires_at, "hide_processes": True,
                  "env": {"PYTHONPATH": LIBS} if binds else {},
                  "cgroup": f"{PRIVATE}/cgroup" if group else None,
                  "cgroup_version": self.cgroups.version if self.cgroups else None}
        stderr = tempfile.TemporaryFile()
        try:
            proc, conn = self._spawn(config, binds, group, host_uid, stderr)
        except (OSError, SandboxError) as exc:
            stderr.seek(0)
            said = stderr.read()[-1500:].decode(errors="replace")
            stderr.close()
            self.uids.give_back(host_uid)
            if group is not None and self.cgroups is not None:
                self.cgroups.remove_group(group)
            raise SandboxError(f"local workspace: the server did not start: {exc}; it said: "
                               f"{said}") from exc
        record.server_pid, record.server_start = proc.pid, leases.start_time(proc.pid)
        leases.save(record, self.lease_dir)
        return LocalServer(record, self.lease_dir, proc, conn, host_uid, runtime, group,
                           self._missing(), stderr)

    def _bwrap_args(self, binds: list[tuple[str, str]],
                    group: Path | None) -> list[str]:
        args = ["--unshare-all", "--new-session", "--die-with-parent"]
        args += runtime_args(self.support.python, self.support.tools.values())
        args += ["--perms", "0755", "--dir", "/rlhub", "--perms", "0755", "--dir", LIBS]
        for source, target in binds:
            args += ["--ro-bind", source, target.replace("/rlhub/lib", LIBS, 1)]
        args += ["--perms", "0700", "--dir", PRIVATE, "--ro-bind", str(self.store),
                 f"{PRIVATE}/store"]
        if group is not None:
            args += ["--bind", str(group), f"{PRIVATE}/cgroup"]
        args += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--size",
                 str(self.disk_mb << 20), "--tmpfs", "/tmp", "--perms", "0755", "--dir", "/repo",
                 "--hostname", "rlhub-workspace"]
        return args

    def _spawn(self, config: dict[str, Any], binds: list[tuple[str, str]], group: Path | None,
               host_uid: int, stderr: Any) -> tuple[subprocess.Popen[bytes], Conn]:
        block_r, block_w = os.pipe()
        info_r, info_w = os.pipe()
        argv = [self.support.python, "-I", "-S", "-c", BOOTSTRAP, json.dumps(config)]
        cmd = [self.support.bwrap, *self._bwrap_args(binds, group),  # type: ignore[list-item]
               "--unshare-user", "--userns-block-fd", str(block_r), "--info-fd", str(info_w),
               "--uid", "0", "--gid", "0", "--cap-add", "ALL", "--", *argv]
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=stderr, env={"PATH": SAFE_PATH, "LANG": "C.UTF-8"},
                                    pass_fds=(block_r, info_w), user=host_uid,
                                    group=host_uid, extra_groups=[], cwd="/", umask=0o022)
        finally:
            for fd in (block_r, info_w):
                os.close(fd)
        try:
            self._map(proc, info_r, block_w, host_uid, group)
            source = server_source().encode()
            proc.stdin.write(b"%d\n" % len(source) + source)  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            conn = Conn(proc.stdout.fileno(), proc.stdin.fileno(),  # type: ignore[union-attr]
                        f"local workspace server {proc.pid}")
        except (OSError, ValueError, SandboxError):
            proc.kill()
            proc.wait()
            raise
        return proc, conn

    def _map(self, proc: subprocess.Popen[bytes], info_r: int, block_w: int, host_uid: int,
             group: Path | None) -> None:
        """Map ns root, the commands' uid and the snapshot owner, then let bubblewrap go on."""
        try:
            child = read_info(info_r)
            if self.cgroups is not None and group is not None:
                self.cgroups.adopt(group, [proc.pid, child])
            mapping = f"0 {host_uid} 1\n{CMD_UID} {host_uid + 1} 1\n{SNAP_NS_UID} {SNAPSHOT_UID} 1\n"
            for name in ("uid_map", "gid_map"):
                Path(f"/proc/{child}/{name}").write_text(mapping)
            os.write(block_w, b"1")
        finally:
            os.close(info_r)
            os.close(block_w)
