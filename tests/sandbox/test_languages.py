"""Every registered language passes one conformance suite, on the local and the docker backend.

The programs are in ``languages/conformance.toml``, one table per language. Each check asserts
the status a job gets and that nothing escaped: no process left on the host, no file written
outside the work dir, no connection made. ``c``, ``python`` and ``javascript`` run in ``make
test``; the other languages are ``slow`` (``make test-slow``). A language whose toolchain the
backend lacks skips, naming it (a failure under ``RLHUB_REQUIRE=all``, as in CI).
"""

from __future__ import annotations

import os
import re
import time
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlhub.sandbox import ExecRequest, ExecResult, Limits
from rlhub.sandbox.languages import builtin
from tests.sandbox.conftest import MAKERS, Listener, host_processes_with

HERE = Path(__file__).parent / "languages"
SAMPLE = ("c", "javascript", "python")  # the languages make test runs
# wide compile budgets: scalac and ghc take tens of seconds on a loaded machine
LIMITS = {"wall_s": 20.0, "cpu_s": 20.0, "compile_wall_s": 240.0, "compile_cpu_s": 240.0}


def decoded(text: str) -> str:
    """One-line programs spell newlines as ``\\n`` (and a backslash-n as ``\\\\n``)."""
    if "\n" in text:
        return text
    return re.sub(r"\\\\n|\\n|\\t", lambda m: {"\\\\n": "\\n", "\\n": "\n", "\\t": "\t"}[m[0]],
                  text)


PROGRAMS = {
    lang: {check: decoded(code) if isinstance(code, str) else code
           for check, code in table.items()}
    for lang, table in tomllib.loads((HERE / "conformance.toml").read_text()).items()
}


def languages_param(compiled: bool = False, check: str = "") -> list[Any]:
    """The languages a check applies to: compiled ones only, or those whose standard library can
    express it (the others say why in the table's ``absent``)."""
    return [pytest.param(lang, marks=[] if lang in SAMPLE else [pytest.mark.slow])
            for lang in sorted(PROGRAMS) if (builtin().get(lang).compiled or not compiled)
            and (not check or check in PROGRAMS[lang])]


@pytest.fixture(scope="module", params=[pytest.param("local"),
                                        pytest.param("docker", marks=pytest.mark.docker)])
def backend(request: pytest.FixtureRequest) -> Iterator[Any]:
    made = MAKERS[request.param]()
    yield made
    made.close()


def run(backend: Any, lang: str, check: str, stdin: str = "", **limits: Any) -> ExecResult:
    """Run ``lang``'s program for ``check`` (skipped, naming why, where it cannot run)."""
    available = backend.info()["languages"]
    if lang not in available:
        pytest.skip(f"the {lang} toolchain is missing on the {backend.name} backend "
                    f"({' '.join(builtin().get(lang).packages)}; run .ci/docker-setup.sh)")
    code = PROGRAMS[lang][check]
    for key, value in limits.pop("fill", {}).items():
        code = code.replace(f"@{key}@", str(value))
    return backend.run(ExecRequest(code=code, language=lang, stdin=stdin,
                                   limits=Limits(**{**LIMITS, **limits})))


def test_every_language_has_every_check_or_says_why_not() -> None:
    checks = {"hello", "sum", "runtime_error", "spin", "sleep", "alloc", "flood", "fork",
              "network", "write"}
    registered = builtin()
    assert set(PROGRAMS) == set(registered.names())
    for lang, table in PROGRAMS.items():
        wanted = checks | ({"compile_error"} if registered.get(lang).compiled else set())
        assert wanted <= set(table) | set(table.get("absent", {})), lang


@pytest.mark.parametrize("lang", languages_param())
def test_hello_prints_hello(backend: Any, lang: str) -> None:
    result = run(backend, lang, "hello")
    assert (result.status, result.stdout) == ("ok", "hello\n"), result


@pytest.mark.parametrize("lang", languages_param())
def test_stdin_reaches_the_program_and_its_answer_comes_back(backend: Any, lang: str) -> None:
    result = run(backend, lang, "sum", stdin="20 22\n")
    assert (result.status, result.stdout.strip()) == ("ok", "42"), result


@pytest.mark.parametrize("lang", languages_param())
def test_a_runtime_error_is_an_error_with_a_nonzero_exit(backend: Any, lang: str) -> None:
    result = run(backend, lang, "runtime_error")
    assert result.status in ("error", "killed") and result.exit_code != 0, result


@pytest.mark.parametrize("lang", languages_param(compiled=True))
def test_a_compile_error_is_status_compile_error_with_the_compilers_message(
        backend: Any, lang: str) -> None:
    result = run(backend, lang, "compile_error")
    assert (result.status, result.detail) == ("compile_error", "compile error"), result
    assert result.stderr.strip() and len(result.stderr) <= 4200 and result.stdout == ""


@pytest.mark.parametrize("lang", languages_param())
def test_spinning_past_the_cpu_limit_is_a_timeout(backend: Any, lang: str) -> None:
    result = run(backend, lang, "spin", cpu_s=1, wall_s=60)
    assert result.status == "timeout", result
    assert result.wall_s < 45, result  # stopped by its CPU limit, not the wall clock


@pytest.mark.parametrize("lang", languages_param())
def test_sleeping_past_the_wall_limit_is_a_timeout(backend: Any, lang: str) -> None:
    result = run(backend, lang, "sleep", wall_s=2)
    assert result.status == "timeout" and result.wall_s < 20, result


@pytest.mark.parametrize("lang", languages_param())
def test_allocating_past_the_memory_limit_is_a_memory_status(backend: Any, lang: str) -> None:
    result = run(backend, lang, "alloc", memory_mb=256, wall_s=60, cpu_s=60)
    assert result.status == "memory", result


@pytest.mark.parametrize("lang", languages_param())
def test_an_output_flood_is_capped(backend: Any, lang: str) -> None:
    result = run(backend, lang, "flood", output_bytes=100_000, wall_s=60)
    assert result.status == "output_limit" and len(result.stdout) <= 100_000, result


@pytest.mark.parametrize("lang", languages_param())
def test_a_fork_bomb_is_contained_and_leaves_no_process(backend: Any, lang: str) -> None:
    token = str(100_000_000 + uuid.uuid4().int % 800_000_000)  # sleep's argument: findable
    result = run(backend, lang, "fork", processes=32, wall_s=3, fill={"TOKEN": token})
    # the shell gives up once the process limit stops it (its status is the program's), or the
    # wall clock stops it; either way what it started is gone with it
    assert result.status != "infra_error", result
    deadline = time.monotonic() + 5
    while host_processes_with(f"sleep {token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_processes_with(f"sleep {token}") == []


@pytest.mark.parametrize("lang", languages_param(check="network"))
def test_a_network_attempt_reaches_nothing(backend: Any, lang: str) -> None:
    listener = Listener()
    try:
        result = run(backend, lang, "network", fill={"PORT": listener.port})
        assert result.status != "infra_error" and "CONNECTED" not in result.stdout, result
        assert listener.accepted == 0
    finally:
        listener.close()


@pytest.mark.parametrize("lang", languages_param())
def test_a_write_outside_the_work_dir_fails_and_reaches_nothing(backend: Any, lang: str) -> None:
    token = uuid.uuid4().hex
    result = run(backend, lang, "write", fill={"TOKEN": token})
    assert result.status != "infra_error" and "WROTE" not in result.stdout, result
    assert not os.path.exists(f"/etc/rlhub-escaped-{token}")


GREETINGS = sorted((HERE / "greetings").iterdir())


def greeting_param() -> list[Any]:
    languages = builtin()
    params = []
    for path in GREETINGS:
        spec = languages.by_suffix(path.suffix)
        assert spec is not None, path
        marks = [] if spec.name in SAMPLE else [pytest.mark.slow]
        params.append(pytest.param(path, spec.name, marks=marks, id=spec.name))
    return params


def test_every_language_has_a_greeting_program_written_apart_from_the_suite() -> None:
    named = {builtin().by_suffix(p.suffix).name for p in GREETINGS}  # type: ignore[union-attr]
    assert named == set(builtin().names())


@pytest.mark.parametrize(("path", "lang"), greeting_param())
def test_a_greeting_program_greets_whoever_stdin_names(backend: Any, path: Path, lang: str
                                                       ) -> None:
    if lang not in backend.info()["languages"]:
        pytest.skip(f"the {lang} toolchain is missing on the {backend.name} backend")
    result = backend.run(ExecRequest(code=path.read_text(), language=lang,
                                     stdin="Ada Lovelace\n", limits=Limits(**LIMITS)))
    assert (result.status, result.stdout) == ("ok", "Hello, Ada Lovelace!\n"), result
