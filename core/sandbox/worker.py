"""The resident sandbox worker: a fork server that runs jobs in pre-forked, pre-sandboxed children.

Standard library only, Python >= 3.10 (``os.splice``). Its source is four parts joined in order
(``channel.worker_source``): ``isolation.py``, ``seccomp.py``, ``zygote.py`` and this module. The
``local`` backend starts it inside bubblewrap with the source on stdin; the ``docker`` backend
runs it as a container's only process with ``python3 -I -S -c <source> CONFIG``. No file of it
needs to be installed where it runs.

Two processes: the *worker* (this module's :func:`main`) runs the event loop (frames from the
host, jobs to children, output into memfds, wall clocks, sweeps and results) and never forks
after start-up; the *zygote* (``zygote.py``) forks the job children.

At start the worker hides other uids' processes in ``/proc`` and makes each slot its own IPC and
network namespace where the host asks (``isolation.py``), then forks the zygote. Life of a job:

* A *spare* child is forked ahead of time for a free slot and sandboxes itself (see
  ``zygote.py``), then blocks on a control socket.
* The host sends a frame: a JSON header (id, language, limits, blob sizes) then two opaque blobs,
  the job (code, files, argv, env as JSON) and its stdin. The worker copies the blobs into
  memfds without decoding them, sets the slot's memory cgroup to the job's ``memory_mb`` plus
  its work dir, and hands the fds to the spare.
* The worker enforces the wall-clock limit and the output caps. When the zygote reports the
  child's exit status and rusage, the worker kills everything left of the job (its process
  group, then every process with the slot's uid; the zygote is a child subreaper, so orphans of
  ``setsid`` and double forks come back to it and are reaped), removes every System V IPC object
  left in the slot's namespace, and reads the slot's OOM-kill count.
* It answers with a JSON header (exit status, signal, flags, cpu, rss, leftovers, OOM kill) and
  the captured output. Where each job has a mount namespace, the slot is free again once the
  releaser thread has torn that namespace (and the job's tmpfs) down: a teardown waits for an RCU
  grace period, which the result need not wait for.

Frames are ``u32 big-endian header length | header JSON | blobs``. The worker ignores the usual
terminating signals; it exits when its input closes or the zygote dies.
"""

import errno
import json
import os
import selectors
import signal
import socket
import sys
import time

try:  # importable as a module; in the worker's source the parts are inlined ahead of this one
    from rlhub.sandbox.isolation import (
        MS_PRIVATE,
        MS_REC,
        SlotMemory,
        check,
        hide_other_processes,
        libc,
    )
    from rlhub.sandbox.zygote import (
        CONFIG,
        FDS_SPACE,
        PR_SET_CHILD_SUBREAPER,
        PR_SET_DUMPABLE,
        SLOT_NS,
        WORKER_IGNORES,
        fds_of,
        make_slot_namespaces,
        start_zygote,
        write_all,
    )
except ImportError:
    pass

MEMORY_WORDS = (b"MemoryError", b"Cannot allocate memory", b"out of memory")


def memory_words(header):
    """What in a failed job's stderr says it ran out of memory: any runtime's common words, and
    its language's own (``Language.memory_words``)."""
    return (*MEMORY_WORDS, *(w.encode() for w in header.get("memory_words", ())))


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


def send_out(fd, src, n):
    """Send ``n`` bytes of memfd ``src`` (from offset 0) to ``fd``."""
    offset = 0
    while offset < n:
        sent = os.sendfile(fd, src, offset, n - offset)
        if not sent:
            raise EOFError
        offset += sent


# -- the worker ------------------------------------------------------------------------------------


class Slot:
    """One concurrency slot: a uid (or 1-slot mode), a spare child or a running job."""

    def __init__(self, index):
        self.index = index
        base = CONFIG["uid_base"]
        self.uid = None if base is None else base + index
        self.busy = False  # a spare, a job or its mount namespace (being torn down) holds it
        self.ctl = None  # the control socket of its child
        self.pid = None  # known once the zygote says so
        self.job = None
        self.dir = None
        self.seq = 0
        self.view = None  # the language runtime its child is shut in (None: the worker's own)
        self.ns_fds = []  # mount namespace references the worker read off its control socket


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
        self.why = ""  # why it could not be dispatched, when the worker knows
        self.compile_error = False
        self.compile_s = 0.0
        self.compile_cpu = 0.0
        if header.get("compiled"):  # the compile phase's clock; the run's starts at "compiled"
            self.deadline = self.started + float(header["limits"]["compile_wall_s"]) + 5.0


class Worker:
    """The event loop: host frames in, jobs to spares, output into memfds, results out."""

    def __init__(self, rfd, wfd, zygote, zygote_pid, memory=None):
        self.rfd, self.wfd = rfd, wfd
        self.releaser = Releaser() if CONFIG["mount_ns"] else None
        self.zygote, self.zygote_pid = zygote, zygote_pid
        self.memory = memory  # SlotMemory, or None where jobs have no memory cgroup
        self.slots = [Slot(i) for i in range(CONFIG["slots"])]
        self.spares = {}  # view -> (slot, ctl socket, out_r, err_r); None: the worker's own root
        self.queue = []
        self.by_fd = {}
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.rfd, selectors.EVENT_READ, "host")
        self.sel.register(zygote.fileno(), selectors.EVENT_READ, "zygote")
        if self.releaser is not None:
            self.sel.register(self.releaser.done_r, selectors.EVENT_READ, "released")

    # spares ---------------------------------------------------------------------------------------
    def make_spare(self, view=None):
        """Ask the zygote for a child for a free slot, shut in ``view`` (a language runtime) or
        not; jobs may be sent to it right away. Returns it, or None when every slot is busy."""
        if view in self.spares:
            return self.spares[view]
        slot = next((s for s in self.slots if not s.busy), None)
        if slot is None:
            return None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        slot.seq += 1
        slot.busy, slot.pid, slot.ctl = True, None, parent
        slot.dir = f"{CONFIG['jobs_dir']}/s{slot.index}-{slot.seq}"
        if CONFIG.get("slot_tmpfs"):  # a tmpfs of its own per slot, made by the container
            slot.dir = f"{CONFIG['jobs_dir']}/s{slot.index}/j{slot.seq}"
        if CONFIG["mount_ns"]:
            slot.dir = "/tmp"  # its own tmpfs there
        uid = "-" if slot.uid is None else slot.uid
        slot.view = view
        request = f"{slot.index} {uid} {view or '-'} {slot.dir}".encode()
        socket.send_fds(self.zygote, [request], [child.fileno(), out_w, err_w])
        child.close()
        os.close(out_w)
        os.close(err_w)
        self.spares[view] = (slot, parent, out_r, err_r)
        return self.spares[view]

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
            view = self.queue[0][0].get("view")
            if self.make_spare(view) is None:
                return
            header, mem = self.queue.pop(0)
            slot, ctl, out_r, err_r = self.spares.pop(view)
            job = Job(header, slot, out_r, err_r)
            slot.job = job
            for fd in (out_r, err_r):
                os.set_blocking(fd, False)
                self.sel.register(fd, selectors.EVENT_READ, "out")
                self.by_fd[fd] = job
            try:
                phase = "compile_memory_mb" if header.get("compiled") else "memory_mb"
                self.bound_memory(job, phase)
                socket.send_fds(ctl, [json.dumps(header).encode()], mem)
                job.dispatched = True
                if header.get("watch"):
                    self.sel.register(ctl, selectors.EVENT_READ, ("ctl", job))
            except OSError:
                pass  # the spare dies or was never told: its exit reports an infrastructure error
            for fd in mem:
                os.close(fd)
        self.make_spare()

    def bound_memory(self, job, phase="memory_mb"):
        """Bound the job's slot cgroup to the memory limit of its phase (``memory_mb`` or, while
        it compiles, ``compile_memory_mb``) plus its work dir (tmpfs is RAM)."""
        if self.memory is None:
            return
        index, limits = job.slot.index, job.header["limits"]
        try:
            self.memory.set_limit(index, (int(limits[phase]) + CONFIG["disk_mb"]) << 20)
        except OSError as exc:
            job.why = f"could not set the job's memory limit: {exc}"
            raise

    def on_ctl(self, job):
        """A message of a watched job's child: its mount namespace (kept for the releaser), the
        end of its compile phase, or why it could not start its job."""
        ctl = job.slot.ctl
        if ctl is None or job.slot.job is not job:
            return  # it ended earlier in the same round of events
        try:
            data, ancillary, _, _ = ctl.recvmsg(1024, FDS_SPACE)
        except OSError:
            data, ancillary = b"", []
        job.slot.ns_fds += fds_of(ancillary)
        if not data:  # it ran its program (close-on-exec) or died
            self.unwatch(job)
        elif data.startswith(b"compiled "):
            self.start_run(job, float(data.split()[1]))
        elif data.startswith(b"compile_failed "):
            job.compile_error, job.compile_cpu = True, float(data.split()[1])
            job.compile_s = time.monotonic() - job.started
        elif data.startswith(b"setup_failed "):
            job.why, job.dispatched = data[13:].decode(errors="replace"), False

    def start_run(self, job, compile_cpu):
        """The compile phase ended well: the run gets its own clock and memory limit."""
        now = time.monotonic()
        job.compile_cpu, job.compile_s = compile_cpu, now - job.started
        if not job.timed_out:
            job.deadline = now + float(job.header["limits"]["wall_s"])
        try:
            self.bound_memory(job)
            job.slot.ctl.send(b"go")
        except OSError:
            self.kill_job(job)

    def unwatch(self, job):
        if job.slot.ctl is not None and job.slot.ctl.fileno() in self.sel.get_map():
            self.sel.unregister(job.slot.ctl)

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
        oom = self.memory is not None and self.memory.oom_killed(slot.index)
        if job is None:  # a spare died before it got a job
            self.drop_spare(slot)
        else:
            self.unwatch(job)
            for fd in list(job.open):
                self.pump(job, fd)
                self.close_pipe(job, fd)
            self.report(job, status, cpu_s, max_rss_kb, leftovers, oom and job.dispatched)
        if not CONFIG["mount_ns"]:
            remove_tree(slot.dir)
        slot.pid, slot.job = None, None
        self.release(slot)
        self.dispatch()

    def release(self, slot):
        """Free ``slot`` once nothing of its last child holds memory charged to it: at once, or,
        where each job has a mount namespace (its child sent a reference on its control socket),
        when the releaser thread has closed that socket and so torn the namespace down."""
        ctl, slot.ctl = slot.ctl, None
        fds, slot.ns_fds = slot.ns_fds, []
        if self.releaser is not None:
            self.releaser.queue.put((slot.index, ctl, fds))
            return
        ctl.close()
        for fd in fds:
            os.close(fd)
        slot.busy = False

    def on_released(self):
        for index in self.releaser.done():
            self.slots[index].busy = False
        self.dispatch()

    def drop_spare(self, slot):
        spare = self.spares.get(slot.view)
        if spare is not None and spare[0] is slot:
            _, _, out_r, err_r = self.spares.pop(slot.view)
            os.close(out_r)
            os.close(err_r)

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
            "wall_s": time.monotonic() - job.started - job.compile_s,
            "cpu_s": max(0.0, cpu_s - job.compile_cpu),
            "compile_s": job.compile_s,
            "max_rss_mb": max_rss_kb / 1024,
            "memory_words": any(w in err_tail for w in memory_words(job.header)),
            "oom": oom,  # the OOM killer killed one of the job's processes
            "why": job.why,
            "compile_error": job.compile_error,
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
                    elif key.data == "released":
                        self.on_released()
                    elif isinstance(key.data, tuple):
                        self.on_ctl(key.data[1])
                    else:
                        job = self.by_fd.get(key.fd)
                        if job is not None:
                            self.pump(job, key.fd)
                self.expire()
        except EOFError:  # the host closed our input, or the zygote died
            self.kill_all()


class Releaser:
    """A thread that closes finished children's control sockets, and with them the references to
    their mount namespaces in flight there: a namespace's teardown waits for an RCU grace period,
    which no result has to wait for. Each closed socket's slot index comes back on a pipe."""

    def __init__(self):
        # Imported here, in the worker only: in the zygote, threading's fork hooks would run in
        # every process a job forks (copy-on-write pages that count against the job's memory).
        import queue
        import threading

        self.queue = queue.SimpleQueue()  # (slot index, control socket)
        self.done_r, self.done_w = os.pipe()
        threading.Thread(target=self.run, name="releaser", daemon=True).start()

    def run(self):
        while True:
            index, ctl, fds = self.queue.get()
            ctl.close()
            for fd in fds:
                os.close(fd)
            os.write(self.done_w, index.to_bytes(4, "big"))

    def done(self):
        """The slots released since the last call (4-byte records: a read never splits one)."""
        data = os.read(self.done_r, 4096)
        return [int.from_bytes(data[i : i + 4], "big") for i in range(0, len(data), 4)]


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


def installed_libraries():
    """The distributions jobs can import here (a container image's site-packages)."""
    import importlib.metadata
    import site

    paths = [p for p in site.getsitepackages() if os.path.isdir(p)]
    return sorted({d.metadata["Name"] for d in importlib.metadata.distributions(path=paths)})


def languages_here(probe_tools):
    """Of ``{language: [tool, ...]}``, the languages whose every tool is on this PATH."""
    import shutil

    return sorted(lang for lang, tools in probe_tools.items()
                  if all(shutil.which(tool) for tool in tools))


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
    found["languages"] = languages_here(CONFIG.get("probe_tools", {}))
    rfd, wfd = open_transport()
    worker = Worker(rfd, wfd, zygote, zygote_pid, memory)
    worker.reply({"op": "ready", "pid": os.getpid(), **found}, [])
    worker.make_spare()
    worker.serve()


if __name__ == "__main__":
    main()
