"""``rlhub sandbox exec`` and ``rlhub sandbox info`` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RLHUB = [sys.executable, "-c", "from rlhub.cli import main; main()"]


def rlhub(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RLHUB, *args], capture_output=True, text=True, timeout=120)


def test_exec_json_prints_only_the_result_with_its_status(tmp_path: Path) -> None:
    program = tmp_path / "job.py"
    program.write_text("import sys\nprint(sys.stdin.read().upper())\n")
    stdin = tmp_path / "in.txt"
    stdin.write_text("hello")
    done = rlhub("sandbox", "exec", str(program), "--stdin", str(stdin), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["stdout"], result["backend"]) == ("ok", "HELLO\n", "local")
    assert {"exit_code", "stderr", "wall_s", "cpu_s", "max_rss_mb", "missing"} <= set(result)


def test_exec_applies_the_limits_given_as_flags(tmp_path: Path) -> None:
    program = tmp_path / "spin.sh"
    program.write_text("while true; do :; done\n")
    done = rlhub("sandbox", "exec", str(program), "--wall-s", "0.5", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["status"] == "timeout"


def test_exec_without_a_known_suffix_asks_for_the_language(tmp_path: Path) -> None:
    program = tmp_path / "job.txt"
    program.write_text("print(1)")
    done = rlhub("sandbox", "exec", str(program))
    assert done.returncode == 2
    assert "cannot tell the language of 'job.txt' from its suffix; pass --language" in done.stderr


def test_info_json_names_active_and_missing_protections() -> None:
    done = rlhub("sandbox", "info", "--backend", "local", "--json")
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)
    assert report["backend"] == "local"
    assert "rlimits" in report["active"] and isinstance(report["missing"], list)
    assert not set(report["active"]) & set(report["missing"])


def test_info_lists_every_isolation_protection_with_what_it_means() -> None:
    from rlhub.sandbox.channel import JOB_ISOLATION

    done = rlhub("sandbox", "info", "--backend", "local", "--json")
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)
    for name in JOB_ISOLATION:
        assert name in report["active"] or name in report["missing"], name
        assert report["notes"][name], name
    assert set(report["missing"]) <= set(report["why"]) | {"seccomp"}  # each says why


def test_exec_lets_a_job_import_a_library_named_with_library(tmp_path: Path) -> None:
    program = tmp_path / "job.py"
    program.write_text("import pluggy\nprint(pluggy.__name__)\n")
    done = rlhub("sandbox", "exec", str(program), "--library", "pluggy", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["stdout"] == "pluggy\n"
    alone = rlhub("sandbox", "exec", str(program), "--json")
    assert "No module named 'pluggy'" in json.loads(alone.stdout)["stderr"]


def test_exec_finds_the_language_from_the_registry_by_suffix(tmp_path: Path) -> None:
    program = tmp_path / "job.rb"
    program.write_text("puts gets.to_i * 2\n")
    stdin = tmp_path / "in.txt"
    stdin.write_text("21\n")
    done = rlhub("sandbox", "exec", str(program), "--stdin", str(stdin), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["stdout"] == "42\n"


def test_exec_with_an_unknown_language_names_a_near_match_and_the_listing(tmp_path: Path) -> None:
    program = tmp_path / "job.txt"
    program.write_text("print 1")
    done = rlhub("sandbox", "exec", str(program), "--language", "pyhton")
    assert done.returncode == 2
    assert "unknown sandbox language 'pyhton'; did you mean 'python'?" in done.stderr
    assert "Run `rlhub sandbox info`" in done.stderr


def test_info_lists_at_least_twenty_languages_for_the_local_backend() -> None:
    done = rlhub("sandbox", "info", "--backend", "local", "--json")
    (report,) = json.loads(done.stdout)
    assert len(report["languages"]) >= 20, report["languages"]
    assert {"c", "cpp", "java", "rust", "go", "haskell", "python"} <= set(report["languages"])
