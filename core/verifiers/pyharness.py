"""Test harness for the ``python-tests`` verifier; runs as its own process, standard library only.

Reads one JSON job on stdin and prints one JSON verdict line on stdout. A job is either

* ``{"mode": "calls", "candidate": code, "entry_point": name or null, "tests": code,
  "trusted": code or null, ...}``: the tests (a ``check(candidate)`` function, top-level
  asserts, setup statements, in any mix) run against the candidate's functions; or
* ``{"mode": "io", "candidate": code, "cases": [{"input": str, "output": str}], ...}``: the
  candidate is a whole program, run once per case with the input on stdin, its stdout compared
  with the output token by token (numbers by value, within ``float_tolerance``).

Both carry ``call_timeout_s`` (per call, or per case) and ``nonce``. The design makes a pass
unforgeable:

* The candidate runs in a forked child that never sees the tests: the child is forked before stdin
  is read, its stdin is /dev/null, its stdout and stderr go to this process's stderr, and it keeps
  no descriptor of this process's stdout, the only channel a verdict is read from. In io mode the
  child forks one grandchild per case; only inputs ever reach it, never expected outputs.
* The tests run here, in the parent, and see the candidate's module globals the way the standard
  harnesses do (HumanEval runs prompt + completion + tests as one module): every global name the
  tests use that the candidate defines is bound here to a proxy that calls it in the child (or to a
  copy of its value, or to the same standard-library module). Names of builtins are never taken
  from the candidate, and the ``trusted`` code (the task's own prompt) is run here after them, so
  a helper the prompt defines beats the candidate's redefinition of it.
* Arguments and results cross the pipe as tagged plain data (int, float, str, bytes, bool, None,
  list, tuple, set, dict): no pickles, and no objects of the candidate's making (an "always equal"
  object, say) reach the tests. Builtin exceptions raised by the candidate are re-raised here by
  type.
* Before anything else this process drops every ``sys.path`` entry the job can write to, so a
  module the tests import later is never a file the candidate wrote.
* The parent is made non-dumpable, so a child of the same uid cannot read or write its memory or
  open its descriptors through /proc; the child drops every capability first (a job running as
  root in a user namespace would otherwise pass that check) and closes every inherited descriptor
  but its two pipes. A child that exits, kills the parent, or prints "passed" only makes calls
  fail; after a call times out or the child dies, every later call fails too.
* The verdict line carries the nonce from the job, which the child never sees; when stdin was a
  regular file it is unlinked before the candidate is loaded.

Each top-level ``assert`` (of the module or of ``check``) counts as one test; a ``check`` without
one counts as one. Test code that does not compile, or has neither ``check`` nor an assert, is
reported as ``tests_error``: the task's fault, not the candidate's.
"""

import ast
import builtins
import io
import json
import os
import select
import signal
import sys
import time
import traceback

MAX_MESSAGE = 1 << 25
TAIL = 500


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
    write_all(fd, len(data).to_bytes(4, "big") + data)


def write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def recv(fd, deadline=None):
    header = _read_exact(fd, 4, deadline)
    size = int.from_bytes(header, "big")
    if size > MAX_MESSAGE:
        raise RuntimeError(f"candidate reply of {size} bytes exceeds {MAX_MESSAGE}")
    return json.loads(_read_exact(fd, size, deadline))


def _read_exact(fd, n, deadline):
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
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    msg = recv(req_r)
    try:
        state = load(msg)
        send(resp_w, {"ok": True, "value": None})
    except BaseException:  # noqa: BLE001 - reported to the tests as a load error
        send(resp_w, {"ok": False, "type": "LoadError",
                      "error": traceback.format_exc(limit=-5)[-2000:]})
        os._exit(0)
    while True:
        request = recv(req_r)
        try:
            reply = {"ok": True, "value": OPS[request["op"]](state, request)}
        except BaseException as exc:  # noqa: BLE001
            reply = {"ok": False, "type": type(exc).__name__, "error": str(exc)[:500]}
        send(resp_w, reply)


def load(msg):
    """Calls mode: run the candidate module; io mode: only compile the program."""
    code = compile(msg["candidate"], "<candidate>", "exec")
    if msg["mode"] == "io":
        return {"program": code}
    ns = {"__name__": "candidate"}
    exec(code, ns)
    entry = msg.get("entry_point")
    if entry and not callable(ns.get(entry)):
        raise NameError(f"the program defines no function named {entry!r}")
    return {"ns": ns}


def op_call(state, request):
    fn = state["ns"].get(request["name"])
    if not callable(fn):
        raise NameError(f"name {request['name']!r} is not a function of the program")
    args = [decode(a) for a in request["args"]]
    kwargs = {k: decode(v) for k, v in request["kwargs"].items()}
    return encode(fn(*args, **kwargs))


def op_names(state, request):
    """What each requested global of the candidate is: a function, a module or a plain value."""
    out = {}
    for name in request["names"]:
        if name not in state["ns"]:
            continue
        value = state["ns"][name]
        try:
            if type(value).__name__ == "module":
                out[name] = ["module", value.__name__]
            elif callable(value):
                out[name] = ["function"]
            else:
                out[name] = ["value", encode(value)]
        except Exception:  # noqa: BLE001 - an object that is not plain data stays behind
            continue
    return out


def op_run(state, request):
    """Run the program once on ``request["input"]`` in a fresh grandchild."""
    fds = [os.memfd_create(name) for name in ("stdin", "stdout", "stderr")]
    write_all(fds[0], request["input"].encode("utf-8", "surrogateescape"))
    os.lseek(fds[0], 0, os.SEEK_SET)
    pid = os.fork()
    if pid == 0:
        run_program(state["program"], fds, int(request["max_output"]))
    os.close(fds[0])
    status, timed_out = wait_exit(pid, float(request["timeout_s"]))
    out = os.pread(fds[1], int(request["max_output"]) + 1, 0)
    err = os.pread(fds[2], 1 << 16, 0)
    for fd in fds[1:]:
        os.close(fd)
    return {"stdout": out.decode("utf-8", "replace"), "stderr": err.decode("utf-8", "replace")[-TAIL:],
            "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "timeout": timed_out}


def wait_exit(pid, timeout):
    """The wait status of ``pid`` and whether it ran past ``timeout``; its group is killed after.

    The child is reaped only after its group is killed, so neither id can be reused meanwhile."""
    deadline, exited = time.monotonic() + timeout, False
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    while not exited and time.monotonic() < deadline:
        left = deadline - time.monotonic()
        if pidfd is not None:
            exited = bool(select.select([pidfd], [], [], left)[0])
        else:
            exited = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
            time.sleep(0 if exited else min(left, 0.005))
    if pidfd is not None:
        os.close(pidfd)
    for target in (-pid, pid):  # the case's whole process group, whatever it left running
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
    return os.waitpid(pid, 0)[1], not exited


def run_program(program, fds, max_output):
    """The grandchild: the program as ``__main__`` with the case on stdin; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 1 << 16)
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (max_output + 1, max_output + 1))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                     encoding="utf-8", errors="surrogateescape")
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                                      encoding="utf-8", errors="surrogateescape")
        sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                                      encoding="utf-8", errors="backslashreplace",
                                      line_buffering=True)
        code = 0
        exec(program, {"__name__": "__main__", "__builtins__": builtins})
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported on stderr like the interpreter does
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - e.g. output over the limit
            code = code or 1
        os._exit(code & 0xFF)


OPS = {"call": op_call, "names": op_names, "run": op_run}


# -- the parent: runs the tests -----------------------------------------------------------------

class CandidateError(Exception):
    """The candidate raised an exception that is not a builtin one."""


class TestsError(Exception):
    """The task's own test code is broken: not the candidate's fault."""


class CandidateChannel:
    """The parent's end of the pipes to the child; broken for good after a failed exchange."""

    def __init__(self, req_w, resp_r, timeout_s):
        self.req_w, self.resp_r, self.timeout_s = req_w, resp_r, timeout_s
        self.broken = []

    def ask(self, request, timeout_s=None):
        if self.broken:
            raise CandidateError(f"not called: an earlier call failed ({self.broken[0]})")
        try:
            send(self.req_w, request)
            reply = recv(self.resp_r, time.monotonic() + (timeout_s or self.timeout_s))
        except (OSError, EOFError, TimeoutError, RuntimeError, ValueError) as exc:
            self.broken.append(f"{type(exc).__name__}: {exc}")  # replies could be out of step now
            raise
        if reply["ok"]:
            return reply["value"]
        exc_type = getattr(builtins, reply["type"], None)
        if isinstance(exc_type, type) and issubclass(exc_type, Exception):
            raise exc_type(reply["error"])
        raise CandidateError(f"{reply['type']}: {reply['error']}")

    def proxy(self, name):
        """A function of the tests that calls the candidate's ``name`` in the child."""
        def candidate(*args, **kwargs):
            request = {"op": "call", "name": name, "args": [encode(a) for a in args],
                       "kwargs": {k: encode(v) for k, v in kwargs.items()}}
            return decode(self.ask(request))

        candidate.__name__ = candidate.__qualname__ = name
        return candidate


def count_asserts(statements):
    """Wrap each assert of ``statements`` so that every one is counted; returns the count."""
    count = 0
    for i, stmt in enumerate(statements):
        if isinstance(stmt, ast.Assert):
            count += 1
            src = ast.unparse(stmt)[:300]
            statements[i] = ast.parse(
                "try:\n    pass\nexcept BaseException as __e:\n"
                f"    __rlhub_fail({src!r}, __e)\nelse:\n    __rlhub_ok()\n").body[0]
            statements[i].body = [stmt]
    return count


def parse_tests(tests):
    """The counted test module, its number of tests, whether the harness calls ``check`` and
    whether ``check`` itself counts as one test (when it has no top-level assert)."""
    try:
        tree = ast.parse(tests, "<tests>")
    except SyntaxError as exc:
        raise TestsError(f"the test code does not compile: {exc}") from None
    checks = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"]
    calls = any(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                and getattr(s.value.func, "id", None) == "check" for s in tree.body)
    in_check = count_asserts(checks[-1].body) if checks else 0
    total = count_asserts(tree.body) + in_check
    if not total and not checks:
        raise TestsError("the test code defines no check(candidate) function and no assert")
    bare = bool(checks) and not in_check
    return (compile(ast.fix_missing_locations(tree), "<tests>", "exec"), total + bare,
            bool(checks) and not calls, bare)


def used_names(*sources):
    """Global names the test code may read: every name it mentions, less builtins and dunders."""
    names = set()
    for source in sources:
        try:
            names |= {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
        except SyntaxError:
            continue
    return sorted(n for n in names if not n.startswith("__") and not hasattr(builtins, n))


def same_module(name, module):
    """The standard-library module the candidate bound to ``name``, imported here, or None."""
    top = str(module).split(".")[0]
    if name not in (module, top) or top not in sys.stdlib_module_names:
        return None
    try:
        __import__(module)
        return sys.modules[top]
    except Exception:  # noqa: BLE001 - then the tests go without it
        return None


def candidate_globals(channel, names, entry_point):
    """The test namespace: the candidate's globals the tests name, as proxies, values, modules."""
    ns = {"__name__": "tests"}
    kinds = channel.ask({"op": "names", "names": names}) if names else {}
    for name in names:
        kind = kinds.get(name) if isinstance(kinds, dict) else None
        if not isinstance(kind, list) or not kind:
            continue
        try:
            if kind == ["function"]:
                ns[name] = channel.proxy(name)
            elif kind[0] == "value":
                ns[name] = decode(kind[1])
            elif kind[0] == "module" and (module := same_module(name, kind[1])) is not None:
                ns[name] = module
        except Exception:  # noqa: BLE001 - malformed: the name is left out
            continue
    if entry_point:
        ns[entry_point] = channel.proxy(entry_point)
    return ns


def run_trusted(ns, trusted, entry_point):
    """Run the task's own prompt code here, over the candidate's names; the entry point stays."""
    try:
        code = compile(trusted, "<prompt>", "exec")
    except (SyntaxError, ValueError):
        return ns  # a prompt that is not a whole module (it ends mid-function)
    scratch = dict(ns)
    try:
        exec(code, scratch)
    except Exception:  # noqa: BLE001 - then the candidate's versions are used
        return ns
    if entry_point:
        scratch[entry_point] = ns[entry_point]
    return scratch


def run_calls(job, channel, parsed):
    code, total, call_check, bare_check = parsed
    entry = job.get("entry_point")
    ns = candidate_globals(channel, used_names(job["tests"], job.get("trusted") or ""), entry)
    if job.get("trusted"):
        ns = run_trusted(ns, job["trusted"], entry)
    state = {"passed": 0, "failures": []}

    def ok():
        state["passed"] += 1

    def fail(src, exc):
        state["failures"].append(f"{src}: {type(exc).__name__}: {str(exc)[:300]}")

    ns.update({"__rlhub_ok": ok, "__rlhub_fail": fail})
    try:
        exec(code, ns)
        if call_check:
            ns["check"](ns[entry])
        state["passed"] += bare_check  # a check without asserts that returned is one test passed
    except BaseException as exc:  # noqa: BLE001 - an untracked failure ends the tests
        where = failing_line(exc, job["tests"])
        state["failures"].append(f"check raised {type(exc).__name__}"
                                 + (f" at: {where}" if where else "") + f": {str(exc)[:300]}")
    return {"total": total, "passed": min(state["passed"], total), "failures": state["failures"]}


def failing_line(exc, source):
    """The line of the test code where ``exc`` was raised last, or ''."""
    tb, line = exc.__traceback__, 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<tests>":
            line = tb.tb_lineno
        tb = tb.tb_next
    lines = source.splitlines()
    return lines[line - 1].strip()[:300] if 0 < line <= len(lines) else ""


def same_output(got, want, tolerance):
    """Whitespace-separated tokens equal, numbers by value within ``tolerance`` (relative)."""
    got, want = got.split(), want.split()
    if got == want:
        return True
    return len(got) == len(want) and all(
        a == b or same_number(a, b, tolerance) for a, b in zip(got, want))


def same_number(a, b, tolerance):
    import decimal

    try:
        x, y = decimal.Decimal(a), decimal.Decimal(b)
        if not (x.is_finite() and y.is_finite()):
            return False
        return abs(x - y) <= decimal.Decimal(repr(tolerance)) * max(1, abs(y))
    except (decimal.InvalidOperation, ValueError):
        return False


def short(text, n=120):
    return repr(text if len(text) <= n else text[:n] + "...")


def case_failure(got, case, tolerance, max_output):
    """Why one case failed, or None when it passed."""
    if got["timeout"]:
        return "time limit exceeded"
    if len(got["stdout"].encode()) > max_output:
        return f"output over {max_output} bytes"
    if got["signal"] is not None:
        return f"killed by signal {got['signal']}"
    if got["exit"]:
        return f"exited with status {got['exit']}: {got['stderr'].strip()[-300:]}"
    if not same_output(got["stdout"], case["output"], tolerance):
        return (f"wrong answer on input {short(case['input'])}: expected {short(case['output'])}, "
                f"got {short(got['stdout'])}")
    return None


def run_io(job, channel):
    timeout = float(job.get("call_timeout_s", 10))
    max_output = int(job.get("max_output_bytes", 1 << 22))
    tolerance = float(job.get("float_tolerance", 0.0))
    failures, passed, timeouts = [], 0, 0
    cases = job["cases"]
    for n, case in enumerate(cases, 1):
        try:
            got = channel.ask({"op": "run", "input": case["input"], "timeout_s": timeout,
                               "max_output": max_output}, timeout + 5)
            why = case_failure(got, case, tolerance, max_output)
        except Exception as exc:  # noqa: BLE001 - the runner died or answered nonsense
            why = f"the program's runner failed: {type(exc).__name__}: {str(exc)[:200]}"
        if why is None:
            passed += 1
            continue
        timeouts += why == "time limit exceeded"
        failures.append(f"case {n} of {len(cases)}: {why}")
    return {"total": len(cases), "passed": passed, "failures": failures,
            "timeouts": timeouts}


def make_undumpable():
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:  # noqa: BLE001 - best effort; the sandbox is the outer boundary
        pass


def trusted_path():
    """Keep only ``sys.path`` entries that exist and that this job cannot write to."""
    sys.path[:] = [p for p in sys.path
                   if p and os.path.exists(p) and not os.access(p, os.W_OK)]


def scrub_stdin():
    """Unlink stdin when it is a regular file, so the candidate cannot find the tests on disk."""
    try:
        import stat

        if stat.S_ISREG(os.fstat(0).st_mode):
            os.unlink(os.readlink("/proc/self/fd/0"))
    except OSError:
        pass


def checked_tests(job):
    """The parsed test code of a calls job (None in io mode); TestsError when it is broken."""
    if job.get("mode", "calls") == "io":
        return None
    parsed = parse_tests(job["tests"])
    if parsed[2] and not job.get("entry_point"):
        raise TestsError("the test code defines check(candidate) but the task names no entry_point")
    return parsed


def judge(job, channel):
    """The verdict of a job whose child is forked and waiting."""
    verdict = {"total": 1, "passed": 0, "failures": [], "load_error": None, "tests_error": None}
    try:
        parsed = checked_tests(job)
        channel.ask({"mode": job.get("mode", "calls"), "candidate": job["candidate"],
                     "entry_point": job.get("entry_point")})
        verdict.update(run_calls(job, channel, parsed) if parsed else run_io(job, channel))
    except TestsError as exc:  # before the candidate ran: the task's fault
        verdict["tests_error"] = str(exc)
    except CandidateError as exc:  # raised only by loading: the candidate's traceback
        verdict["load_error"] = str(exc).removeprefix("LoadError: ")
    except BaseException as exc:  # noqa: BLE001 - the candidate did not even answer
        verdict["load_error"] = f"{type(exc).__name__}: {exc}"
    return verdict


def main():
    trusted_path()
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
    try:
        verdict = judge(job, CandidateChannel(req_w, resp_r, float(job.get("call_timeout_s", 10))))
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
