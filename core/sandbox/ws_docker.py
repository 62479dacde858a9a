"""The ``docker`` workspace backend: one container per workspace, from warm spares.

Each container's PID 1 is the workspace server (``wsserver.py``, passed to ``python3 -I -S -c``,
so any image with Python works; the default is the sandbox's offline base image), reached over a
unix socket in a bind-mounted host folder that it unlinks once its owner connects. The container
runs with ``--network none``, a read-only root, ``ipc=none``, ``no-new-privileges``, memory and
pids limits, and every capability dropped except what the server needs to mount the overlay and
give commands their uid (SYS_ADMIN, SETUID, SETGID, CHOWN, DAC_OVERRIDE, FOWNER, KILL). Commands
run as a host uid of the workspace's own with no capabilities, the server's seccomp filter and
rlimits. The snapshot store is bound read-only under ``/rlhub/private`` (a 0700 tmpfs), the
declared libraries under ``/rlhub/lib``.

The container is removed when it exits (``auto_remove``), and the server exits when its owner's
connection closes: a crashed owner leaves no container. Each container is labelled with its
record id, so :func:`remove_container` (and ``rlhub sandbox workspaces --reap``) can find it.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlhub.errors import SandboxError
from rlhub.sandbox import leases
from rlhub.sandbox.docker_backend import connect_when_listening, ensure_image, engine_problem
from rlhub.sandbox.runtime import library_binds
from rlhub.sandbox.workspaces import Conn, server_source
from rlhub.sandbox.ws_pool import PooledServer, Runtime, SparePool

CAPS = ["SYS_ADMIN", "SETUID", "SETGID", "CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL"]
LABEL = "rlhub.workspace"
PRIVATE, LIBS = "/rlhub/private", "/rlhub/lib"
SPARE_TTL_S = 600.0
SERVER_PIDS = 16
PROTECTIONS = ("pid_namespace", "mount_namespace", "network_namespace", "ipc_namespace",
               "readonly_root", "per_workspace_uid", "rlimits", "wall_timeout", "output_caps",
               "clean_env", "process_cleanup", "seccomp", "hidden_processes", "memory_cgroup",
               "pids_cgroup", "capabilities_dropped", "no_new_privileges", "job_disk_quota",
               "copy_on_write")


def remove_container(container_id: str) -> None:
    """Force-remove a workspace container by id (a no-op when Docker or it is gone)."""
    try:
        import docker

        docker.from_env(version="auto", timeout=10).containers.get(container_id).remove(force=True)
    except Exception:  # noqa: BLE001 - already gone, or no engine to ask
        pass


@dataclass
class DockerServer(PooledServer):
    """One workspace container: its id, socket connection, uid and record."""

    container: Any = None
    sock: socket.socket = None  # type: ignore[assignment]
    conn: Conn = None  # type: ignore[assignment]
    host_uid: int = 0
    folder: str = ""
    missing: list[str] = field(default_factory=list)

    def kill(self) -> None:
        try:
            self.container.remove(force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        self.sock.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class DockerWorkspaces(SparePool):
    """See the module docstring. Options: ``image``, ``spares``, ``disk_mb``, ``memory_mb`` (the
    container's, for its commands and files), ``store``, ``lease_dir``."""

    name = "docker"

    def __init__(self, image: str | None = None, spares: int = 2, disk_mb: int = 256,
                 memory_mb: int = 2048, store: str | None = None, lease_dir: str | None = None):
        try:
            import docker
        except ImportError as exc:
            raise SandboxError("docker workspaces: the docker SDK is not installed "
                               "(pip install 'rlhub[sandbox]')") from exc
        problem = engine_problem()
        if problem:
            raise SandboxError(f"docker workspaces: no Docker engine reachable ({problem})")
        self.client = docker.from_env(version="auto")
        self.image = ensure_image(self.client, image, None, None)
        self.memory_mb = memory_mb
        self.missing = [] if "userns" in str(self.client.info().get("SecurityOptions")) \
            else ["user_namespace"]
        super().__init__(spares, disk_mb, store, lease_dir)

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "image": self.image, "active": list(PROTECTIONS),
                "missing": list(self.missing), "spares": self.spares, "disk_mb": self.disk_mb,
                "store": str(self.store), "leases": str(self.lease_dir),
                "open_spares": self.spare_counts()}

    def _end(self, server: DockerServer) -> None:
        server.kill()
        leases.drop(server.record.id, self.lease_dir)
        self.uids.give_back(server.host_uid)

    # -- starting a container --------------------------------------------------------------------

    def _start(self, runtime: Runtime) -> DockerServer:
        import docker

        host_uid = self.uids.take()
        record = leases.own(f"docker-{host_uid}-{int(time.time() * 1e3)}", self.name, SPARE_TTL_S)
        folder = tempfile.mkdtemp(prefix="rlhub-ws-docker-")
        Path(folder).chmod(0o755)
        try:
            options = self._options(record, runtime, folder, host_uid)
            container = self.client.containers.run(self.image, **options)
        except (docker.errors.DockerException, OSError, SandboxError) as exc:
            shutil.rmtree(folder, ignore_errors=True)
            self.uids.give_back(host_uid)
            raise SandboxError(f"docker workspace: could not start a container from "
                               f"{self.image}: {exc}") from exc
        record.container = container.id
        leases.save(record, self.lease_dir)
        try:
            sock = self._connect(container, Path(folder) / "ws.sock")
            conn = Conn(sock.fileno(), sock.fileno(), f"docker workspace {container.short_id}")
        except SandboxError:
            remove_container(container.id)
            leases.drop(record.id, self.lease_dir)
            shutil.rmtree(folder, ignore_errors=True)
            self.uids.give_back(host_uid)
            raise
        Path(folder).chmod(0o700)
        return DockerServer(record, self.lease_dir, container, sock, conn, host_uid, folder,
                            list(self.missing))

    def _options(self, record: leases.Record, runtime: Runtime, folder: str,
                 host_uid: int) -> dict[str, Any]:
        """``containers.run`` options: the hardening of the module docstring."""
        volumes = {folder: {"bind": "/run/rlhub", "mode": "rw"},
                   str(self.store): {"bind": f"{PRIVATE}/store", "mode": "ro"}}
        binds = library_binds(runtime, "python3") if runtime else []
        for source, target in binds:
            volumes[source] = {"bind": target.replace("/rlhub/lib", LIBS, 1), "mode": "ro"}
        uid = host_uid + 1
        config = {"uid": uid, "gid": uid, "repo": "/repo", "ws": f"{PRIVATE}/ws",
                  "store": f"{PRIVATE}/store", "disk_mb": self.disk_mb,
                  "expires_at": record.expires_at, "hide_processes": True,
                  "env": {"PYTHONPATH": LIBS} if binds else {}, "listen": "/run/rlhub/ws.sock"}
        return {
            "command": ["python3", "-I", "-S", "-c", server_source(), json.dumps(config)],
            "detach": True, "network_mode": "none", "read_only": True, "user": "0:0",
            "tmpfs": {"/rlhub": "size=1m,mode=0755", PRIVATE: "size=1m,mode=0700",
                      "/repo": "size=1m,mode=0755",
                      "/tmp": f"size={self.disk_mb}m,mode=1777,exec"},
            "volumes": volumes,
            "mem_limit": f"{self.memory_mb + self.disk_mb}m",
            "memswap_limit": f"{self.memory_mb + self.disk_mb}m",
            "pids_limit": 256 + SERVER_PIDS, "cap_drop": ["ALL"], "cap_add": CAPS,
            "ipc_mode": "none", "security_opt": ["no-new-privileges"],
            "environment": {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
            "labels": {LABEL: record.id}, "auto_remove": True, "log_config": {"type": "none"},
        }

    def _connect(self, container: Any, path: Path) -> socket.socket:
        sock = connect_when_listening(container, path, 60)
        if sock is not None:
            return sock
        raise SandboxError(f"docker workspace: the server in container {container.short_id} did "
                           f"not open its socket (status {container.status})")
