"""A mixture of native and bridged domains through rlhub's eval, reverify, report and server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RLHUB = str(Path(sys.executable).parent / "rlhub")
MIXTURE = {"strategy": "uniform", "domains": {
    "math/tiny-count-v1": {}, "textarena/guess-the-number-v1": {}, "textarena/sudoku-easy-v1": {},
    "gem/sudoku-easy-v1": {}, "gem/guess-the-number-easy-v1": {}}}


def rlhub(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``rlhub ARGS`` with its own home, run there (so a pull's project lock stays there too)."""
    env = {**os.environ, "RLHUB_HOME": str(home)}
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.run([RLHUB, *args], env=env, capture_output=True, text=True, timeout=600,
                          cwd=home)


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    home, tmp = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("mixed")
    (tmp / "mix.json").write_text(json.dumps(MIXTURE))
    done = rlhub(home, "eval", "--mixture", str(tmp / "mix.json"), "--policy", "builtin:tiny",
                 "-n", "2", "--out", str(tmp / "run"), "--max-tokens", "16", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return home, tmp / "run", json.loads(done.stdout)


def test_a_mixed_eval_over_native_textarena_and_gem_domains_reports_each(mixed_run):
    home, run, metrics = mixed_run
    assert sorted(metrics["domains"]) == sorted(MIXTURE["domains"])
    for domain_id, m in metrics["domains"].items():
        assert m["status_counts"].get("env_error", 0) == 0, (domain_id, m)
        assert m["n_samples"] == 2
    games = [metrics["domains"][d] for d in MIXTURE["domains"] if not d.startswith("math/")]
    assert all(m["turns_mean"] >= 1.0 for m in games)
    report = rlhub(home, "report", str(run))
    assert report.returncode == 0, report.stderr[-2000:]
    html = next(run.rglob("index.html")).read_text()
    assert all(domain_id in html for domain_id in MIXTURE["domains"])


def test_every_stored_game_replays_to_the_same_rewards_in_a_fresh_process(mixed_run):
    home, run, _ = mixed_run
    check = rlhub(home, "reverify", str(run), "--json")
    assert check.returncode == 0, check.stderr[-2000:]
    assert json.loads(check.stdout) == {"checked": 10, "mismatches": []}


def test_a_lock_of_the_mixture_records_each_bridges_source_version(mixed_run, tmp_path):
    home, _, _ = mixed_run
    (tmp_path / "mix.json").write_text(json.dumps(MIXTURE))
    done = rlhub(home, "lock", "--mixture", str(tmp_path / "mix.json"), "--out",
                 str(tmp_path / "rlhub.lock"))
    assert done.returncode == 0, done.stderr[-2000:]
    domains = json.loads((tmp_path / "rlhub.lock").read_text())["domains"]
    from importlib import metadata

    assert domains["textarena/sudoku-easy-v1"]["source_versions"] == {
        "textarena": metadata.version("textarena")}
    assert domains["gem/sudoku-easy-v1"]["source_versions"] == {
        "gem-llm": metadata.version("gem-llm")}
    assert "source_versions" not in domains["math/tiny-count-v1"]


def test_rlhub_serve_plays_a_textarena_episode_and_rewards_a_gem_label(tmp_path):
    """OpenRLHF's agent uses /v1/episodes; its one-shot reward model uses /get_reward."""
    import httpx

    from rlhub.integrations.server.process import ServerProcess

    (tmp_path / "mix.json").write_text(json.dumps(MIXTURE))
    with ServerProcess(["--mixture", str(tmp_path / "mix.json"), "--workers", "2"],
                       env={"RLHUB_HOME": str(tmp_path)}, start_timeout_s=120) as server:
        client = httpx.Client(base_url=server.url, timeout=60)
        opened = client.post("/v1/episodes", json={"domain": "textarena/guess-the-number-v1",
                                                   "seed": 4, "index": 1}).json()
        low, high, returns = 1, 20, 0.0
        for _ in range(opened["max_turns"]):
            guess = (low + high) // 2
            step = client.post(f"/v1/episodes/{opened['episode_id']}/step",
                               json={"completion": f"[{guess}]"}).json()
            returns += step["reward"]
            if step["done"]:
                break
            low, high = (guess + 1, high) if "higher" in step["observation"] else (low, guess - 1)
        assert step["done"] and step["info"]["passed"] and returns == pytest.approx(1.0)
        task = client.post("/v1/sample", json={"domain": "gem/guess-the-number-easy-v1",
                                               "n": 1}).json()["tasks"][0]
        label = json.dumps({"domain": task["domain"], "task": task})
        prompt = task["prompt"]
        rewards = client.post("/get_reward", json={
            "query": [prompt + "\\boxed{oops}"], "prompts": [prompt], "labels": [label]}).json()
        assert rewards["rewards"] == [0.0] and rewards["extra_logs"]["error"] == [0]


def test_a_locked_run_refuses_to_go_ahead_when_a_bridges_source_package_changed(tmp_path):
    import rlhub
    from rlhub.integrations.hub.lock import check_lock, mixture_lock, write_lock
    from rlhub.provenance import distribution_version

    reg = rlhub.registry()
    write_lock(mixture_lock(MIXTURE, reg), tmp_path / "rlhub.lock")
    assert check_lock(tmp_path / "rlhub.lock", reg) == []
    upgraded = rlhub.Registry(versions=lambda name: "0.7.5" if name == "textarena"
                              else distribution_version(name))
    problems = check_lock(tmp_path / "rlhub.lock", upgraded)
    assert len(problems) == 2 * 2  # both TextArena domains: source_versions, verifier_code_hash
    assert any("textarena/sudoku-easy-v1: source_versions changed" in p for p in problems)


def test_a_pushed_bridged_domain_records_its_bridge_and_source_version_through_a_pull(tmp_path):
    from importlib import metadata

    bundle = f"file://{tmp_path / 'remote'}"
    pushed = rlhub(tmp_path, "push", "textarena/tower-of-hanoi-v1", "--to", bundle,
                   "--test-size", "2", "--train-size", "1", "--json")
    assert pushed.returncode == 0, pushed.stderr[-2000:]
    pulled = rlhub(tmp_path / "elsewhere", "pull", bundle, "--json")
    assert pulled.returncode == 0, pulled.stderr[-2000:]
    where = Path(json.loads(pulled.stdout)["path"])
    record = json.loads((where / "rlhub.lock").read_text())["domains"][
        "textarena/tower-of-hanoi-v1"]
    assert (record["distribution"], record["source_versions"]) == (
        "rlhub-textarena", {"textarena": metadata.version("textarena")})
    manifest = json.loads(next((where / "manifests").glob("*.json")).read_text())
    assert manifest["requires"] == {"textarena": f"=={metadata.version('textarena')}"}


def test_the_local_trainer_runs_a_mixture_of_native_and_bridged_domains(tmp_path, monkeypatch):
    """TRL's GRPO is single-turn: a game task is trained as a one-move game (Domain.verify)."""
    import rlhub
    from rlhub.integrations.trainer.local import LocalTrainer
    from rlhub.store import TrajectoryStore

    monkeypatch.setenv("RLHUB_HOME", str(tmp_path / "home"))
    domains = ["math/tiny-count-v1", "textarena/tower-of-hanoi-v1", "gem/guess-the-number-easy-v1"]
    config = {
        "strategy": "static", "domains": {d: 1.0 for d in domains},
        "train": {"warmup": {"steps": 4, "batch_size": 16},  # games (gold: false) sit it out
                  "grpo": {"steps": 3, "prompts_per_step": 3,
                           "generations": 4, "max_completion_tokens": 12, "log_every": 1,
                           "store_every": 1},
                  "heldout": {"items": 2, "samples": 2, "every_steps": 100, "inrun_items": 2,
                              "inrun_samples": 2}},
    }
    summary = LocalTrainer(config, tmp_path / "run", registry=rlhub.registry()).run()
    rows = TrajectoryStore(str(tmp_path / "run")).rows()
    assert summary["steps"] >= 1 and {r["domain"] for r in rows} <= set(domains)
    assert {r["domain"] for r in rows} - {"math/tiny-count-v1"}, "no bridged task was trained"
    assert all(r["status"] != "env_error" for r in rows)
