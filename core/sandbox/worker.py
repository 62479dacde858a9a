"""The resident sandbox worker: a fork server that runs jobs in pre-forked, pre-sandboxed children.

Standard library only, Python >= 3.10 (``os.splice``). The ``local`` backend starts it inside
bubblewrap with its source on stdin; the ``docker`` backend runs it as a container's only process
with ``python3 -I -S -c <this source> CONFIG``. No file of it needs to be installed where it runs.

Two processes:

* the *worker* (this module's :func:`main`) runs the event loop: frames from the host, jobs to
  children, output into memfds, wall clocks, sweeps and results. It never forks after start-up;
* the *zygote* (:class:`Zygote`), forked once at start, does everything job-independent a single
  time (stdio objects, environment, signal dispositions, ``no_new_privs``, OOM score, a warm
  compiler) and then only forks job children on the worker's request and reaps them. Forking
  from the busy event loop instead would cost a copy-on-write fault for each page the loop writes
  after every fork, most of a job's CPU time.

Life of a job:

* A *spare* child is forked ahead of time for a free slot. It puts itself in its own process
  group, gets a private mount namespace with a fresh tmpfs on ``/tmp`` (its work dir) or a fresh
  0700 directory, points stdout/stderr at pipes read by the worker, switches to the slot's own
  uid (a uid no other running job has: signals, ``/proc`` and files of other jobs are out of
  reach and RLIMIT_NPROC counts this job alone) and then blocks on a control socket.
* The host sends a frame: a JSON header (id, language, limits, blob sizes) then two opaque blobs,
  the job (code, files, argv, env as JSON) and its stdin. The worker copies the blobs into
  memfds without decoding them and hands the fds to the spare; the zygote, whose memory every
  later child inherits, never sees a job's payload.
* The child lowers its rlimits (CPU, address space, processes, file size, open files), writes its
  files and runs: Python in-process (no interpreter start-up), other languages by ``execve``.
* The worker enforces the wall-clock limit and the output caps. When the zygote reports the
  child's exit status and rusage, the worker kills everything left of the job: its process
  group, then every process with the slot's uid (the zygote is a child subreaper, so orphans of
  ``setsid`` and double forks come back to it and are reaped).
* It answers with a JSON header (exit status, signal, flags, cpu, rss) and the captured output.

Frames are ``u32 big-endian header length | header JSON | blobs``. The worker ignores the usual
terminating signals; it exits when its input closes or the zygote dies.
"""

import _signal
import _socket
import atexit
import builtins
import ctypes
import errno
import gc
import io
import json
import os
import resource
import select
import selectors
import signal
import socket
import sys
import time
import traceback
import types

try:  # importable as a module; in the worker's source both parts are inlined ahead of this one
    from rlhub.sandbox.isolation import (
        MS_NODEV,
        MS_NOSUID,
        NS_FLAGS,
        SlotMemory,
        SlotNamespaces,
        check,
        hide_other_processes,
        libc,
    )
    from rlhub.sandbox.seccomp import install_seccomp, seccomp_program, seccomp_works
except ImportError:
    pass

CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
MEMORY_WORDS = (
    b"MemoryError",
    b"bad_alloc",
    b"Cannot allocate memory",
    b"out of memory",
    b"JavaScript heap out of memory",
    b"Fatal process OOM",
)
# V8 reserves ~800 MiB of address space before running anything; node's heap is capped by
# --max-old-space-size instead, and its address-space limit is raised by this much.
NODE_EXTRA_AS_MB = 1024
SOURCES = {
    "python": "main.py",
    "bash": "main.sh",
    "javascript": "main.js",
    "c": "main.c",
    "cpp": "main.cpp",
}
COMPILE_FAILED = 97

CONFIG = {}


# -- framing ---------------------------------------------------------------------------------------


def read_exact(fd, n):
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def copy_into(src, dst, n):
    """Copy ``n`` bytes from fd ``src`` to fd ``dst``: splice when one side is a pipe."""
    try:
        while n:
            moved = os.splice(src, dst, n)
            if not moved:
                raise EOFError
            n -= moved
        return
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS):
            raise
    buf = bytearray(min(n, 1 << 20))
    while n:
        got = os.readv(src, [memoryview(buf)[: min(n, len(buf))]])
        if not got:
            raise EOFError
        write_all(dst, memoryview(buf)[:got])
        n -= got
    buf[:] = bytes(len(buf))


def fds_of(ancillary):
    """The file descriptors an ``SCM_RIGHTS`` message (from ``recvmsg``) carried."""
    raw = ancillary[0][2] if ancillary else b""
    return [int.from_bytes(raw[i : i + 4], sys.byteorder) for i in range(0, len(raw) // 4 * 4, 4)]


def send_out(fd, src, n):
    """Send ``n`` bytes of memfd ``src`` (from offset 0) to ``fd``."""
    offset = 0
    while offset < n:
        sent = os.sendfile(fd, src, offset, n - offset)
        if not sent:
            raise EOFError
        offset += sent


# Signals the worker ignores (a job must not be able to stop it) and its children restore.
WORKER_IGNORES = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                  signal.SIGUSR2, signal.SIGPIPE)


# -- the job child (forked by the zygote) ---------------------------------------------------------


def child_main(index, uid, workdir, ctl, out_w, err_w):
    """Sandbox this fresh child of the zygote for a slot, wait for its job and run it."""
    try:
        child_prepare(index, uid, workdir, ctl, out_w, err_w)
        sock = _socket.socket(fileno=ctl)
        header, ancillary, _, _ = sock.recvmsg(1 << 16, FDS_SPACE)
        if not header:
            os._exit(0)
        sock.close()
        meta_fd, *stdin = fds_of(ancillary)
        job_header = json.loads(header)
        meta = (
            json.loads(os.pread(meta_fd, job_header["meta_len"], 0))
            if job_header["meta_len"]
            else {}
        )
        os.close(meta_fd)
        for fd in stdin:
            os.dup2(fd, 0)
            os.close(fd)
        run_job(job_header, meta, workdir)
    except BaseException as exc:  # noqa: BLE001 - the child must never return into the zygote
        try:
            os.write(2, f"rlhub sandbox: job setup failed: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(125)
    os._exit(0)


def child_prepare(index, uid, workdir, ctl, out_w, err_w):
    """What only this child can do before its job is known; the rest the zygote did once."""
    os.setpgid(0, 0)
    _signal.set_wakeup_fd(-1)
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)  # not signal.signal: its enum wrapping costs
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # ~60 copy-on-write faults here
    if SLOT_NS.slots:  # the slot's own IPC (and network) namespace
        SLOT_NS.enter(SLOT_NS.slots[index])
    if CGROUP_PROCS:  # into the slot's memory cgroup, while we may still write its files
        os.write(CGROUP_PROCS[index], b"0")
    if CONFIG["mount_ns"]:
        # / is already private (the worker made it so), so the copy needs no propagation change.
        check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        opts = f"size={CONFIG['disk_mb']}m,nr_inodes=8192,mode=0700,uid={uid or 0},gid={uid or 0}"
        check(
            libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, opts.encode()),
            "mount tmpfs /tmp",
        )
    else:
        os.mkdir(workdir, 0o700)
        if uid is not None:
            os.chown(workdir, uid, uid)
        use_workdir(workdir)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.dup2(DEVNULL, 0)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    close_all_but((ctl,))  # namespace and cgroup fds included
    os.chdir(workdir)
    if SECCOMP is not None:
        install_seccomp(SECCOMP)
    gc.enable()


def close_all_but(keep):
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def use_workdir(workdir):
    """Point the job's environment, ``sys.path`` and ``__main__`` at ``workdir``."""
    for key in ("HOME", "TMPDIR", "PWD"):
        os.environ[key] = workdir
    sys.path[0] = workdir
    MAIN.__file__ = os.path.join(workdir, "main.py")


def write_file(path, text):
    """Write ``text`` as UTF-8 (lone surrogates kept); cheaper in a fresh child than ``open()``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        write_all(fd, text.encode("utf-8", "surrogateescape"))
    finally:
        os.close(fd)


def set_limits(limits, lang):
    cpu = max(1, int(limits["cpu_s"] + 0.999))
    mem = (int(limits["memory_mb"]) + (NODE_EXTRA_AS_MB if lang == "javascript" else 0)) << 20
    disk = int(limits.get("disk_mb", CONFIG["disk_mb"])) << 20
    for what, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_NPROC, (limits["processes"],) * 2),
        (resource.RLIMIT_FSIZE, (disk, disk)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NOFILE, (limits.get("open_files", 256),) * 2),
    ):
        resource.setrlimit(what, value)


def run_job(header, meta, workdir):
    lang = header["lang"]
    source = SOURCES[lang]
    write_file(source, meta.get("code", ""))
    for name, text in meta.get("files", {}).items():
        if "/" in name:
            os.makedirs(os.path.join(workdir, os.path.dirname(name)), exist_ok=True)
        write_file(os.path.join(workdir, name), text)
    for key, value in meta.get("env", {}).items():
        os.environ[key] = value
    env = os.environ
    set_limits(header["limits"], lang)
    argv = meta.get("argv", [])
    if lang == "python":
        run_python(meta.get("code", ""), argv)
    tools = CONFIG["tools"]
    if lang == "bash":
        os.execve(tools["bash"], [tools["bash"], source, *argv], env)
    if lang == "javascript":
        heap = max(16, int(header["limits"]["memory_mb"] * 3 // 4))
        os.execve(
            tools["node"], [tools["node"], f"--max-old-space-size={heap}", source, *argv], env
        )
    compiler = tools["gcc" if lang == "c" else "g++"]
    script = f'"$0" -O1 -pipe -o main {source} -lm >&2 || exit {COMPILE_FAILED}; exec ./main "$@"'
    os.execve(tools["sh"], [tools["sh"], "-c", script, compiler, *argv], env)


def run_python(code, argv):
    """Run ``code`` as ``__main__`` in this process, the way ``python main.py`` would."""
    sys.argv = ["main.py", *argv]
    sys.modules["__main__"] = MAIN
    code_status = 0
    try:
        program = COMPILED.get(code) or compile(code, "main.py", "exec")
        exec(program, MAIN.__dict__)  # noqa: S102 - the job itself  # noqa: S102 - the job itself
    except SystemExit as exc:
        code_status = exit_status_of(exc)
    except BaseException:  # noqa: BLE001 - reported like the interpreter does
        traceback.print_exc()
        code_status = 1
    os._exit(shutdown_python(code_status))


def exit_status_of(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def shutdown_python(status):
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except SystemExit as exc:
        return exit_status_of(exc)
    except BaseException:  # noqa: BLE001 - a failing flush (closed stdout, EFBIG) is an error
        return status or 120
    return status


# -- the zygote ------------------------------------------------------------------------------------


class Zygote:
    """Forks a child per request of the worker, says its pid, and reports its exit status and
    rusage once reaped (it is the children's subreaper); see the module docstring."""

    def __init__(self, sock):
        self.sock = sock
        self.slots = {}  # pid -> slot index
        self.poll = select.poll()
        self.wake_r, wake_w = os.pipe()
        for fd in (self.wake_r, wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.poll.register(sock.fileno(), select.POLLIN)
        self.poll.register(self.wake_r, select.POLLIN)

    # Everything below runs once per job, with children sharing our pages: each page it writes
    # costs a copy-on-write fault, so it sticks to plain calls and small byte messages.
    def serve(self):
        sock = self.sock.fileno()
        while True:
            for fd, _ in self.poll.poll():
                if fd != sock:
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                    self.reap()
                elif not self.spawn():
                    os._exit(0)  # the worker is gone; children die with us (PDEATHSIG)

    def spawn(self):
        """``index uid dir`` with fds (control socket, stdout, stderr): fork that slot's child."""
        data, ancillary, _, _ = self.sock.recvmsg(1024, FDS_SPACE)
        if not data:
            return False
        fds = fds_of(ancillary)
        index, uid, workdir = data.decode().split(" ", 2)
        try:
            pid = os.fork()
        except OSError as exc:  # out of processes or memory: the worker retries, not in a spin
            time.sleep(0.01)
            self.sock.send(f"failed {index} {exc}".encode())
        else:
            if pid == 0:
                self.sock.close()
                child_main(int(index), None if uid == "-" else int(uid), workdir, *fds)
            try:
                os.setpgid(pid, pid)  # the child does it too; whoever runs first wins the race
            except OSError:
                pass
            self.slots[pid] = index
            self.sock.send(f"forked {index} {pid}".encode())
        for fd in fds:
            os.close(fd)
        return True

    def reap(self):
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                return
            index = self.slots.pop(pid, None)
            if index is not None:  # not a leftover of a job (those the worker only counts)
                cpu = usage.ru_utime + usage.ru_stime
                self.sock.send(f"exit {index} {status} {cpu} {usage.ru_maxrss}".encode())


FDS_SPACE = socket.CMSG_SPACE(3 * 4)
DEVNULL = -1  # the zygote's /dev/null, a job's stdin when it has none
SECCOMP = None  # the zygote's seccomp program, when this kernel and architecture take it
SLOT_NS = None  # the slots' namespaces (SlotNamespaces), made by the worker before the zygote
CGROUP_PROCS = []  # per slot, the zygote's fd of its memory cgroup's cgroup.procs
MAIN = types.ModuleType("__main__")
COMPILED = {}  # source -> code object, for the programs the host says are sent often


def zygote_main(sock):
    """Set up what every job child shares, then fork children on the worker's requests."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    for sig in WORKER_IGNORES:
        signal.signal(sig, signal.SIG_DFL)  # what a job's processes start with
    global DEVNULL, SECCOMP
    close_all_but((sock.fileno(), *SLOT_NS.fds()))
    DEVNULL = os.open(os.devnull, os.O_RDWR)
    os.dup2(DEVNULL, 0)
    os.dup2(DEVNULL, 1)  # the worker's transport (fds 0 and 1 in the local backend) stays out
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")  # jobs are what the OOM killer should pick, and this zygote before us
    except OSError:
        pass
    subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # also what lets an unprivileged job take seccomp
    program = seccomp_program(**seccomp_policy())
    if program is not None and seccomp_works(program):
        SECCOMP = program
    CGROUP_PROCS.extend(open_cgroup_procs())
    sys.stdin = io.TextIOWrapper(
        io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="surrogateescape"
    )
    sys.stdout = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="surrogateescape"
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    sys.path.insert(0, "/tmp")
    sys.path += extra_paths()
    MAIN.__builtins__ = builtins
    if CONFIG["mount_ns"]:
        use_workdir("/tmp")
    compile("import sys\nprint(sys.argv)\n", "main.py", "exec")  # a first compile costs ~1 ms
    for name in CONFIG.get("preload", ()):  # imported once here instead of in every job
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - not on this interpreter: jobs import it themselves
            pass
    for source in CONFIG.get("warm_programs", ()):
        COMPILED[source] = compile(source, "main.py", "exec")
    zygote = Zygote(sock)
    sock.send(b"ready %d %d %d" % (subreaper, SECCOMP is not None, bool(CGROUP_PROCS)))
    gc.collect()
    gc.freeze()  # children's collectors then never walk (and so never copy) these pages
    gc.disable()
    zygote.serve()


def start_zygote():
    """Fork the zygote (before the host's transport exists); returns our end of its socket."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        ours.close()
        try:
            zygote_main(theirs)
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
        os._exit(1)
    theirs.close()
    ready = ours.recv(1024).split()
    if ready[:1] != [b"ready"]:
        raise OSError(f"the sandbox zygote did not start: {ready}")
    flags = [flag == b"1" for flag in ready[1:]]
    return ours, pid, dict(zip(("subreaper", "seccomp", "memory_cgroup"), flags))


def seccomp_policy():
    """What jobs may do with sockets and System V IPC, given the namespaces each slot has."""
    if "net" in SLOT_NS.kinds:
        sockets = "all"  # loopback, abstract unix sockets and netlink are the slot's own
    else:
        sockets = "ip" if CONFIG.get("network") else "none"
    return {"sockets": sockets, "sysv_ipc": "ipc" in SLOT_NS.kinds}


def open_cgroup_procs():
    """The zygote's fds of each slot's ``cgroup.procs`` (children write themselves in), or []."""
    root = CONFIG.get("cgroup")
    if not root:
        return []
    try:
        return [os.open(f"{root}/s{i}/cgroup.procs", os.O_WRONLY) for i in range(CONFIG["slots"])]
    except OSError as exc:
        os.write(2, f"rlhub sandbox: no memory cgroup for jobs: {exc}\n".encode())
        return []


def extra_paths():
    """Where jobs import libraries from beyond the standard library (the zygote's sys.path)."""
    paths = list(CONFIG.get("libraries") or ())
    if CONFIG.get("site_packages"):  # a container image's own packages are its declared runtime
        import site

        paths += [p for p in site.getsitepackages() if os.path.isdir(p)]
    if paths:
        os.environ["PYTHONPATH"] = ":".join(paths)  # for interpreters the job starts
    return paths


# -- the worker ------------------------------------------------------------------------------------


class Slot:
    """One concurrency slot: a uid (or 1-slot mode), a spare child or a running job."""

    def __init__(self, index):
        self.index = index
        base = CONFIG["uid_base"]
        self.uid = None if base is None else base + index
        self.busy = False  # a spare or a job holds it
        self.pid = None  # known once the zygote says so
        self.job = None
        self.dir = None
        self.seq = 0


class Job:
    """A job dispatched to a slot's child: its pipes, memfds for output, deadline and flags."""

    def __init__(self, header, slot, out_r, err_r):
        self.id = header["id"]
        self.header = header
        self.slot = slot
        self.pipes = {out_r: 0, err_r: 1}
        self.open = {out_r, err_r}
        self.mem = [os.memfd_create("out"), os.memfd_create("err")]
        self.size = [0, 0]
        self.cap = int(header["limits"]["output_bytes"])
        self.started = time.monotonic()
        self.deadline = self.started + float(header["limits"]["wall_s"])
        self.timed_out = False
        self.over = False
        self.dispatched = False
        self.oom_kills = 0  # the slot's OOM-kill count when the job started
        self.why = ""  # why it could not be dispatched, when the worker knows


class Worker:
    """The event loop: host frames in, jobs to spares, output into memfds, results out."""

    def __init__(self, rfd, wfd, zygote, zygote_pid, memory=None):
        self.rfd, self.wfd = rfd, wfd
        self.zygote, self.zygote_pid = zygote, zygote_pid
        self.memory = memory  # SlotMemory, or None where jobs have no memory cgroup
        self.slots = [Slot(i) for i in range(CONFIG["slots"])]
        self.spare = None  # (slot, ctl socket, out_r, err_r)
        self.queue = []
        self.by_fd = {}
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.rfd, selectors.EVENT_READ, "host")
        self.sel.register(zygote.fileno(), selectors.EVENT_READ, "zygote")

    # spares ---------------------------------------------------------------------------------------
    def make_spare(self):
        """Ask the zygote for a child for a free slot; jobs may be sent to it right away."""
        if self.spare is not None:
            return
        slot = next((s for s in self.slots if not s.busy), None)
        if slot is None:
            return
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        slot.seq += 1
        slot.busy, slot.pid = True, None
        slot.dir = f"{CONFIG['jobs_dir']}/s{slot.index}-{slot.seq}"
        if CONFIG.get("slot_tmpfs"):  # a tmpfs of its own per slot, made by the container
            slot.dir = f"{CONFIG['jobs_dir']}/s{slot.index}/j{slot.seq}"
        if CONFIG["mount_ns"]:
            slot.dir = "/tmp"  # its own tmpfs there
        uid = "-" if slot.uid is None else slot.uid
        request = f"{slot.index} {uid} {slot.dir}".encode()
        socket.send_fds(self.zygote, [request], [child.fileno(), out_w, err_w])
        child.close()
        os.close(out_w)
        os.close(err_w)
        self.spare = (slot, parent, out_r, err_r)

    def on_zygote(self):
        """``forked INDEX PID``, ``exit INDEX STATUS CPU_S MAX_RSS_KB`` or ``failed INDEX WHY``."""
        data = self.zygote.recv(1024)
        if not data:
            raise EOFError("the zygote died")
        op, index, rest = data.decode().split(" ", 2)
        slot = self.slots[int(index)]
        if op == "forked":
            slot.pid = int(rest)
            if slot.job is not None and (slot.job.timed_out or slot.job.over):
                self.kill_job(slot.job)  # the limit was hit before we knew the pid
        elif op == "exit":
            status, cpu, rss = rest.split()
            self.finish(slot, int(status), float(cpu), int(rss))
        else:  # the zygote could not fork (process limit, memory)
            os.write(2, f"rlhub sandbox: fork failed: {rest}\n".encode())
            if slot.job is not None:
                slot.job.dispatched = False
            self.finish(slot, 125 << 8, 0.0, 0)

    # host input -----------------------------------------------------------------------------------
    def read_frame(self):
        size = int.from_bytes(read_exact(self.rfd, 4), "big")
        header = json.loads(read_exact(self.rfd, size))
        if header.get("op") == "ping":
            self.reply({"op": "pong", "id": header.get("id")}, [])
            return
        mem = []  # the job blob, then stdin if any (without, the job reads /dev/null)
        for name, n in (("meta", header["meta_len"]), ("stdin", header["stdin_len"])):
            if n or name == "meta":
                mem.append(os.memfd_create(name))
                copy_into(self.rfd, mem[-1], n)
                os.lseek(mem[-1], 0, os.SEEK_SET)
        self.queue.append((header, mem))
        self.dispatch()

    def dispatch(self):
        while self.queue:
            self.make_spare()
            if self.spare is None:
                return
            header, mem = self.queue.pop(0)
            slot, ctl, out_r, err_r = self.spare
            self.spare = None
            job = Job(header, slot, out_r, err_r)
            slot.job = job
            for fd in (out_r, err_r):
                os.set_blocking(fd, False)
                self.sel.register(fd, selectors.EVENT_READ, "out")
                self.by_fd[fd] = job
            try:
                self.bound_memory(job)
                socket.send_fds(ctl, [json.dumps(header).encode()], mem)
                job.dispatched = True
            except OSError:
                pass  # the spare dies or was never told: its exit reports an infrastructure error
            ctl.close()
            for fd in mem:
                os.close(fd)
        self.make_spare()

    def bound_memory(self, job):
        """Bound the job's slot cgroup to its memory limit plus its work dir (tmpfs is RAM)."""
        if self.memory is None:
            return
        index, limits = job.slot.index, job.header["limits"]
        try:
            self.memory.set_limit(index, (int(limits["memory_mb"]) + CONFIG["disk_mb"]) << 20)
            job.oom_kills = self.memory.oom_kills(index)
        except OSError as exc:
            job.why = f"could not set the job's memory limit: {exc}"
            raise

    # output ---------------------------------------------------------------------------------------
    def pump(self, job, fd):
        """Move what ``fd`` holds into the job's memfd; kill the job when it passes its cap."""
        which = job.pipes[fd]
        while fd in job.open:
            room = job.cap + 1 - job.size[which]
            if room <= 0:
                if not job.over:
                    job.over = True
                    self.kill_job(job)
                self.close_pipe(job, fd)
                return
            try:
                moved = os.splice(
                    fd, job.mem[which], min(room, 1 << 20), flags=os.SPLICE_F_NONBLOCK
                )
            except BlockingIOError:
                return
            if not moved:
                self.close_pipe(job, fd)
                return
            job.size[which] += moved

    def close_pipe(self, job, fd):
        if fd in job.open:
            job.open.discard(fd)
            self.sel.unregister(fd)
            del self.by_fd[fd]
            os.close(fd)

    # ending jobs ----------------------------------------------------------------------------------
    def kill_job(self, job):
        pid = job.slot.pid
        if pid is None:
            return  # not forked yet: killed as soon as the zygote says which pid it is
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.sweep(job.slot, wait=False)

    def sweep(self, slot, wait=True):
        """SIGKILL every process of ``slot``'s job; with ``wait``, until none is left."""
        deadline = time.monotonic() + 2.0
        killed = set()
        while True:
            found = self.kill_uid(slot) if slot.uid is not None else self.kill_orphans()
            killed.update(found)
            if not wait or not found or time.monotonic() > deadline:
                return len(killed)
            time.sleep(0.0005)  # the zygote, their subreaper, reaps them

    def kill_uid(self, slot):
        """SIGKILL every process whose real uid is the slot's; returns their pids."""
        found = []
        known = {1, os.getpid(), self.zygote_pid}
        known.update(s.pid for s in self.slots if s is not slot)  # other uids by construction
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in known:
                continue
            try:
                with open(f"/proc/{name}/status", "rb") as f:
                    status = f.read()
                uid = int(status[status.index(b"\nUid:") + 5 :].split(None, 1)[0])
                if uid != slot.uid:
                    continue
                os.kill(int(name), signal.SIGKILL)
                found.append(int(name))
            except (OSError, ValueError):
                continue
        return found

    def kill_orphans(self):
        """One-slot mode: SIGKILL every child of the zygote but the slot's own (reaped) main."""
        found = []
        try:
            with open(f"/proc/{self.zygote_pid}/task/{self.zygote_pid}/children") as f:
                children = [int(p) for p in f.read().split()]
        except OSError:
            return found
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                found.append(pid)
            except OSError:
                pass
        return found

    def finish(self, slot, status, cpu_s, max_rss_kb):
        job = slot.job
        leftovers = self.sweep(slot) + SLOT_NS.clear_ipc(slot.index)  # processes, IPC objects
        if job is None:  # a spare died before it got a job
            self.drop_spare(slot)
        else:
            for fd in list(job.open):
                self.pump(job, fd)
                self.close_pipe(job, fd)
            oom = job.dispatched and self.memory is not None and (
                self.memory.oom_kills(slot.index) > job.oom_kills)
            self.report(job, status, cpu_s, max_rss_kb, leftovers, oom)
        if not CONFIG["mount_ns"]:
            remove_tree(slot.dir)
        slot.busy, slot.pid, slot.job = False, None, None
        self.dispatch()

    def drop_spare(self, slot):
        if self.spare is not None and self.spare[0] is slot:
            _, ctl, out_r, err_r = self.spare
            ctl.close()
            os.close(out_r)
            os.close(err_r)
            self.spare = None

    def report(self, job, status, cpu_s, max_rss_kb, leftovers, oom=False):
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        code = -sig if sig else os.WEXITSTATUS(status)
        sizes = [min(n, job.cap) for n in job.size]
        err_tail = os.pread(job.mem[1], 4096, max(0, sizes[1] - 4096))
        header = {
            "op": "result",
            "id": job.id,
            "exit_code": code,
            "signal": sig,
            "timed_out": job.timed_out,
            "over": job.over,
            "leftovers": leftovers,
            "dispatched": job.dispatched,
            "wall_s": time.monotonic() - job.started,
            "cpu_s": cpu_s,
            "max_rss_mb": max_rss_kb / 1024,
            "memory_words": any(w in err_tail for w in MEMORY_WORDS),
            "oom": oom,  # the OOM killer killed one of the job's processes
            "why": job.why,
            "compile_error": job.header["lang"] in ("c", "cpp") and code == COMPILE_FAILED,
            "out_len": sizes[0],
            "err_len": sizes[1],
        }
        self.reply(header, list(zip(job.mem, sizes)))
        for fd in job.mem:
            os.close(fd)

    def reply(self, header, blobs):
        data = json.dumps(header).encode()
        write_all(self.wfd, len(data).to_bytes(4, "big") + data)
        for fd, n in blobs:
            send_out(self.wfd, fd, n)

    def kill_all(self):
        for slot in self.slots:
            if slot.job is not None:
                self.kill_job(slot.job)

    # timeouts -------------------------------------------------------------------------------------
    def next_timeout(self):
        deadlines = [
            s.job.deadline for s in self.slots if s.job is not None and not s.job.timed_out
        ]
        return None if not deadlines else max(0.0, min(deadlines) - time.monotonic())

    def expire(self):
        now = time.monotonic()
        for slot in self.slots:
            job = slot.job
            if job is not None and not job.timed_out and now >= job.deadline:
                job.timed_out = True
                self.kill_job(job)

    def serve(self):
        try:
            while True:
                for key, _ in self.sel.select(self.next_timeout()):
                    if key.data == "host":
                        self.read_frame()
                    elif key.data == "zygote":
                        self.on_zygote()
                    else:
                        job = self.by_fd.get(key.fd)
                        if job is not None:
                            self.pump(job, key.fd)
                self.expire()
        except EOFError:  # the host closed our input, or the zygote died
            self.kill_all()


def remove_tree(path):
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def probe():
    """Protections this worker could put in place, told to the host once at start."""
    found = {"no_nested_userns": False}
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of a dead zygote come back to us
    if CONFIG.get("own_userns"):  # never on the host: this sysctl is per user namespace
        try:
            with open("/proc/sys/user/max_user_namespaces", "w") as f:
                f.write("0")
            found["no_nested_userns"] = True
        except OSError:
            pass
    return found


def make_slot_namespaces():
    """Give each slot the namespaces the host asked for, or none where the kernel refuses."""
    global SLOT_NS
    try:
        SLOT_NS = SlotNamespaces(CONFIG["slots"], CONFIG.get("slot_namespaces", ()))
    except OSError as exc:
        os.write(2, f"rlhub sandbox: no namespaces per slot: {exc}\n".encode())
        SLOT_NS = SlotNamespaces(0, ())
    return list(SLOT_NS.kinds)


def installed_libraries():
    """The distributions jobs can import here (a container image's site-packages)."""
    import importlib.metadata
    import site

    paths = [p for p in site.getsitepackages() if os.path.isdir(p)]
    return sorted({d.metadata["Name"] for d in importlib.metadata.distributions(path=paths)})


def open_transport():
    listen = CONFIG.get("listen")
    if not listen:
        return 0, 1
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(listen)
    os.chmod(listen, 0o666)
    server.listen(1)
    conn, _ = server.accept()
    os.unlink(listen)
    server.close()
    fd = conn.detach()
    return fd, fd


def main():
    CONFIG.update(json.loads(sys.argv[1]))
    for sig in WORKER_IGNORES:
        signal.signal(sig, signal.SIG_IGN)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    found = probe()
    os.makedirs(CONFIG["jobs_dir"], mode=0o711, exist_ok=True)
    if CONFIG["mount_ns"]:  # once here, so no job's mount namespace has to change propagation
        check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    found["hidden_processes"] = bool(CONFIG.get("hide_processes")) and hide_other_processes()
    found["slot_namespaces"] = make_slot_namespaces()
    zygote, zygote_pid, protections = start_zygote()
    found.update(protections)
    memory = None
    if found["memory_cgroup"]:
        memory = SlotMemory(CONFIG["cgroup"], CONFIG["cgroup_version"], CONFIG["slots"])
    found["libraries"] = installed_libraries() if CONFIG.get("site_packages") else []
    rfd, wfd = open_transport()
    worker = Worker(rfd, wfd, zygote, zygote_pid, memory)
    worker.reply({"op": "ready", "pid": os.getpid(), **found}, [])
    worker.make_spare()
    worker.serve()


if __name__ == "__main__":
    main()
