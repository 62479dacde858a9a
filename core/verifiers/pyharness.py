"""Test harness for the ``python-tests`` verifier; runs as its own process, standard library only.

Reads ``{"candidate": code, "tests": code, "entry_point": name, "call_timeout_s": s, "nonce": n}``
as JSON on stdin and prints one JSON verdict line on stdout. Its design makes a pass unforgeable:

* The candidate runs in a forked child that never sees the tests: the child is forked before stdin
  is read, its stdin is /dev/null, its stdout and stderr go to this process's stderr, and it keeps
  no descriptor of this process's stdout, the only channel a verdict is read from.
* The tests run here, in the parent, and call the candidate through a proxy. Arguments and results
  cross the pipe as tagged plain data (int, float, str, bytes, bool, None, list, tuple, set, dict):
  no pickles, and no objects of the candidate's making (an "always equal" object, say) reach the
  tests. Builtin exceptions raised by the candidate are re-raised here by type.
* The parent is made non-dumpable, so a child of the same uid cannot read or write its memory or
  open its descriptors through /proc; the child drops every capability first (a job running as
  root in a user namespace would otherwise pass that check) and closes every inherited descriptor
  but its two pipes. A child that exits, kills the parent, or prints "passed" only makes calls
  fail; after a call times out or the child dies, every later call fails too.
* The verdict line carries the nonce from the job, which the child never sees; when stdin was a
  regular file it is unlinked before the candidate is loaded.

Each top-level ``assert`` in ``check`` counts as one test; a ``check`` without one counts as one.
"""

import ast
import builtins
import json
import os
import select
import signal
import sys
import traceback

MAX_MESSAGE = 1 << 22


def encode(x):
    t = type(x)
    if x is None:
        return ["none"]
    if t is bool:
        return ["bool", x]
    if t is int:
        return ["int", str(x)]
    if t is float:
        return ["float", repr(x)]
    if t is complex:
        return ["complex", [repr(x.real), repr(x.imag)]]
    if t is str:
        return ["str", x]
    if t is bytes:
        return ["bytes", x.hex()]
    if t in (list, tuple, set, frozenset):
        return [t.__name__, [encode(v) for v in x]]
    if t is dict:
        return ["dict", [[encode(k), encode(v)] for k, v in x.items()]]
    raise TypeError(f"unsupported value of type {t.__name__}: only plain data crosses to the tests")


def decode(x):
    tag = x[0]
    if tag == "none":
        return None
    if tag == "bool":
        return bool(x[1])
    if tag == "int":
        return int(x[1])
    if tag == "float":
        return float(x[1])
    if tag == "complex":
        return complex(float(x[1][0]), float(x[1][1]))
    if tag == "str":
        return str(x[1])
    if tag == "bytes":
        return bytes.fromhex(x[1])
    kinds = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}
    if tag in kinds:
        return kinds[tag](decode(v) for v in x[1])
    if tag == "dict":
        return {decode(k): decode(v) for k, v in x[1]}
    raise ValueError(f"bad tag {tag!r}")


def send(fd, obj):
    data = json.dumps(obj).encode()
    payload = len(data).to_bytes(4, "big") + data
    while payload:
        payload = payload[os.write(fd, payload):]


def recv(fd, deadline=None):
    header = _read_exact(fd, 4, deadline)
    size = int.from_bytes(header, "big")
    if size > MAX_MESSAGE:
        raise RuntimeError(f"candidate reply of {size} bytes exceeds {MAX_MESSAGE}")
    return json.loads(_read_exact(fd, size, deadline))


def _read_exact(fd, n, deadline):
    import time

    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("the candidate did not answer in time")
        chunk = os.read(fd, n - got)
        if not chunk:
            raise EOFError("the candidate process exited")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


# -- the child: runs the candidate --------------------------------------------------------------

def drop_privileges():
    """Best effort: no capabilities now or after an execve, and no new privileges ever."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for cap in range(64):
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
        libc.prctl(28, 0x2F, 0, 0, 0)  # PR_SET_SECUREBITS: NOROOT, NO_SETUID_FIXUP, locked
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
        libc.capset(header, (ctypes.c_uint32 * 6)())  # effective, permitted, inheritable = 0
    except Exception:  # noqa: BLE001 - the sandbox is the outer boundary
        pass


def close_inherited(keep):
    """Close every descriptor above stderr except ``keep``."""
    top = max(keep) + 1
    os.closerange(3, min(keep))
    for fd in range(min(keep) + 1, top):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    os.closerange(top, 1 << 16)


def child(req_r, resp_w):
    drop_privileges()
    close_inherited({req_r, resp_w})
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    msg = recv(req_r)
    ns = {"__name__": "candidate"}
    try:
        exec(compile(msg["candidate"], "<candidate>", "exec"), ns)
        fn = ns.get(msg["entry_point"])
        if not callable(fn):
            raise NameError(f"the program defines no function named {msg['entry_point']!r}")
        send(resp_w, {"ok": True})
    except BaseException:  # noqa: BLE001 - reported to the tests as a load error
        send(resp_w, {"ok": False, "error": traceback.format_exc(limit=5)[-2000:]})
        os._exit(0)
    while True:
        call = recv(req_r)
        try:
            args = [decode(a) for a in call["args"]]
            kwargs = {k: decode(v) for k, v in call["kwargs"].items()}
            reply = {"ok": True, "value": encode(fn(*args, **kwargs))}
        except BaseException as exc:  # noqa: BLE001
            reply = {"ok": False, "type": type(exc).__name__, "error": str(exc)[:500]}
        send(resp_w, reply)


# -- the parent: runs the tests -----------------------------------------------------------------

class CandidateError(Exception):
    """The candidate raised an exception that is not a builtin one."""


def make_proxy(req_w, resp_r, timeout_s):
    import time

    broken = []

    def candidate(*args, **kwargs):
        if broken:
            raise CandidateError(f"not called: an earlier call failed ({broken[0]})")
        request = {"args": [encode(a) for a in args],
                   "kwargs": {k: encode(v) for k, v in kwargs.items()}}
        try:
            send(req_w, request)
            reply = recv(resp_r, time.monotonic() + timeout_s)
        except (OSError, EOFError, TimeoutError, RuntimeError, ValueError) as exc:
            broken.append(f"{type(exc).__name__}: {exc}")  # replies could be out of step now
            raise
        if reply["ok"]:
            return decode(reply["value"])
        exc_type = getattr(builtins, reply["type"], None)
        if isinstance(exc_type, type) and issubclass(exc_type, Exception):
            raise exc_type(reply["error"])
        raise CandidateError(f"{reply['type']}: {reply['error']}")

    return candidate


class CountAsserts(ast.NodeTransformer):
    """Wrap each top-level assert of ``check`` so that every one is counted."""

    def visit_FunctionDef(self, node):
        if node.name != "check":
            return node
        body, count = [], 0
        for stmt in node.body:
            if isinstance(stmt, ast.Assert):
                count += 1
                src = ast.unparse(stmt)[:300]
                body.append(ast.parse(
                    "try:\n    pass\nexcept BaseException as __e:\n"
                    f"    __rlhub_fail({src!r}, __e)\nelse:\n    __rlhub_ok()\n").body[0])
                body[-1].body = [stmt]
            else:
                body.append(stmt)
        node.body = body
        self.count = count
        return node


def run_tests(tests, candidate):
    tree = ast.parse(tests)
    counter = CountAsserts()
    counter.count = 0
    tree = ast.fix_missing_locations(counter.visit(tree))
    state = {"passed": 0, "failures": []}

    def ok():
        state["passed"] += 1

    def fail(src, exc):
        state["failures"].append(f"{src}: {type(exc).__name__}: {str(exc)[:300]}")

    ns = {"__name__": "tests", "__rlhub_ok": ok, "__rlhub_fail": fail}
    exec(compile(tree, "<tests>", "exec"), ns)
    if not callable(ns.get("check")):
        raise NameError("the test code defines no check(candidate) function")
    total = counter.count or 1
    try:
        ns["check"](candidate)
        if not counter.count:
            state["passed"] = 1
    except BaseException as exc:  # noqa: BLE001 - an untracked failure ends the check
        state["failures"].append(f"check raised {type(exc).__name__}: {str(exc)[:300]}")
    return {"total": total, "passed": min(state["passed"], total), "failures": state["failures"]}


def make_undumpable():
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:  # noqa: BLE001 - best effort; the sandbox is the outer boundary
        pass


def scrub_stdin():
    """Unlink stdin when it is a regular file, so the candidate cannot find the tests on disk."""
    try:
        import stat

        if stat.S_ISREG(os.fstat(0).st_mode):
            os.unlink(os.readlink("/proc/self/fd/0"))
    except OSError:
        pass


def main():
    make_undumpable()
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(req_w)
        os.close(resp_r)
        try:
            child(req_r, resp_w)
        finally:
            os._exit(0)
    os.close(req_r)
    os.close(resp_w)
    job = json.loads(sys.stdin.read())
    scrub_stdin()
    verdict = {"total": 1, "passed": 0, "failures": [], "load_error": None}
    try:
        send(req_w, {"candidate": job["candidate"], "entry_point": job["entry_point"]})
        import time

        loaded = recv(resp_r, time.monotonic() + float(job.get("call_timeout_s", 10)))
        if not loaded["ok"]:
            verdict["load_error"] = loaded["error"]
        else:
            proxy = make_proxy(req_w, resp_r, float(job.get("call_timeout_s", 10)))
            verdict.update(run_tests(job["tests"], proxy))
    except BaseException as exc:  # noqa: BLE001
        verdict["load_error"] = f"{type(exc).__name__}: {exc}"
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
    line = json.dumps({"rlhub_verdict": verdict, "nonce": job.get("nonce", "")})
    os.write(1, b"\n" + line.encode() + b"\n")


if __name__ == "__main__":
    main()
