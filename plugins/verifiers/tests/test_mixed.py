"""Mixed runs: bridged verifiers domains beside native ones in eval, report, serve and push."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from rlhub.integrations.server.process import ServerProcess

NATIVE, ARITH, GUESS = "math/tiny-succ-v1", "vf/rlhub-test-arith-v1", "vf/rlhub-test-guess-v1"


def _rlhub(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from rlhub.cli import main; main()", *args],
                          capture_output=True, text=True, env=os.environ, timeout=timeout)


def test_a_mixed_eval_reports_native_and_bridged_domains_and_reverifies(vf_registry, tmp_path):
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"strategy": "uniform",
                               "domains": {NATIVE: {}, ARITH: {}, GUESS: {}}}))
    run = tmp_path / "run"
    done = _rlhub("eval", "--mixture", str(mix), "--policy", "builtin:tiny", "-n", "2",
                  "--out", str(run), "--max-tokens", "8", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads(done.stdout)
    assert set(metrics["domains"]) == {NATIVE, ARITH, GUESS}
    for domain in (NATIVE, ARITH, GUESS):
        assert metrics["domains"][domain]["n_samples"] == 2
        assert metrics["domains"][domain]["status_counts"].get("env_error", 0) == 0
    assert metrics["domains"][GUESS]["turns_mean"] > 1
    check = _rlhub("reverify", str(run), "--json")
    assert check.returncode == 0, check.stderr[-3000:]
    assert json.loads(check.stdout) == {"checked": 6, "mismatches": []}
    report = _rlhub("report", str(run))
    assert report.returncode == 0, report.stderr[-3000:]
    html = next(Path(run).rglob("index.html")).read_text()
    assert all(domain in html for domain in (NATIVE, ARITH, GUESS))


def test_serve_rewards_native_and_bridged_labels_and_plays_a_bridged_episode(vf_registry):
    native = vf_registry.get(NATIVE).task("train", 0, 0)
    arith = vf_registry.get(ARITH).task("train", 0, 0)
    labels = [json.dumps({"domain": t.domain, "task": t.to_dict()}) for t in (native, arith)]
    prompts = ["Q: ", "Q: "]
    queries = [p + t.gold for p, t in zip(prompts, (native, arith))]
    with ServerProcess(["--workers", "2"], env=dict(os.environ)) as server:
        got = httpx.post(server.url + "/get_reward", timeout=120,
                         json={"query": queries, "prompts": prompts, "labels": labels}).json()
        assert got["rewards"] == [1.0, 1.0]
        opened = httpx.post(server.url + "/v1/episodes", timeout=120,
                            json={"domain": GUESS, "split": "train", "seed": 0,
                                  "index": 0}).json()
        step = httpx.post(f"{server.url}/v1/episodes/{opened['episode_id']}/step", timeout=120,
                          json={"completion": "65"}).json()
    assert opened["max_turns"] == 8
    assert (step["done"], step["observation"]) == (False, "65 is wrong: go lower.")


def test_a_pushed_bundle_records_the_bridge_and_the_source_version(vf_registry, tmp_path):
    done = _rlhub("push", ARITH, "--to", f"file://{tmp_path / 'remote'}", "--test-size", "4",
                  "--train-size", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads(next((tmp_path / "remote").rglob("manifests/*.json")).read_text())
    assert manifest["params"]["bridge"] == {"plugin": "rlhub-verifiers",
                                            "source": "rlhub-test-arith", "source_version": "1.2.0"}
    lock = json.loads(next((tmp_path / "remote").rglob("rlhub.lock")).read_text())
    (record,) = lock["domains"].values()
    assert record["bridge"] == manifest["params"]["bridge"]
    assert record["domain_version"] == "1.2.0"


def test_the_local_trainer_trains_on_native_and_bridged_domains_together(vf_registry, tmp_path):
    from rlhub.integrations.trainer.local import LocalTrainer
    from rlhub.store import TrajectoryStore

    config = {"strategy": "static", "domains": {NATIVE: 1.0, ARITH: 1.0},
              "train": {"warmup": {"steps": 4, "batch_size": 16},
                        "grpo": {"steps": 3, "log_every": 1,
                                 "store_every": 1, "max_completion_tokens": 8},
                        "heldout": {"items": 4, "samples": 1, "every_steps": 100, "inrun_items": 2,
                                    "inrun_samples": 1}}}
    summary = LocalTrainer(config, tmp_path / "run", registry=vf_registry).run()
    rows = TrajectoryStore(str(tmp_path / "run")).rows()
    assert {r["domain"] for r in rows} == {NATIVE, ARITH} and summary["steps"] >= 1
    bridged = [r for r in rows if r["domain"] == ARITH]
    assert all(0.0 <= r["reward"] <= 1.0 and r["status"] != "env_error" for r in bridged)
    assert (bridged[0]["plugin"], bridged[0]["domain_version"]) == ("vf", "1.2.0")


def test_openrlhfs_agent_module_plays_a_bridged_multi_turn_domain(vf_registry, monkeypatch,
                                                                   tmp_path):
    """rlhub's ``--train.agent_func_path`` module inside OpenRLHF's executor, with the
    vLLM-faithful engine of tests/integrations/test_openrlhf_agent.py, on the bridged higher/lower game."""
    import asyncio
    import importlib.util

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "integrations"))
    import offline_tokenizers
    from openrlhf_fakes import ActorView, FakeEngine, SamplingParams, ScriptedModel

    from rlhub.integrations.openrlhf.export import as_messages, label_of

    model_dir = str(offline_tokenizers.build("qwen2", tmp_path / "qwen2"))
    domain = vf_registry.get(GUESS)
    task = domain.task("train", 0, 3)
    secret = domain.source_task(task).data.secret
    with ServerProcess(["--workers", "2"], env=dict(os.environ)) as server:
        monkeypatch.setenv("RLHUB_SERVER_URL", server.url)
        path = Path(__file__).resolve().parents[3] / "integrations" / "openrlhf" / "agent.py"
        spec = importlib.util.spec_from_file_location("agent_module", str(path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        model = ScriptedModel("<|im_start|>assistant", default=[str(secret % 64 + 1), str(secret)])
        engine = ActorView(FakeEngine(model_dir, model))
        tok = engine.engine.tokenizer
        prompt = tok.apply_chat_template(as_messages(task.prompt), tokenize=False,
                                         add_generation_prompt=True)
        params = SamplingParams(max_tokens=None, skip_special_tokens=False)
        out = asyncio.run(module.AgentExecutor().execute(
            prompt, label_of(task, "eval"), params, 8192, tok, engine))
    assert out["reward"] == 1.0 and len(out["action_ranges"]) == 2
    (_, end1), (start2, _) = out["action_ranges"]
    assert "is wrong: go" in tok.decode(out["observation_tokens"][end1:start2])
