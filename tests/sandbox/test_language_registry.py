"""Languages are registered, never listed: a plugin adds one with one hook implementation, a bad
spec is refused with what was expected, and the attacks a language brings (its compile step, its
view of the machine) are contained."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rlhub import ExecRequest, Limits, Registry, hookimpl
from rlhub.errors import SandboxError
from rlhub.sandbox.languages import Entry, Language, builtin
from rlhub.sandbox.local import LocalBackend


class Dashplug:
    """A plugin adding a language (POSIX sh scripts run by dash) and overriding awk's spec."""

    PLUGIN_NAME = "dashplug"

    @hookimpl
    def rlhub_sandbox_languages(self) -> dict[str, dict[str, Any]]:
        return {
            "posix": {"source": "main.sh", "run": ["dash", "main.sh"], "packages": ["dash"],
                      "suffixes": [".posix"], "fences": ["posix-sh"]},
            "awk": {"source": "prog.awk", "run": ["gawk", "--posix", "-f", "prog.awk"],
                    "packages": ["gawk"], "suffixes": [".awk"]},
        }


class Broken:
    PLUGIN_NAME = "broken"

    @hookimpl
    def rlhub_sandbox_languages(self) -> dict[str, dict[str, Any]]:
        return {"C++": {"source": "main.cpp", "run": ["./main"]}}


@pytest.fixture(scope="module")
def local() -> Iterator[LocalBackend]:
    backend = LocalBackend(workers=1, slots=4)
    yield backend
    backend.close()


def test_a_plugins_language_is_registered_by_one_hook_and_runs_in_its_own_view() -> None:
    registry = Registry(autoload=False, plugins=[Dashplug()])
    try:
        languages = registry.services.languages()
        assert "posix" in languages and languages.by_fence("posix-sh").name == "posix"
        assert languages.get("awk").source == "prog.awk"  # the plugin's spec wins
        backend = registry.services.sandbox("local", workers=1, slots=2)
        code = 'echo "$0 in $(pwd)"; [ -e /usr/bin/gcc ] && echo gcc || echo "no gcc"'
        result = backend.run(ExecRequest(code=code, language="posix"))
        # no compiler in a dash job's view
        assert (result.status, result.stdout) == ("ok", "main.sh in /tmp\nno gcc\n"), result
    finally:
        registry.services.close()


@pytest.mark.ray
def test_a_plugins_language_runs_on_the_ray_backends_actors_too() -> None:
    """The actors are given the registry's languages, not the built-ins alone."""
    registry = Registry(autoload=False, plugins=[Dashplug()])
    try:
        backend = registry.services.sandbox("ray", actors=1, num_cpus=0, workers=1, slots=2)
        result = backend.run(ExecRequest(code='echo "$0"', language="posix"))
        assert (result.status, result.stdout, result.backend) == ("ok", "main.sh\n", "ray"), result
    finally:
        registry.services.close()


def test_a_spec_with_a_bad_name_is_refused_naming_the_plugin() -> None:
    registry = Registry(autoload=False, plugins=[Broken()])
    with pytest.raises(SandboxError, match="'C\\+\\+' from broken: expected a lower-case word"):
        registry.services.languages()


def test_a_spec_with_unknown_keys_says_which_keys_exist() -> None:
    with pytest.raises(SandboxError, match=r"expected keys among .*found unknown \['compiler'\]"):
        Language.parse("zig", {"source": "main.zig", "run": ["./main"], "compiler": ["zig"]})


def test_the_entry_class_is_main_or_the_last_class_declared_before_the_first_main() -> None:
    java = builtin().get("java").entry
    assert isinstance(java, Entry)
    code = "class Helper {}\npublic class Solution {\n  public static void main(String[] a) {}\n}"
    assert java.of(code) == "Solution"
    assert java.of("class Helper {}") == "Main"  # no main at all: javac's error says so
    assert builtin().get("java").plan(code, 256)["source"] == "Solution.java"


def test_every_builtin_language_declares_its_packages_and_a_version_probe() -> None:
    for spec in builtin():
        assert spec.packages and spec.version and spec.suffixes, spec.name
    assert len(builtin()) >= 20


def test_a_program_exiting_with_the_old_compile_failed_code_is_not_a_compile_error(local) -> None:
    result = local.run(ExecRequest(code="int main(void) { return 97; }", language="c"))
    assert (result.status, result.exit_code) == ("error", 97), result


def test_a_compile_that_never_ends_is_stopped_by_its_own_wall_limit(local) -> None:
    result = local.run(ExecRequest(code='#include "/dev/zero"\nint main(void) {}', language="c",
                                   limits=Limits(compile_wall_s=3, compile_memory_mb=256)))
    assert result.status == "compile_error", result
    assert "compile step passed its wall limit" in result.stderr or result.compile_s < 30


def test_the_run_gets_its_own_wall_clock_after_a_compile(local) -> None:
    code = "#include <unistd.h>\nint main(void) { sleep(30); }"
    result = local.run(ExecRequest(code=code, language="c", limits=Limits(wall_s=1)))
    assert result.status == "timeout" and result.wall_s < 15, result


def test_the_runs_memory_limit_replaces_the_compiles_larger_one(local) -> None:
    code = ("#include <stdlib.h>\n#include <string.h>\n"
            "#include <stdio.h>\nint main(void) { char *p = malloc(300 << 20); "
            "if (!p) { fputs(\"out of memory\\n\", stderr); return 1; } "
            "memset(p, 1, 300 << 20); return 0; }")
    result = local.run(ExecRequest(code=code, language="c", limits=Limits(memory_mb=128)))
    assert result.status == "memory", result


def test_a_c_job_sees_no_other_toolchain_and_nothing_of_the_host(local) -> None:
    code = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
    const char *paths[] = {"/usr/bin/python3", "/usr/bin/node", "/usr/lib/jvm", "/usr/bin/ghc",
                           "/root", "/work", "/home", "/var/cache/rlhub-sandbox", "/rlhub"};
    for (int i = 0; i < 9; i++) if (access(paths[i], F_OK) == 0) printf("SEEN %s\n", paths[i]);
    printf("gcc %s\n", access("/usr/bin/gcc", X_OK) == 0 ? "here" : "missing");
}
"""
    result = local.run(ExecRequest(code=code, language="c"))
    assert (result.status, result.stdout) == ("ok", "gcc here\n"), result


def test_a_compile_cannot_read_what_the_job_could_not(local) -> None:
    result = local.run(ExecRequest(code='#include "/etc/shadow"\nint main(void) {}', language="c"))
    assert result.status == "compile_error" and "root:" not in result.stderr, result
