"""The job side of the resident sandbox worker: the zygote and the job children it forks.

Part of the worker's source (``channel.worker_source`` joins ``isolation.py``, ``seccomp.py``,
this module and ``worker.py``): standard library only, Python >= 3.10.

The *zygote*, forked once by the worker at start, does everything job-independent a single time
(stdio objects, environment, signal dispositions, ``no_new_privs``, OOM score, the seccomp
filter, a warm compiler, preloaded modules) and then only forks job children on the worker's
request and reaps them, reporting each one's pid, exit status and rusage in short byte messages.
Forking from the worker's busy event loop instead would cost a copy-on-write fault for each page
the loop writes after every fork, most of a job's CPU time.

A *child* is forked for a free slot ahead of its job (a spare; for a language with a runtime
view of its own, when its job arrives). It puts itself in its own process group, enters its
slot's IPC and network namespaces and memory cgroup, gets a private mount namespace with a fresh
tmpfs on ``/tmp`` (its work dir; the worker gets a reference, so that the namespace is torn down
off the job's path) or a fresh 0700 directory, is shut in its language's view (``enter_view``),
points
stdout/stderr at pipes read by the worker, switches to the slot's own uid (a uid no other running
job has: signals, ``/proc`` and files of other jobs are out of reach and RLIMIT_NPROC counts this
job alone), installs the seccomp filter and blocks on a control socket. Given its job it lowers
its rlimits (CPU, address space, processes, file size, open files), writes its files and runs
the plan the host made from the language's spec (``languages.py``): Python in-process (no
interpreter start-up), other languages by ``execve``, after a compile step with its own budget
(``compile_step``) where the language compiles. The zygote, whose memory every later child
inherits, never sees a job's payload.
"""

import _signal
import _socket
import atexit
import builtins
import gc
import io
import json
import os
import resource
import select
import signal
import socket
import sys
import time
import traceback
import types

try:  # importable as a module; in the worker's source the parts are inlined ahead of this one
    from rlhub.sandbox.isolation import (
        MS_NODEV,
        MS_NOSUID,
        MS_REC,
        SlotNamespaces,
        check,
        libc,
    )
    from rlhub.sandbox.seccomp import install_seccomp, seccomp_program, seccomp_works
except ImportError:
    pass

CLONE_NEWNS = 0x00020000
MS_BIND = 4096
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
COMPILE_REPLAY_BYTES = 1 << 16  # of a failed compile's output, replayed as the job's stderr
SETUP_FAILED = 125  # a child's exit status when it could not start its job (with a reason sent)

CONFIG = {}


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fds_of(ancillary):
    """The file descriptors an ``SCM_RIGHTS`` message (from ``recvmsg``) carried."""
    raw = ancillary[0][2] if ancillary else b""
    return [int.from_bytes(raw[i : i + 4], sys.byteorder) for i in range(0, len(raw) // 4 * 4, 4)]


# Signals the worker ignores (a job must not be able to stop it) and its children restore.
WORKER_IGNORES = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                  signal.SIGUSR2, signal.SIGPIPE)


# -- the job child (forked by the zygote) ---------------------------------------------------------


def child_main(index, uid, workdir, view, ctl, out_w, err_w):
    """Sandbox this fresh child of the zygote for a slot, wait for its job and run it."""
    sock = None
    try:
        sock = _socket.socket(fileno=ctl)
        child_prepare(index, uid, workdir, view, sock, out_w, err_w)
        header, ancillary, _, _ = sock.recvmsg(1 << 16, FDS_SPACE)
        if not header:
            os._exit(0)
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
        if not job_header.get("watch"):
            sock.close()  # the worker reads nothing more from this child
            sock = None
        run_job(job_header, meta, workdir, sock)
    except BaseException as exc:  # noqa: BLE001 - the child must never return into the zygote
        try:
            why = f"job setup failed: {type(exc).__name__}: {exc}"
            os.write(2, f"rlhub sandbox: {why}\n".encode())
            if sock is not None:
                sock.send(b"setup_failed " + why.encode(errors="replace")[:900])
        finally:
            os._exit(SETUP_FAILED)
    os._exit(0)


def child_prepare(index, uid, workdir, view, sock, out_w, err_w):
    """What only this child can do before its job is known; the rest the zygote did once.

    ``view`` (with a mount namespace per job) is the root of the job's language runtime: the job
    gets its tmpfs there and is shut inside it (``chroot``) before it loses its privileges."""
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
        target = (view or "") + "/tmp"
        check(
            libc.mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts.encode()),
            f"mount tmpfs {target}",
        )
        hand_over_mount_ns(sock)
        if view:
            enter_view(view)
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
    close_all_but((sock.fileno(),))  # namespace and cgroup fds included
    os.chdir(workdir)
    if SECCOMP is not None:
        install_seccomp(SECCOMP)
    gc.enable()


def enter_view(root):
    """Shut this child inside ``root`` (a language runtime): its own ``/proc`` and ``/dev`` bound
    there, then ``chroot``; the job that follows can never leave it (it holds no capability)."""
    for name in (b"/proc", b"/dev"):
        check(libc.mount(name, root.encode() + name, None, MS_BIND | MS_REC, None),
              f"bind {name.decode()} into {root}")
    os.chroot(root)
    os.chdir("/")


def hand_over_mount_ns(sock):
    """Send the worker a reference to this child's mount namespace on its control socket.

    Tearing a mount namespace down waits for an RCU grace period; held by the worker, this one
    (with the job's tmpfs) is torn down after the job's result is out, not in the job's exit."""
    fd = os.open("/proc/self/ns/mnt", os.O_RDONLY)
    sock.sendmsg([b"ns"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fd.to_bytes(4, sys.byteorder))])
    os.close(fd)


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


def set_limits(cpu_s, memory_mb, processes, extra_mb=0, disk_mb=None, open_files=256):
    cpu = max(1, int(cpu_s + 0.999))
    mem = (int(memory_mb) + int(extra_mb)) << 20
    disk = int(disk_mb or CONFIG["disk_mb"]) << 20
    for what, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_NPROC, (processes,) * 2),
        (resource.RLIMIT_FSIZE, (disk, disk)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NOFILE, (open_files,) * 2),
    ):
        resource.setrlimit(what, value)


def job_limits(limits, plan):
    set_limits(limits["cpu_s"], limits["memory_mb"], limits["processes"],
               plan.get("address_space_mb", 0), limits.get("disk_mb"),
               limits.get("open_files", 256))


def run_job(header, meta, workdir, sock):
    """Write the job's files, compile it if its language does (a phase of its own), run it."""
    plan, code = meta["plan"], meta.get("code", "")
    write_file(plan["source"], code)
    for name, text in [*plan.get("support", {}).items(), *meta.get("files", {}).items()]:
        if "/" in name:
            os.makedirs(os.path.join(workdir, os.path.dirname(name)), exist_ok=True)
        write_file(os.path.join(workdir, name), text)
    for key, value in [*plan.get("env", {}).items(), *meta.get("env", {}).items()]:
        os.environ[key] = value
    limits, argv = header["limits"], meta.get("argv", [])
    if plan.get("in_process"):
        job_limits(limits, plan)
        run_python(code, argv)
    if plan.get("compile"):
        compile_step(plan, limits, sock)
    job_limits(limits, plan)
    program = [*plan["run"], *argv]
    try:
        os.execvpe(program[0], program, os.environ)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot run {program[0]!r}: {exc.strerror}") from None


def compile_step(plan, limits, sock):
    """Run the compile command as a process group of its own under the compile budget
    (``compile_wall_s``, ``compile_cpu_s``, ``compile_memory_mb``); its output is kept apart
    and becomes the job's stderr only when the compile fails.

    Then tell the worker (``compiled CPU_S``) and wait for its ``go``: it restarts the job's wall
    clock and lowers the job's memory cgroup to the run's limit. A failed compile is told as
    ``compile_failed`` and ends the job; a compiler that could not start is a setup failure."""
    failed_r, failed_w = os.pipe()  # close-on-exec: data on it means exec failed
    log = os.memfd_create("compile")
    pid = os.fork()
    if pid == 0:
        try:
            os.close(failed_r)
            os.setpgid(0, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            set_limits(limits["compile_cpu_s"], limits["compile_memory_mb"],
                       max(limits["processes"], 128), plan.get("compile_address_space_mb", 0),
                       limits.get("disk_mb"), 1024)
            os.execvpe(plan["compile"][0], plan["compile"], os.environ)
        except BaseException as exc:  # noqa: BLE001
            os.write(failed_w, f"cannot run {plan['compile'][0]!r}: {exc}".encode()[:900])
        os._exit(127)
    os.close(failed_w)
    pidfd = os.pidfd_open(pid)
    in_time = select.select([pidfd], [], [], float(limits["compile_wall_s"]))[0]
    for kill in (os.killpg, os.kill):  # the compiler's helpers too, whether it ended or not
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass
    _, status, usage = os.wait4(pid, 0)
    cannot = os.read(failed_r, 1024)
    if cannot:
        raise OSError(cannot.decode(errors="replace"))
    cpu = usage.ru_utime + usage.ru_stime
    if not in_time or status:
        # Told first, then what stopped it, then only the log's head (the host keeps a
        # message's head): a compiler can write gigabytes of diagnostics (g++ on 30,000 nested
        # parentheses), and replaying them whole passed the job's output limit, which made the
        # compile error an output_limit.
        sock.send(b"compile_failed %f" % cpu)
        write_all(2, compile_failure(status, in_time, limits).encode())
        size = os.lseek(log, 0, os.SEEK_END)
        head = os.pread(log, min(size, COMPILE_REPLAY_BYTES, limits["output_bytes"] // 2), 0)
        write_all(2, head)
        if size > len(head):
            write_all(2, b"\n[... %d more bytes of compiler output]\n" % (size - len(head)))
        os._exit(1)
    os.close(log)
    sock.send(b"compiled %f" % cpu)
    if sock.recv(16) != b"go":
        os._exit(SETUP_FAILED)


def compile_failure(status, in_time, limits):
    """The line added to a failed compile's output saying what stopped it, if a limit did."""
    if not in_time:
        return f"rlhub sandbox: the compile step passed its wall limit ({limits['compile_wall_s']} s)\n"
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        return f"rlhub sandbox: the compile step passed its CPU limit ({limits['compile_cpu_s']} s)\n"
    if os.WIFSIGNALED(status):
        return f"rlhub sandbox: the compiler was killed by signal {os.WTERMSIG(status)}\n"
    return ""


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
        """``index uid view dir`` with fds (control socket, stdout, stderr): fork that slot's child."""
        data, ancillary, _, _ = self.sock.recvmsg(1024, FDS_SPACE)
        if not data:
            return False
        fds = fds_of(ancillary)
        index, uid, view, workdir = data.decode().split(" ", 3)
        try:
            pid = os.fork()
        except OSError as exc:  # out of processes or memory: the worker retries, not in a spin
            time.sleep(0.01)
            self.sock.send(f"failed {index} {exc}".encode())
        else:
            if pid == 0:
                self.sock.close()
                child_main(int(index), None if uid == "-" else int(uid), workdir,
                           None if view == "-" else view, *fds)
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
CGROUP_PROCS = []  # per slot, the zygote's fd of the file that joins its memory cgroup
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
    CGROUP_PROCS.extend(open_cgroup_procs())
    program = seccomp_program(**seccomp_policy())
    if program is not None and seccomp_works(program):
        SECCOMP = program
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
    # System V objects are the slot's own and bounded by its memory cgroup, or not allowed at all
    return {"sockets": sockets, "sysv_ipc": "ipc" in SLOT_NS.kinds and bool(CGROUP_PROCS)}


def open_cgroup_procs():
    """The zygote's fds of the file each slot's children write themselves into (v1 ``tasks``,
    v2 ``cgroup.procs``: see ``cgroups.SLOT_FILES`` for why), or []."""
    root = CONFIG.get("cgroup")
    if not root:
        return []
    name = "tasks" if CONFIG.get("cgroup_version") == 1 else "cgroup.procs"
    try:
        return [os.open(f"{root}/s{i}/{name}", os.O_WRONLY) for i in range(CONFIG["slots"])]
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



def make_slot_namespaces():
    """Give each slot the namespaces the host asked for, or none where the kernel refuses."""
    global SLOT_NS
    try:
        SLOT_NS = SlotNamespaces(CONFIG["slots"], CONFIG.get("slot_namespaces", ()))
    except OSError as exc:
        os.write(2, f"rlhub sandbox: no namespaces per slot: {exc}\n".encode())
        SLOT_NS = SlotNamespaces(0, ())
    return list(SLOT_NS.kinds)
