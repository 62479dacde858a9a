"""`rlhub train --backend openrlhf`: the command it builds, checked by OpenRLHF 0.11.2's own parser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rlhub.errors import TrainerError
from rlhub.integrations.openrlhf.job import build_command, load_config, train_ppo_argv
from typer.testing import CliRunner

pytest.importorskip("openrlhf", reason="openrlhf is not installed (pip install --no-deps "
                    "openrlhf==0.11.2)")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "openrlhf.yaml"
HARNESS = Path(__file__).with_name("test_openrlhf_harness.py")
URL = "http://10.0.0.5:8000"


def parse_all(argvs: list[list[str]]) -> list[dict[str, Any]]:
    """Each argv through ``train_ppo_ray``'s argparse and validation (one child process)."""
    done = subprocess.run([sys.executable, str(HARNESS), "parse", json.dumps(argvs)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def config(**overrides: Any) -> dict[str, Any]:
    return {**load_config(EXAMPLE), **overrides}


@pytest.fixture(scope="module")
def parsed() -> dict[str, Any]:
    """The example config (reward mode), agent mode with PPO, and a legacy flag, parsed once."""
    reward = build_command(config(), "/data/prompts.jsonl", URL, "/data/eval.jsonl")
    agent = build_command(config(mode="agent", algo="ppo"), "/data/prompts.jsonl", URL)
    rloo = build_command(config(algo="rloo", dynamic_filtering=None), "/data/p.jsonl", URL)
    results = parse_all([train_ppo_argv(reward), train_ppo_argv(agent), train_ppo_argv(rloo),
                         ["--remote_rm_url", URL + "/get_reward"]])
    return {"reward": (reward, results[0]), "agent": (agent, results[1]),
            "rloo": (rloo, results[2]), "legacy": results[3]}


def test_the_example_config_passes_openrlhf_argparse_and_validation(parsed: dict) -> None:
    plan, result = parsed["reward"]
    assert result["reached"] == "ray.init", result
    args = result["args"]
    assert args["reward"]["remote_url"] == [URL + "/get_reward"]
    assert args["algo"]["advantage"]["estimator"] == "group_norm"
    assert args["algo"]["dynamic_filtering_enable"] is True
    assert args["algo"]["dynamic_filtering_range"] == [0.0, 1.0]
    assert args["data"]["prompt_dataset"] == "/data/prompts.jsonl"
    assert (args["data"]["input_key"], args["data"]["label_key"]) == ("prompt", "label")
    assert args["data"]["apply_chat_template"] is True
    assert args["eval"]["dataset"] == "/data/eval.jsonl"
    assert args["rollout"]["n_samples_per_prompt"] == 8
    assert args["algo"]["kl"]["use_loss"] is True and args["algo"]["kl"]["estimator"] == "k3"
    assert plan.command[:5] == ["ray", "job", "submit", "--address", "http://127.0.0.1:8265"]
    assert plan.command[plan.command.index("--") + 1:][:3] == \
        ["python3", "-m", "openrlhf.cli.train_ppo_ray"]


def test_agent_mode_passes_the_agent_module_and_its_environment(parsed: dict) -> None:
    plan, result = parsed["agent"]
    assert result["reached"] == "ray.init", result
    args = result["args"]
    assert args["train"]["agent_func_path"] == str(ROOT / "integrations" / "openrlhf" / "agent.py")
    assert Path(args["train"]["agent_func_path"]).is_file()
    assert args["reward"]["remote_url"] == ["agent"]  # OpenRLHF rewrites it, then splits on ","
    assert args["algo"]["advantage"]["estimator"] == "gae"
    runtime = json.loads(plan.command[plan.command.index("--runtime-env-json") + 1])
    assert runtime["env_vars"] == {"RLHUB_SERVER_URL": URL, "RLHUB_SCHEDULE": "1"}


def test_rloo_without_dynamic_filtering_parses(parsed: dict) -> None:
    plan, result = parsed["rloo"]
    assert result["reached"] == "ray.init", result
    assert result["args"]["algo"]["advantage"]["estimator"] == "rloo"
    assert result["args"]["algo"]["dynamic_filtering_enable"] is False
    assert "--algo.dynamic_filtering_enable" not in plan.command


def test_the_parser_is_real_it_rejects_the_pre_0_10_2_flag(parsed: dict) -> None:
    assert parsed["legacy"]["reached"] == "exit" and parsed["legacy"]["status"] == 2
    assert "unrecognized arguments: --remote_rm_url" in parsed["legacy"]["stderr"]


@pytest.mark.parametrize(("overrides", "message"), [
    ({"model": None}, "expected the field 'model'"),
    ({"algo": "grpo", "n_samples_per_prompt": 1}, "algo grpo needs n_samples_per_prompt >= 2"),
    ({"algo": "sft"}, "field algo: expected one of"),
    ({"mode": "both"}, "field mode: expected one of ('reward', 'agent'), found 'both'"),
    ({"algo": "ppo", "n_samples_per_prompt": 1, "dynamic_filtering": [0, 1]},
     "dynamic_filtering needs n_samples_per_prompt >= 2, found 1"),
    ({"n_samples_per_prompt": 8, "openrlhf": {"rollout.n_samples_per_prompt": 4}},
     "n_samples_per_prompt is 8 but openrlhf: rollout.n_samples_per_prompt is 4; give the group "
     "size in one place"),
    ({"n_samples_per_prompt": None, "openrlhf": {"rollout.n_samples_per_prompt": 1}},
     "algo grpo needs n_samples_per_prompt >= 2, found 1"),
])
def test_bad_configs_are_refused_before_openrlhf_sees_them(overrides: dict, message: str) -> None:
    raw = {**load_config(EXAMPLE), **overrides}
    with pytest.raises(TrainerError, match=None) as info:
        load_config(raw)
    assert message in str(info.value)


def test_the_train_command_exports_the_prompts_and_prints_both_commands(tmp_path: Path) -> None:
    from rlhub.cli import app

    cfg = tmp_path / "train.yaml"
    cfg.write_text(EXAMPLE.read_text().replace("n: 20000", "n: 12")
                   .replace("eval_n: 400", "eval_n: 4"))
    result = CliRunner().invoke(app, ["train", str(cfg), "--backend", "openrlhf",
                                      "--out", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout.strip().splitlines()[-1])
    rows = (tmp_path / "run" / "prompts.jsonl").read_text().splitlines()
    assert len(rows) == 12 and sum(out["counts"].values()) == 12
    held = (tmp_path / "run" / "eval.jsonl").read_text().splitlines()
    assert len(held) == 4
    assert {json.loads(json.loads(r)["label"])["role"] for r in rows} == {"train"}
    assert {json.loads(json.loads(r)["label"])["role"] for r in held} == {"eval"}
    assert out["serve_command"][:2] == ["rlhub", "serve"]
    mixture = out["serve_command"][out["serve_command"].index("--mixture") + 1]
    assert mixture == str(tmp_path / "run" / "mixture.yaml") and Path(mixture).is_file()
    assert "--data.prompt_dataset" in out["command"]
    assert out["command"][out["command"].index("--data.prompt_dataset") + 1] == \
        str(tmp_path / "run" / "prompts.jsonl")


def test_an_unknown_backend_is_named_with_the_known_ones(tmp_path: Path) -> None:
    from rlhub.cli import app

    result = CliRunner().invoke(app, ["train", str(EXAMPLE), "--backend", "openrhlf"])
    assert result.exit_code == 2
    assert "unknown trainer backend 'openrhlf'; did you mean 'openrlhf'?" in result.output


def test_the_local_backend_dispatches_through_the_trainer_hook(tmp_path: Path) -> None:
    from rlhub.cli import app
    from rlhub.plugins import hookimpl, registry

    seen: list[dict[str, Any]] = []

    class Recorder:
        def __init__(self, config: dict[str, Any]):
            self.config = config

        def run(self) -> dict[str, Any]:
            seen.append(self.config)
            return {"backend": "local", "ok": True}

    class LocalTrainerPlugin:
        @hookimpl
        def rlhub_make_trainer(self, backend: str, config: dict[str, Any]) -> Any:
            return Recorder(config) if backend == "local" else None

    cfg = tmp_path / "demo.yaml"
    cfg.write_text("mixture: mix.yaml\nsteps: 3\n")
    plugin = LocalTrainerPlugin()
    registry().pm.register(plugin, name="test-local-trainer")
    try:
        result = CliRunner().invoke(app, ["train", str(cfg), "--backend", "local", "--out",
                                          str(tmp_path / "run"), "--json"])
    finally:
        registry().pm.unregister(plugin)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"backend": "local", "ok": True}
    assert seen[0]["steps"] == 3 and seen[0]["out"] == str(tmp_path / "run")
    assert seen[0]["base_dir"] == str(tmp_path) and seen[0]["submit"] is False


def test_a_lock_that_does_not_match_stops_the_run_before_anything_is_written(
        tmp_path: Path) -> None:
    from rlhub.cli import app

    lock = tmp_path / "rlhub.lock"
    lock.write_text("{not a lock")
    result = CliRunner().invoke(app, ["train", str(EXAMPLE), "--backend", "openrlhf", "--out",
                                      str(tmp_path / "run"), "--locked", str(lock)])
    assert result.exit_code == 2
    assert f"refusing to run: the environment differs from the lock {lock}" in result.output
    assert not (tmp_path / "run").exists()


def test_the_group_size_given_only_to_openrlhf_is_the_one_everything_uses() -> None:
    from rlhub.integrations.openrlhf.job import group_size

    raw = {**load_config(EXAMPLE), "n_samples_per_prompt": None,
           "openrlhf": {"rollout.n_samples_per_prompt": 4}}
    plan = build_command(load_config(raw), "/data/p.jsonl", URL)
    argv = train_ppo_argv(plan)
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--rollout.n_samples_per_prompt"] \
        == ["4"]
    assert group_size(raw) == 4


def test_submitting_to_a_hub_that_cannot_serve_the_job_is_refused_at_launch(
        tmp_path: Path) -> None:
    from rlhub.integrations.openrlhf.job import check_server
    from rlhub.integrations.server.process import ServerProcess

    agent = {**load_config(EXAMPLE), "mode": "agent", "schedule": True}
    with ServerProcess(["--workers", "1"], env={"RLHUB_HOME": str(tmp_path)}) as server:
        with pytest.raises(TrainerError) as no_scheduler:
            check_server(server.url, agent, ["math/arithmetic-l1-v2"])
        with pytest.raises(TrainerError) as missing:
            check_server(server.url, {**agent, "schedule": False},
                         ["flaky/ok-v1", "math/arithmetic-l1-v2"])
        check_server(server.url, {**agent, "schedule": False}, ["math/arithmetic-l1-v2"])
    assert "runs without --mixture, so it has no scheduler" in str(no_scheduler.value)
    assert "the server does not serve 1 domain(s) of the mixture (flaky/ok-v1)" in str(missing.value)
    with pytest.raises(TrainerError, match="expected `rlhub serve` at"):
        check_server("http://127.0.0.1:9", agent, [])
