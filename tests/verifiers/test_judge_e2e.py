"""Hybrid rule + judge domains end to end: ``rlhub eval`` and ``rlhub serve`` in subprocesses.

One scripted server plays both the policy (answers scripted per prompt: gold for even task
indices, a wrong answer for odd ones) and the judge. The data-only hybrid domain of
``examples/judged`` and the plugin's ``judged/reasoned-arithmetic-v2`` run through the real CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from rlhub.integrations.server.process import ServerProcess
from rlhub.labels import At, label_json
from rlhub.plugins import Registry
from rlhub.store import TrajectoryStore
from rlhub.testing.judge_server import ScriptedJudge, down_url

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples" / "judged"
RLHUB = str(Path(sys.executable).parent / "rlhub")
DOMAINS = ("judgedex/science-v1", "judged/reasoned-arithmetic-v2")
WRONG = {"judgedex/science-v1": "I am not sure.\nAnswer: neon",
         "judged/reasoned-arithmetic-v2": "I guessed. The answer is \\boxed{-1}."}
N = 3


def _registry() -> Registry:
    import rlhub_judged.plugin

    return Registry(plugins=[rlhub_judged.plugin], domain_files=[EXAMPLES / "science.yaml"],
                    autoload=False)


@pytest.fixture(scope="module")
def scripted() -> dict[str, str]:
    """The policy's answers: the prompt of every eval task (test split, seed 0) to a completion."""
    reg = _registry()
    answers = {}
    for domain_id in DOMAINS:
        for i, task in enumerate(reg.get(domain_id).sample(N, split="test", seed=0)):
            answers[task.prompt] = task.gold if i % 2 == 0 else WRONG[domain_id]
    return answers


def _env(home: Path, judge_url: str) -> dict[str, str]:
    return {**os.environ, "RLHUB_HOME": str(home), "RLHUB_DISABLE_AUTOLOAD": "1",
            "RLHUB_PLUGINS": "rlhub_judged.plugin", "RLHUB_JUDGE_URL": judge_url,
            "RLHUB_JUDGE_MODEL": "scripted-judge", "RLHUB_JUDGE_RETRIES": "1",
            "RLHUB_JUDGE_DEADLINE_S": "5"}


def _eval(tmp_path: Path, policy_url: str,
          judge_url: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    run = tmp_path / "run"
    cmd = [RLHUB, "--domains-file", str(EXAMPLES / "science.yaml"), "eval", "--mixture",
           str(EXAMPLES / "mixture.yaml"), "--policy", f"openai:{policy_url}#scripted-policy",
           "-n", str(N), "--out", str(run), "--json"]
    done = subprocess.run(cmd, env=_env(tmp_path / "home", judge_url), capture_output=True,
                          check=False, text=True, timeout=240)
    return done, run


def test_rlhub_eval_runs_hybrid_domains_with_gates_and_a_judge(scripted, tmp_path):
    with ScriptedJudge(answers=scripted) as server:
        done, run = _eval(tmp_path, server.url, server.url)
        judge_calls = server.judge_calls
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads(done.stdout)
    assert sorted(metrics["domains"]) == sorted(DOMAINS)
    rows = TrajectoryStore(str(run)).rows()
    assert len(rows) == 2 * N
    for row in rows:
        turn = row["turns"][-1]
        gold = turn["completion"] != WRONG[row["domain"]]
        assert set(turn["components"]) >= {"correct", "judge", "format"}
        assert turn["error"] is None
        if gold:
            assert row["reward"] == 1.0 and row["passed"] and turn["components"]["judge"] == 1.0
        else:  # the correctness gate kept the judge out: its component sits at the minimum
            assert turn["components"]["correct"] == 0.0 and turn["components"]["judge"] == 0.0
            assert row["reward"] < 0.5 and not row["passed"]
    gold_count = sum(1 for r in rows if r["passed"])
    assert gold_count == 4 and judge_calls == gold_count


def test_rlhub_eval_with_a_down_judge_finishes_and_records_the_error(scripted, tmp_path):
    with ScriptedJudge(answers=scripted) as policy:
        start = time.perf_counter()
        done, run = _eval(tmp_path, policy.url, down_url())
        elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-3000:]
    assert elapsed < 120
    rows = TrajectoryStore(str(run)).rows()
    assert len(rows) == 2 * N
    judged = [r for r in rows if r["turns"][-1]["completion"] != WRONG[r["domain"]]]
    assert len(judged) == 4
    for row in judged:
        assert row["reward"] == 0.0 and not row["passed"]
        assert row["turns"][-1]["error"].startswith("JudgeUnavailable: judge http://127.0.0.1:")


@pytest.fixture
def served(tmp_path):
    """``rlhub serve`` with the example domain file and a scripted judge; yields (base, judge)."""
    with ScriptedJudge() as judge:
        env = {**_env(tmp_path / "home", judge.url),
               "RLHUB_DOMAINS_PATH": str(EXAMPLES / "science.yaml")}
        with ServerProcess(["--workers", "2"], env=env, start_timeout_s=90) as server:
            yield server.url, judge


def test_rlhub_serve_answers_get_reward_and_verify_with_the_hybrid_judge(served):
    base, judge = served
    reg = _registry()
    tasks = reg.get(DOMAINS[0]).sample(2, split="test", seed=0)
    # a data file's rows keep their own ids, so the labels say where the tasks come from
    labels = [label_json(t, at=At("test", 0, i)) for i, t in enumerate(tasks)]
    responses = [tasks[0].gold, "Not sure.\nAnswer: argon"]
    body = {"query": [t.prompt + r for t, r in zip(tasks, responses)],
            "prompts": [t.prompt for t in tasks], "labels": labels}
    got = httpx.post(f"{base}/get_reward", json=body, timeout=60).json()
    assert got["rewards"] == [1.0, 0.0]  # the format alone is a gate, never paid
    assert got["extra_logs"]["passed"] == [1.0, 0.0] and got["extra_logs"]["error"] == [0.0, 0.0]
    assert got["extra_logs"]["format_ok"] == [1.0, 1.0]
    assert judge.judge_calls == 1  # the wrong answer never reached the judge
    verdict = httpx.post(f"{base}/v1/verify", json={"label": labels[1],
                                                    "completion": tasks[1].gold}, timeout=60).json()
    assert verdict["reward"] == 1.0 and verdict["passed"] and verdict["error"] is None
    assert judge.judge_calls == 2
    metrics = httpx.get(f"{base}/metrics", timeout=30).text
    assert 'rlhub_judge_requests_total{' in metrics and "rlhub_judge_request_seconds_bucket" in metrics


def test_rlhub_serve_answers_with_the_minimum_and_an_error_when_the_judge_stops(served):
    base, judge = served
    judge.stop()
    task = _registry().get(DOMAINS[0]).sample(1, split="test", seed=0)[0]
    start = time.perf_counter()
    verdict = httpx.post(f"{base}/v1/verify", json={"label": label_json(task, at=At("test", 0, 0)),
                                                    "completion": task.gold}, timeout=60).json()
    assert time.perf_counter() - start < 30  # refused connections, not a 60 s timeout
    assert verdict["reward"] == 0.0 and not verdict["passed"]
    assert verdict["error"].startswith("JudgeUnavailable: ")
