"""Bounded work: run a verifier's pure computation in a killable worker process.

Some verifier work has no useful bound from the input's size: math-verify (sympy) on
``10^{10^{7}}`` or ``(10^{8})!`` computes for minutes inside C code that holds the interpreter
lock, so no thread-level timeout or ``signal.alarm`` can stop it, and a server doing it stops
answering everything. :class:`BoundedPool` runs such work in worker processes instead:

* each worker is a fresh interpreter (``python -m rlhub.verifiers.bounded``; never a fork of a
  threaded server), started with the modules of :func:`preload` imported;
* each call gets a CPU-time budget (``RLIMIT_CPU``, set per call): a worker that spends it is
  killed by the kernel and the call raises :class:`WorkExceeded` (``resource="cpu"``): the input
  needed unbounded work, which is the *input's* fault;
* each worker has an address-space limit (``RLIMIT_AS``, its size after preloading plus
  ``memory_mb``): an allocation beyond it raises :class:`WorkExceeded` (``resource="memory"``);
* a wall-clock backstop (``wall_s``) covers a loaded machine: a call that has not spent its CPU
  budget but still has no answer is killed and raises :class:`WorkerLost`, a
  :class:`~rlhub.errors.VerifierError` (rlhub's fault, not the input's);
* a killed worker is replaced; calls from any thread wait for a free worker (waiting is not
  counted against a call's budget);
* ``hash_seed`` pins the workers' ``PYTHONHASHSEED``, for work whose output follows the iteration
  order of sets of strings (otherwise each worker draws its own, and so may its output).

A call costs a pickle round trip over a pipe (~0.1 ms) on top of the work. The function is named
by reference (``"module:attr"``) and its arguments and result must pickle.
"""

from __future__ import annotations

import atexit
import importlib
import math
import os
import resource
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from rlhub.errors import VerifierError

_PRELOAD: list[str] = []
_ENV_PATH = "RLHUB_BOUNDED_SYSPATH"


class WorkExceeded(Exception):
    """The work needed more CPU time or memory than its budget: the input's fault."""

    def __init__(self, resource_name: str, message: str):
        super().__init__(message)
        self.resource = resource_name


class WorkerLost(VerifierError):
    """A bounded call got no answer in wall-clock time, or its worker died for another reason."""


class RemoteError(Exception):
    """The function raised inside the worker; ``kind`` is the exception's type name."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind


@dataclass(frozen=True)
class Budget:
    """Per-call limits: CPU seconds (the input's budget) and the wall-clock backstop."""

    cpu_s: float = 5.0
    wall_s: float | None = None

    @property
    def backstop(self) -> float:
        return self.wall_s if self.wall_s is not None else 10.0 * self.cpu_s + 10.0


def preload(*modules: str) -> None:
    """Have workers started from now on import ``modules`` before taking calls."""
    for module in modules:
        if module not in _PRELOAD:
            _PRELOAD.append(module)


class _Worker:
    """One worker process and the two pipes to it."""

    def __init__(self, memory_mb: int, ready_s: float, hash_seed: int | None):
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        env = {**os.environ, _ENV_PATH: os.pathsep.join(p for p in sys.path if p)}
        if hash_seed is not None:
            env["PYTHONHASHSEED"] = str(hash_seed)
        argv = [sys.executable, "-m", "rlhub.verifiers.bounded", str(to_child), str(from_child),
                str(memory_mb), *_PRELOAD]
        self.proc = subprocess.Popen(argv, pass_fds=(to_child, from_child), env=env,
                                     stdin=subprocess.DEVNULL, close_fds=True)
        os.close(to_child)
        os.close(from_child)
        self.inbox = Connection(to_parent, writable=False)
        self.outbox = Connection(from_parent, readable=False)
        if not self.inbox.poll(ready_s):
            self.kill()
            raise WorkerLost(f"bounded worker: not ready within {ready_s:g} s")
        self.inbox.recv()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.inbox.close()
        self.outbox.close()

    def death(self) -> str | None:
        """``"cpu"`` or ``"memory"`` when the kernel ended the worker over a limit, else None."""
        code = self.proc.wait()
        if code == -signal.SIGXCPU:
            return "cpu"
        return "memory" if code in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT) else None


class BoundedPool:
    """Up to ``size`` workers shared by every thread; see the module docstring."""

    def __init__(self, size: int | None = None, memory_mb: int = 1024, ready_s: float = 120.0,
                 hash_seed: int | None = None):
        self.size = size or max(2, min(4, os.cpu_count() or 1))
        self.memory_mb = memory_mb
        self.ready_s = ready_s
        self.hash_seed = hash_seed
        self._idle: list[_Worker] = []
        self._live = 0
        self._cond = threading.Condition()
        self._closed = False

    def call(self, ref: str, *args: Any, budget: Budget = Budget()) -> Any:
        """``ref(*args)`` in a worker, within ``budget``; see the module docstring for errors."""
        worker = self._acquire()
        healthy = False
        try:
            result = self._run(worker, ref, args, budget)
            healthy = True
            return result
        except RemoteError:
            healthy = True  # the function raised; the worker itself is fine
            raise
        finally:
            self._release(worker, healthy)

    def _run(self, worker: _Worker, ref: str, args: tuple[Any, ...], budget: Budget) -> Any:
        try:
            worker.outbox.send((ref, args, budget.cpu_s))
            if worker.inbox.poll(budget.backstop):
                status, *payload = worker.inbox.recv()
                return _result(status, payload, budget)
        except (EOFError, OSError, BrokenPipeError):
            resource_name = worker.death()
            if resource_name:
                raise _exceeded(resource_name, budget) from None
            raise WorkerLost(f"bounded worker for {ref} died (exit {worker.proc.returncode})") \
                from None
        worker.kill()
        raise WorkerLost(f"bounded call {ref} got no answer within {budget.backstop:g} s of wall "
                         f"time without spending its {budget.cpu_s:g} s of CPU (machine overloaded)")

    def _acquire(self) -> _Worker:
        with self._cond:
            while not self._idle and self._live >= self.size:
                self._cond.wait()
            if self._closed:
                raise WorkerLost("bounded pool: closed")
            if self._idle:
                return self._idle.pop()
            self._live += 1
        try:
            return _Worker(self.memory_mb, self.ready_s, self.hash_seed)
        except BaseException:
            with self._cond:
                self._live -= 1
                self._cond.notify()
            raise

    def _release(self, worker: _Worker, healthy: bool) -> None:
        if not healthy:
            worker.kill()
        with self._cond:
            if healthy and not self._closed:
                self._idle.append(worker)
            else:
                self._live -= 1
                if healthy:
                    worker.kill()
            self._cond.notify()

    def close(self) -> None:
        """Stop every idle worker; busy ones stop when their call returns."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._live -= len(idle)
            self._cond.notify_all()
        for worker in idle:
            worker.kill()


def _result(status: str, payload: list[Any], budget: Budget) -> Any:
    if status == "ok":
        return payload[0]
    if status == "memory":
        raise _exceeded("memory", budget)
    raise RemoteError(payload[0], payload[1])


def _exceeded(resource_name: str, budget: Budget) -> WorkExceeded:
    if resource_name == "cpu":
        return WorkExceeded("cpu", f"needed more than {budget.cpu_s:g} s of CPU time")
    return WorkExceeded("memory", "needed more memory than a verification may use")


_DEFAULT: BoundedPool | None = None
_DEFAULT_LOCK = threading.Lock()


def default_pool() -> BoundedPool:
    """The process's shared pool, created on first use and closed at exit."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = BoundedPool()
            atexit.register(_DEFAULT.close)
        return _DEFAULT


def call(ref: str, *args: Any, budget: Budget = Budget()) -> Any:
    """``ref(*args)`` in the shared pool (:meth:`BoundedPool.call`)."""
    return default_pool().call(ref, *args, budget=budget)


# -- the worker side -----------------------------------------------------------------------------


def _load(ref: str, cache: dict[str, Any]) -> Any:
    if ref not in cache:
        module, _, attr = ref.partition(":")
        target: Any = importlib.import_module(module)
        for part in attr.split("."):
            target = getattr(target, part)
        cache[ref] = target
    return cache[ref]


def _limit_memory(memory_mb: int) -> None:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[0])
    limit = pages * os.sysconf("SC_PAGE_SIZE") + (memory_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _limit_cpu(cpu_s: float) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + cpu_s)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))


def _serve_one(inbox: Connection, outbox: Connection, cache: dict[str, Any]) -> None:
    ref, args, cpu_s = inbox.recv()
    try:
        fn = _load(ref, cache)  # importing is not the input's work: outside the budget
        _limit_cpu(cpu_s)
        reply: tuple[Any, ...] = ("ok", fn(*args))
    except MemoryError:
        reply = ("memory",)
    except Exception as exc:  # noqa: BLE001 - sent back to the caller as data
        reply = ("error", type(exc).__name__, str(exc)[:2000])
    try:
        outbox.send(reply)
    except Exception as exc:  # noqa: BLE001 - e.g. a result that does not pickle
        outbox.send(("error", type(exc).__name__, str(exc)[:2000]))


def _worker_main(argv: list[str]) -> None:
    inbox_fd, outbox_fd, memory_mb, *modules = argv
    os.dup2(2, 1)  # anything the work prints goes to stderr, never into the protocol
    sys.path[:0] = [p for p in os.environ.get(_ENV_PATH, "").split(os.pathsep) if p]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for module in modules:
        importlib.import_module(module)
    _limit_memory(int(memory_mb))
    inbox, outbox = Connection(int(inbox_fd), writable=False), Connection(int(outbox_fd),
                                                                         readable=False)
    outbox.send(("ready", os.getpid()))
    cache: dict[str, Any] = {}
    while True:
        try:
            _serve_one(inbox, outbox, cache)
        except (EOFError, OSError):
            return


if __name__ == "__main__":
    _worker_main(sys.argv[1:])
