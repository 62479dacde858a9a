"""``rlhub eval``, ``reverify`` and ``report`` as a user runs them: subprocesses over real HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq

from conftest import RLHUB, cli_env

from rlhub.serving import refused_port

FAST = {"strategy": "uniform", "domains": {"looptest/reverse-v1": {}, "looptest/add-v1": {}}}


def _mixture(tmp_path: Path, data: dict = FAST, name: str = "mix.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def _rlhub(home: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RLHUB, *args], env=cli_env(home), capture_output=True, text=True,
                          timeout=timeout)


def _ids(run: Path) -> list[str]:
    ids: list[str] = []
    for part in sorted((run / "trajectories").glob("part-*.parquet")):
        ids += pq.read_table(part, columns=["trajectory_id"]).column(0).to_pylist()
    return ids


def test_eval_runs_end_to_end_against_rlhub_policy_serve_and_reverifies(serve, rlhub_home,
                                                                       tmp_path) -> None:
    base = serve("builtin:tiny")
    run = tmp_path / "run"
    done = _rlhub(rlhub_home, "eval", "--mixture", _mixture(tmp_path), "--policy",
                  f"openai:{base}#tiny", "-n", "6", "--k", "2", "--out", str(run),
                  "--max-tokens", "12", "--json")
    assert done.returncode == 0, done.stderr
    metrics = json.loads(done.stdout)
    assert metrics["overall"]["n_samples"] == 24 and metrics["overall"]["unique_trajectories"] == 24
    rev = metrics["domains"]["looptest/reverse-v1"]
    assert rev["status_counts"].get("policy_error", 0) == 0
    assert rev["turns_mean"] >= 1.0 and "pass@2" in rev
    assert json.loads((run / "metrics.json").read_text())["overall"]["n_samples"] == 24
    check = _rlhub(rlhub_home, "reverify", str(run), "--json")
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout) == {"checked": 24, "mismatches": []}


def test_a_scripted_repair_through_the_http_server_earns_the_discounted_reward(serve, rlhub_home,
                                                                              tmp_path) -> None:
    base = serve("oracle:wrong-first")
    run = tmp_path / "run"
    done = _rlhub(rlhub_home, "eval", "--mixture", _mixture(tmp_path), "--policy",
                  f"openai:{base}#oracle", "-n", "4", "--out", str(run), "--json")
    assert done.returncode == 0, done.stderr
    rev = json.loads(done.stdout)["domains"]["looptest/reverse-v1"]
    assert (rev["first_try_pass@1"], rev["pass@1"], rev["reward_mean"]) == (0.0, 1.0, 0.5)
    check = json.loads(_rlhub(rlhub_home, "reverify", str(run), "--json").stdout)
    assert check == {"checked": 8, "mismatches": []}


def test_a_dead_endpoint_is_recorded_as_data_and_the_eval_completes(rlhub_home, tmp_path) -> None:
    dead = f"openai:http://127.0.0.1:{refused_port()}/v1#m"
    done = _rlhub(rlhub_home, "eval", "--mixture", _mixture(tmp_path), "--policy", dead,
                  "-n", "3", "--out", str(tmp_path / "run"), "--json",
                  "--policy-options", '{"retries": 1, "backoff_s": 0.01, "timeout_s": 1}')
    assert done.returncode == 0, done.stderr
    metrics = json.loads(done.stdout)
    for m in metrics["domains"].values():
        assert m["status_counts"] == {"policy_error": 3}


def test_kill_9_mid_run_then_resume_loses_and_duplicates_no_trajectory(rlhub_home,
                                                                      tmp_path) -> None:
    run = tmp_path / "run"
    args = ["eval", "--mixture", _mixture(tmp_path), "--policy", "oracle:wrong-first", "-n", "30",
            "--out", str(run), "--flush-every", "4", "--concurrency", "2",
            "--policy-options", '{"delay_s": 0.2}']  # ~12 s in all: the kill lands mid-run
    proc = subprocess.Popen([RLHUB, *args], env=cli_env(rlhub_home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while len(_ids(run)) < 12 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    committed = _ids(run)
    assert 12 <= len(committed) < 60, "expected the kill to land mid-run"
    done = _rlhub(rlhub_home, *args, "--resume", "--json")
    assert done.returncode == 0, done.stderr
    final = _ids(run)
    assert set(committed) <= set(final)
    assert len(final) == len(set(final)) == 60
    keys = []
    for part in (run / "trajectories").glob("part-*.parquet"):
        keys += pq.read_table(part, columns=["job_key"]).column(0).to_pylist()
    assert len(set(keys)) == 60
    assert json.loads(done.stdout)["overall"]["unique_trajectories"] == 60


def test_a_second_eval_into_the_same_run_needs_resume_and_the_same_options(rlhub_home,
                                                                          tmp_path) -> None:
    run = str(tmp_path / "run")
    base = ["eval", "--mixture", _mixture(tmp_path), "--policy", "oracle:right", "--out", run]
    assert _rlhub(rlhub_home, *base, "-n", "2").returncode == 0
    again = _rlhub(rlhub_home, *base, "-n", "2")
    assert again.returncode == 2
    assert "already holds a run; pass --resume to continue it" in again.stderr
    other = _rlhub(rlhub_home, *base, "-n", "3", "--resume")
    assert other.returncode == 2 and "use the same options or another --out" in other.stderr
    assert "Traceback" not in again.stderr + other.stderr


def test_an_unwritable_out_is_a_clear_error_not_a_traceback(rlhub_home, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = _rlhub(rlhub_home, "eval", "--mixture", _mixture(tmp_path), "--policy", "oracle:right",
                  "--out", str(blocker / "run"))
    assert done.returncode == 1
    assert f"error: could not write {blocker}/run/trajectories" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unknown_domain_in_the_mixture_suggests_near_matches(rlhub_home, tmp_path) -> None:
    mix = _mixture(tmp_path, {"domains": {"looptest/revers-v1": {"weight": 1}}})
    done = _rlhub(rlhub_home, "eval", "--mixture", mix, "--policy", "oracle:right", "--out",
                  str(tmp_path / "run"))
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: mixture file {mix}: ")
    assert "did you mean 'looptest/reverse-v1'" in done.stderr


def test_a_yaml_mixture_with_a_glob_selects_the_matching_domains(rlhub_home, tmp_path) -> None:
    mix = tmp_path / "mix.yaml"
    mix.write_text("strategy: static\ndomains:\n  'looptest/re*': {weight: 1}\n")
    done = _rlhub(rlhub_home, "eval", "--mixture", str(mix), "--policy", "oracle:right",
                  "-n", "2", "--out", str(tmp_path / "run"), "--json")
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout)["domains"]) == ["looptest/reverse-v1"]
