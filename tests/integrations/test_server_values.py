"""The server's reward path passes typed values: a Task in, a Score out, serialised only where
bytes leave the process (the HTTP body, a Ray actor's call)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")

from rlhub import Score, Task, registry
from rlhub.integrations.openrlhf.export import label_of
from rlhub.integrations.server.app import ServerConfig, create_app
from rlhub.integrations.server.pool import ThreadPool, Verified
from rlhub.integrations.server.protocol import LOG_KEYS, Outcome, answer
from starlette.testclient import TestClient

DOMAIN = "math/arithmetic-l1-v2"
PROMPT = "<|im_start|>user\nsolve<|im_end|>\n<|im_start|>assistant\n"


def test_the_thread_pool_verifies_a_task_without_serialising_it_or_its_score(
        monkeypatch: pytest.MonkeyPatch) -> None:
    task = registry().get(DOMAIN).sample(1, seed=0)[0]

    def serialised(*_: Any) -> Any:
        raise AssertionError("the thread pool serialised a task or a score")

    for cls, name in [(Task, "to_dict"), (Task, "from_dict"), (Score, "to_dict"),
                      (Score, "from_dict")]:
        monkeypatch.setattr(cls, name, serialised)
    pool = ThreadPool(registry(), 1)
    try:
        verified = asyncio.run(pool.verify(DOMAIN, task, str(task.gold)))
    finally:
        pool.close()
    assert isinstance(verified.score, Score) and verified.score.passed
    assert verified.score.reward == 1.0 and verified.verify_ms >= 0.0


def test_a_verification_crosses_to_ray_as_plain_data_and_comes_back_equal() -> None:
    score = Score(0.5, {"correct": 0.5}, False, "close", None,
                  {"status": "ok", "stdout": b"\xff bytes"}, "answer")
    plain = Verified(score, 12.5).to_dict()
    back = Verified.from_dict(json.loads(json.dumps(plain)))
    assert back.verify_ms == 12.5
    assert back.score.exec == {"status": "ok", "stdout": "b'\\xff bytes'"}
    assert back.score == Score(**{**score.__dict__, "exec": back.score.exec})


def test_the_failure_class_stays_a_string_until_the_answer_is_written() -> None:
    refused = Outcome.failure(0.0, "label: forged", "label")
    passed = Outcome(1.0, 1.0, "none", passed=True, format_ok=1.0, verify_ms=3.0)
    assert refused.failure_class == "label" and passed.failure_class == "none"
    logs = answer([refused, passed])["extra_logs"]
    assert list(logs) == list(LOG_KEYS)
    assert logs["failure_label"] == [1.0, 0.0] and logs["failure_none"] == [0.0, 1.0]
    assert logs["trainable"] == [0.0, 1.0] and logs["error"] == [1.0, 0.0]
    assert logs["verify_ms"] == [0.0, 3.0] and logs["passed"] == [0.0, 1.0]


def test_one_reward_sample_looks_its_domains_manifest_up_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reg = registry()
    task = reg.get(DOMAIN).sample(1, seed=0)[0]
    body = {"query": [PROMPT + str(task.gold)], "prompts": [PROMPT], "labels": [label_of(task)]}
    looked_up: list[str] = []
    manifest = reg.manifest

    def counted(domain_id: str) -> Any:
        looked_up.append(domain_id)
        return manifest(domain_id)

    with TestClient(create_app(ServerConfig(workers=1, allow_domains=(DOMAIN,)), reg)) as client:
        monkeypatch.setattr(reg, "manifest", counted)
        answered = client.post("/get_reward", json=body).json()
    assert answered["rewards"] == [1.0] and looked_up == [DOMAIN]
