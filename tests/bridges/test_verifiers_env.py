"""rlhub's mixture as a verifiers environment: ``load_environment`` and verifiers' own ``vf-eval``
against ``rlhub policy serve builtin:tiny``."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import rlhub

BIN = Path(sys.executable).parent
# a single-turn domain, and a two-turn repair domain whose verifier runs code in the sandbox
MIX = {"strategy": "static", "domains": {"math/tiny-succ-v1": {"weight": 2.0},
                                         "code/py-count-v2": {"weight": 1.0}}}


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    from rlhub.serving import announced_url

    log = tmp_path_factory.mktemp("policy") / "serve.log"
    with log.open("wb") as err:  # the server binds a free port itself and announces it
        proc = subprocess.Popen([str(BIN / "rlhub"), "policy", "serve", "builtin:tiny", "--port",
                                 "0"], stdout=subprocess.DEVNULL, stderr=err)
    url = None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        url = announced_url(log.read_text(errors="replace"))
        try:
            if url:
                with urllib.request.urlopen(url + "/health", timeout=2):
                    break
        except OSError:
            pass
        time.sleep(0.5)
    assert url, log.read_text(errors="replace")[-2000:]
    yield url + "/v1"
    proc.terminate()
    proc.wait(30)


@pytest.fixture
def mixture(tmp_path: Path) -> Path:
    path = tmp_path / "mix.json"
    path.write_text(json.dumps(MIX))
    return path


def test_load_environment_returns_a_verifiers_env_over_the_mixture(mixture):
    import verifiers.v1 as vf

    from rlhub.integrations.exports.verifiers_env import load_environment

    env = load_environment(mixture=str(mixture), n=6, split="train", seed=3)
    assert isinstance(env, vf.Env) and type(env).__name__ == "RlhubEnv"
    tasks = list(env.taskset)
    assert collections.Counter(t.data.domain for t in tasks) == {"math/tiny-succ-v1": 4,
                                                                 "code/py-count-v2": 2}
    data = tasks[0].data
    first = rlhub.registry().get(data.domain).task("train", 3, data.index)
    assert (data.task_id, tasks[0].key) == (first.id, first.id)
    assert data.prompt_text == first.prompt_text()
    assert len({t.key for t in tasks}) == 6


def test_vf_eval_scores_rlhub_domains_with_rlhubs_own_verifiers(tiny_policy, mixture, tmp_path):
    out = tmp_path / "vf-out"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "OPENAI_API_KEY": "x"}
    done = subprocess.run(
        [str(BIN / "vf-eval"), "rlhub-env", "--env.taskset.mixture", str(mixture),
         "--env.taskset.n", "3", "-n", "3", "--model", "tiny", "--client.base-url", tiny_policy,
         "--client.api-key-var", "OPENAI_API_KEY", "--env.agent.runtime.type", "subprocess",
         "--push", "false", "--sampling.max-tokens", "8", "--output-dir", str(out)],
        capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    episodes = [json.loads(line) for line in next(out.rglob("traces.jsonl")).open()]
    traces = [t for e in episodes for t in e.get("traces", [e])]
    assert len(traces) == 3 and all(not t["errors"] for t in traces)
    registry = rlhub.registry()
    for trace in traces:
        data = trace["task"]["data"]
        domain = registry.get(data["domain"])
        task = domain.task(data["split"], data["seed"], data["index"])
        # what verifiers hands the environment: an empty reply is serialised without "content"
        replies = [(n["message"].get("content") or "").strip() for n in trace["nodes"]
                   if n.get("sampled")]
        assert "rlhub/passed" in trace["metrics"]
        if domain.manifest.max_turns == 1:
            assert len(replies) == 1
            expected = domain.verify(task, replies[0])
            assert trace["rewards"]["rlhub"]["score"] == expected.reward
            assert trace["metrics"]["rlhub/correct"] == expected.components["correct"]
        else:  # a failed attempt gets the verifier's feedback and one repair
            assert len(replies) == domain.manifest.max_turns == 2
            feedback = [n["message"]["content"] for n in trace["nodes"]
                        if n["message"]["role"] == "user"][-1]
            assert feedback.startswith("Your answer did not pass.")
            assert trace["rewards"]["rlhub"]["score"] == 0.0


def test_a_fault_that_is_not_the_models_fails_the_episode_instead_of_scoring_zero(tmp_path,
                                                                                 monkeypatch):
    """Played harness-free through rlhub-verifiers' stand-in agents (no model needed)."""
    from rlhub.integrations.exports.verifiers_env import load_environment
    from rlhub_verifiers import aio
    from rlhub_verifiers.episode import TurnChannel, bridged_env_class

    monkeypatch.delenv("RLHUB_JUDGE_URL", raising=False)
    monkeypatch.delenv("RLHUB_JUDGE_MODEL", raising=False)
    path = tmp_path / "judged.json"
    path.write_text(json.dumps({"strategy": "uniform", "domains": {"judged/explain-v1": {}}}))
    env = load_environment(mixture=str(path), n=1)
    played = bridged_env_class(type(env))(env.config)
    channel = TurnChannel(aio.loop())
    future = aio.submit(played.run_episode(next(iter(played.taskset)), channel))
    channel.give("An explanation.", final=True)
    episode = future.result(timeout=120)
    assert not episode.ok and [e.type for e in episode.errors] == ["EnvError"]
    assert "rlhub: a judge failure, not the model's: JudgeUnavailable" in episode.errors[0].message
    assert all(r is None or r.score == 0 for t in episode.traces for r in t.rewards.values())
    assert all("rlhub" not in t.rewards for t in episode.traces)


def test_a_swe_agent_episode_plays_through_the_verifiers_export(tmp_path):
    """A repository episode (workspace, tools, hidden tests) through verifiers' env interface:
    the tool call runs, the submission is graded, the workspace is closed after."""
    from rlhub.integrations.exports.verifiers_env import load_environment
    from rlhub.sandbox import leases
    from rlhub_verifiers import aio
    from rlhub_verifiers.episode import TurnChannel, bridged_env_class

    path = tmp_path / "swe.json"
    path.write_text(json.dumps({"strategy": "uniform",
                                "domains": {"swe/syn-fix-test-s-agent-v1": {}}}))
    env = load_environment(mixture=str(path), n=1)
    played = bridged_env_class(type(env))(env.config)
    task = next(iter(played.taskset))
    data = task.data
    gold = rlhub.registry().get(data.domain).task(data.split, data.seed, data.index).gold
    channel = TurnChannel(aio.loop())
    future = aio.submit(played.run_episode(task, channel))
    channel.give('<tool_call>{"name": "run_tests", "arguments": {}}</tool_call>', final=False)
    kind, observation = channel.next_event(timeout=300)  # the tool's result, the next turn
    assert kind == "ask" and '<tool_response name="run_tests">' in observation
    channel.give(gold, final=True)
    episode = future.result(timeout=600)
    assert episode.ok, [e.message for e in episode.errors]
    assert [t.rewards["rlhub"].score for t in episode.traces] == [1.0]
    label = f"swe episode {data.task_id}"
    assert not [r for r in leases.records() if r.label == label and r.owner_alive]
