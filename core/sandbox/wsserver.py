"""The workspace server: one per workspace, inside its sandbox (standard library only).

Sent as source after ``isolation.py`` and ``seccomp.py`` (see ``workspaces.server_source``) and
run as the sandbox's root: root of a user namespace of its own under bubblewrap (``local``), the
container's root with a few capabilities under Docker. It serves one owner over its stdin and
stdout, one framed JSON request at a time (4-byte length, then JSON), and holds the workspace:

* ``mount {snapshot}``: a fresh tmpfs of ``disk_mb`` holds an overlay's upper layer over the
  snapshot (the read-only lower layer, from the store under a directory only root may enter),
  mounted at ``/repo``; the same request resets a workspace in use. Nothing is copied.
* ``run {argv, cwd, env, stdin, limits}``: one command in a forked child that joins the
  workspace's memory cgroup, takes rlimits, drops to the workspace's uid with no capabilities,
  ``no_new_privs`` and the seccomp filter, then execs; its output is capped, its wall clock
  enforced, and after it every process of the uid is killed (a setsid daemon too).
* ``read {path}``, ``write {path, data}``, ``files {path}``: file access *as the workspace's
  uid*, in a forked child, so a symlink the workspace made cannot reach what its commands
  could not.
* EOF on stdin (the owner died or closed it), or the lease's expiry passing, ends the server: it
  kills every process of the workspace and exits; its mounts and tmpfs go with its namespace.
"""

import base64
import json
import os
import resource
import select
import signal
import stat
import sys
import time

try:  # importable as a module; in the server's source the two parts are inlined ahead of this
    from rlhub.sandbox.isolation import SlotMemory, check, hide_other_processes, libc
    from rlhub.sandbox.seccomp import install_seccomp, seccomp_program
except ImportError:
    pass

PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 4, 38, 36
MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2
MAX_FRAME = 64 << 20
MAX_LIST = 5000
CLEAN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp",
             "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}


def read_exact(fd, n):
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def send(obj):
    data = json.dumps(obj).encode()
    view = memoryview(len(data).to_bytes(4, "big") + data)
    while view:
        view = view[os.write(1, view):]


def mount(source, target, fstype, options, flags=MS_NOSUID | MS_NODEV):
    check(libc.mount(source.encode(), target.encode(), fstype.encode(), flags, options.encode()),
          f"mount {fstype} on {target}")


def umount(target):
    libc.umount2(target.encode(), MNT_DETACH)


class Server:
    """See the module docstring; ``config`` comes from the owner as JSON in argv."""

    def __init__(self, config):
        self.config = config
        self.uid, self.gid = config["uid"], config["gid"]
        self.repo, self.ws, self.store = config["repo"], config["ws"], config["store"]
        self.expires_at = config["expires_at"]
        self.mounted = None
        self.memory = None
        if config.get("cgroup"):
            self.memory = SlotMemory(config["cgroup"], config["cgroup_version"], 1)
            name = "tasks" if config["cgroup_version"] == 1 else "cgroup.procs"
            self.cgroup_procs = os.open(f"{config['cgroup']}/s0/{name}", os.O_WRONLY)
        self.seccomp = seccomp_program("all", True) if config.get("seccomp", True) else None
        self.hidden = config.get("hide_processes") and hide_other_processes()
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        self.subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        self.env = {**CLEAN_ENV, **config.get("env", {})}

    # -- the loop ------------------------------------------------------------------------------

    def serve(self):
        send({"op": "ready", "pid": os.getpid(), "seccomp": self.seccomp is not None,
              "memory_cgroup": self.memory is not None, "hidden_processes": bool(self.hidden),
              "subreaper": self.subreaper})
        while True:
            wait = max(0.0, self.expires_at - time.time())
            ready, _, _ = select.select([0], [], [], min(wait, 60.0))
            if not ready:
                if time.time() >= self.expires_at:
                    return "expired"
                continue
            try:
                size = int.from_bytes(read_exact(0, 4), "big")
                if size > MAX_FRAME:
                    return "oversized frame"
                request = json.loads(read_exact(0, size))
            except EOFError:
                return "owner gone"
            self.expires_at = request.get("expires_at", self.expires_at)
            send(self.handle(request))

    def handle(self, request):
        op = request.get("op")
        try:
            if op == "ping":
                return {"ok": True}
            if op == "mount":
                return self.mount(request["snapshot"])
            if self.mounted is None and op in ("run", "read", "write", "files", "changes"):
                return {"ok": False, "error": "no snapshot is mounted"}
            if op == "changes":
                return self.changes()
            if op == "run":
                return self.run(request)
            if op in ("read", "write", "files"):
                return self.as_user(op, request)
            return {"ok": False, "error": f"unknown op {op!r}"}
        except Exception as exc:  # noqa: BLE001 - a failed request is answered, never fatal
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    # -- the file system -----------------------------------------------------------------------

    def mount(self, snapshot):
        """Mount a fresh workspace of ``snapshot`` (a reset when one is mounted)."""
        lower = os.path.join(self.store, snapshot)
        if not snapshot.isalnum() or not os.path.isdir(lower):
            return {"ok": False, "error": f"no snapshot {snapshot!r} in the store"}
        started = time.perf_counter()
        self.sweep()
        if self.mounted is not None:
            umount(self.repo)
            umount(self.ws)
        os.makedirs(self.ws, mode=0o700, exist_ok=True)
        mount("tmpfs", self.ws, "tmpfs", f"size={self.config['disk_mb']}m,mode=0700")
        upper, work = f"{self.ws}/upper", f"{self.ws}/work"
        os.mkdir(upper, 0o755)
        os.mkdir(work, 0o700)
        os.chown(upper, self.uid, self.gid)
        mount("overlay", self.repo, "overlay", f"lowerdir={lower},upperdir={upper},workdir={work}")
        self.mounted = snapshot
        return {"ok": True, "ms": (time.perf_counter() - started) * 1e3}

    def changes(self):
        """What differs from the snapshot: files written or made, and files deleted (the
        overlay's upper layer: whiteouts, and the lower files under an opaque folder)."""
        upper = f"{self.ws}/upper"
        lower = os.path.join(self.store, self.mounted)
        changed, deleted = [], []
        for dirpath, dirnames, filenames in os.walk(upper):
            rel_dir = os.path.relpath(dirpath, upper)
            if opaque(dirpath) and rel_dir != ".":
                deleted += [p for p in lower_files(lower, rel_dir)
                            if not os.path.lexists(os.path.join(upper, p))]
            for name in filenames + [d for d in dirnames if is_whiteout(dirpath, d)]:
                full = os.path.join(dirpath, name)
                rel = os.path.normpath(os.path.join(rel_dir, name))
                if is_whiteout(dirpath, name):
                    deleted += [rel] if os.path.isfile(os.path.join(lower, rel)) else \
                        lower_files(lower, rel)
                elif stat.S_ISREG(os.lstat(full).st_mode):
                    changed.append(rel)
        return {"ok": True, "changed": sorted(changed), "deleted": sorted(set(deleted))}

    def as_user(self, op, request):
        """Run a file operation in a child that holds only the workspace's uid."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            null = os.open("/dev/null", os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            status = 0
            try:
                self.drop_privileges()
                os.chdir(self.repo)
                answer = FILE_OPS[op](request)
            except BaseException as exc:  # noqa: BLE001 - reported to the owner
                answer, status = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}, 1
            data = json.dumps(answer).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
            os._exit(status)
        os.close(w)
        chunks = []
        while chunk := os.read(r, 1 << 20):
            chunks.append(chunk)
        os.close(r)
        os.waitpid(pid, 0)
        self.sweep()
        return json.loads(b"".join(chunks) or b'{"ok": false, "error": "no answer"}')

    def drop_privileges(self):
        os.setgroups([])
        os.setresgid(self.gid, self.gid, self.gid)
        os.setresuid(self.uid, self.uid, self.uid)
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if self.seccomp is not None:
            install_seccomp(self.seccomp)

    # -- commands ------------------------------------------------------------------------------

    def run(self, request):
        limits = request["limits"]
        if self.memory is not None:
            self.memory.set_limit(0, int(limits["memory_mb"]) << 20)
            self.memory.oom_killed(0)
        pipes = [os.pipe() for _ in range(3)]
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            self.child(request, pipes)
        for fd in (pipes[0][0], pipes[1][1], pipes[2][1]):
            os.close(fd)
        stdin = base64.b64decode(request.get("stdin", ""))
        pump = Pump(pipes[0][1], stdin, pipes[1][0], pipes[2][0], limits)
        outcome = pump.until(started + float(limits["wall_s"]), pid, self.kill_all)
        _, status, usage = os.wait4(pid, 0)
        wall = time.monotonic() - started
        leftovers = self.sweep()
        return self.report(outcome, status, usage, wall, leftovers)

    def child(self, request, pipes):
        try:
            os.setsid()
            os.dup2(pipes[0][0], 0)
            os.dup2(pipes[1][1], 1)
            os.dup2(pipes[2][1], 2)
            if self.memory is not None:  # while we may still write the cgroup's files
                os.write(self.cgroup_procs, b"0")
            os.closerange(3, 1 << 16)
            limits = request["limits"]
            set_limits(limits)
            cwd = os.path.join(self.repo, request.get("cwd") or ".")
            self.drop_privileges()
            os.chdir(cwd)
            env = {**self.env, **request.get("env", {})}
            argv = request["argv"]
            os.execvpe(argv[0], argv, env)
        except BaseException as exc:  # noqa: BLE001 - the child never returns into the server
            os.write(2, f"rlhub workspace: could not run the command: {exc}\n".encode())
            os._exit(127)

    def report(self, outcome, status, usage, wall, leftovers):
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -sig
        oom = self.memory.oom_killed(0) if self.memory is not None else False
        err = outcome["err"]
        return {"ok": True, "dispatched": True, "timed_out": outcome["timed_out"],
                "over": outcome["over"], "signal": sig, "exit_code": code,
                "cpu_s": usage.ru_utime + usage.ru_stime, "max_rss_mb": usage.ru_maxrss / 1024,
                "wall_s": wall, "oom": oom, "memory_words": b"MemoryError" in err[-4096:],
                "leftovers": leftovers, "stdout": base64.b64encode(outcome["out"]).decode(),
                "stderr": base64.b64encode(err).decode()}

    def sweep(self, wait_s=5.0):
        """Kill every process of the workspace's uid and reap them all (a zombie still counts
        against the next command's process limit); returns how many were reaped."""
        self.kill_all()
        reaped, deadline = 0, time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break  # every process of the workspace is gone
            if pid == 0:
                time.sleep(0.001)
                continue
            reaped += 1
        return reaped

    def kill_all(self):
        """SIGKILL every process of the workspace's uid (from a helper holding that uid, so
        setsid daemons and double forks die too); reaps only the helper."""
        helper = os.fork()
        if helper == 0:
            try:
                os.setresgid(self.gid, self.gid, self.gid)
                os.setresuid(self.uid, self.uid, self.uid)
                os.kill(-1, signal.SIGKILL)  # every process of the uid, the helper last
            finally:
                os._exit(0)
        os.waitpid(helper, 0)


def is_whiteout(folder, name):
    st = os.lstat(os.path.join(folder, name))
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def opaque(folder):
    for attr in ("trusted.overlay.opaque", "user.overlay.opaque"):
        try:
            if os.getxattr(folder, attr) == b"y":
                return True
        except OSError:
            continue
    return False


def lower_files(lower, rel):
    top = os.path.join(lower, rel)
    found = []
    for dirpath, _, filenames in os.walk(top):
        found += [os.path.relpath(os.path.join(dirpath, n), lower) for n in filenames]
    return found


class Pump:
    """Feed a command's stdin and read its stdout and stderr, capped, until it ends or its
    wall clock runs out (then its process group is killed)."""

    def __init__(self, stdin_fd, stdin, out_fd, err_fd, limits):
        self.cap = int(limits["output_bytes"])
        self.stdin_fd, self.stdin = stdin_fd, memoryview(stdin)
        self.buffers = {out_fd: bytearray(), err_fd: bytearray()}
        self.order = (out_fd, err_fd)
        self.over = False
        if not stdin:
            os.close(stdin_fd)
            self.stdin_fd = None
        else:
            os.set_blocking(stdin_fd, False)

    def until(self, deadline, pid, kill_all):
        """Pump until the output closes; when the command's main process exits, every process
        it left is killed (``kill_all``) so that a background holder of a pipe ends it too."""
        timed_out = False
        exited = os.pidfd_open(pid)
        open_fds = list(self.buffers)
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            writers = [self.stdin_fd] if self.stdin_fd is not None else []
            watched = open_fds + ([exited] if exited is not None else [])
            readable, writable, _ = select.select(watched, writers, [], left)
            if writable:
                self.feed()
            for fd in readable:
                if fd == exited:
                    kill_all()
                    os.close(exited)
                    exited = None
                elif not self.drain(fd):
                    open_fds.remove(fd)
            if self.over:
                break
        if exited is not None:
            os.close(exited)
        if timed_out or self.over:
            kill_group(pid)
            kill_all()
        for fd in self.buffers:
            os.close(fd)
        if self.stdin_fd is not None:
            os.close(self.stdin_fd)
        out, err = (bytes(self.buffers[fd][: self.cap]) for fd in self.order)
        return {"timed_out": timed_out, "over": self.over, "out": out, "err": err}

    def feed(self):
        try:
            sent = os.write(self.stdin_fd, self.stdin[: 1 << 16])
        except (BlockingIOError, BrokenPipeError):
            sent = len(self.stdin)
        self.stdin = self.stdin[sent:]
        if not self.stdin:
            os.close(self.stdin_fd)
            self.stdin_fd = None

    def drain(self, fd):
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return False
        buffer = self.buffers[fd]
        buffer += chunk
        if len(buffer) > self.cap:
            self.over = True
        return True


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def set_limits(limits):
    cpu = max(1, int(float(limits["cpu_s"]) + 0.999))
    mem = int(limits["memory_mb"]) << 20
    disk = int(limits["disk_mb"]) << 20
    for what, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_NPROC, (int(limits["processes"]),) * 2),
        (resource.RLIMIT_FSIZE, (disk, disk)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NOFILE, (256, 256)),
    ):
        resource.setrlimit(what, value)


# -- file operations (run as the workspace's uid, in /repo) ----------------------------------------

def inside(path):
    """``path`` relative to the workspace root, refusing absolute paths and ``..``."""
    parts = [p for p in str(path or ".").split("/") if p not in ("", ".")]
    if str(path or "").startswith("/") or ".." in parts:
        raise ValueError(f"expected a path inside the workspace, found {path!r}")
    return "/".join(parts) or "."


def op_read(request):
    path = inside(request["path"])
    limit = int(request.get("limit", 8 << 20))
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    return {"ok": True, "data": base64.b64encode(data[:limit]).decode(),
            "truncated": len(data) > limit}


def op_write(request):
    path = inside(request["path"])
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    data = base64.b64decode(request["data"])
    if request.get("delete"):
        os.unlink(path)
        return {"ok": True, "bytes": 0}
    with open(path, "wb") as f:
        f.write(data)
    return {"ok": True, "bytes": len(data)}


def op_files(request):
    top = inside(request.get("path", "."))
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            full = os.path.normpath(os.path.join(dirpath, name))
            if stat.S_ISREG(os.lstat(full).st_mode):
                found.append(full)
            if len(found) >= MAX_LIST:
                return {"ok": True, "files": found, "truncated": True}
    return {"ok": True, "files": found, "truncated": False}


FILE_OPS = {"read": op_read, "write": op_write, "files": op_files}


def accept_owner(path, timeout_s=120.0):
    """Serve the first connection to a unix socket at ``path`` on fds 0 and 1 (a container's
    owner connects through a bind-mounted folder); the socket is unlinked once it is taken."""
    import socket

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    listener.settimeout(timeout_s)
    conn, _ = listener.accept()
    os.unlink(path)
    listener.close()
    os.dup2(conn.fileno(), 0)
    os.dup2(conn.fileno(), 1)
    conn.close()


def server_main():
    config = json.loads(sys.argv[1])
    if config.get("listen"):
        accept_owner(config["listen"])
    server = Server(config)
    why = server.serve()
    server.sweep()
    os.write(2, f"rlhub workspace server: exiting ({why})\n".encode())


if __name__ == "__main__" and len(sys.argv) > 1:
    server_main()
