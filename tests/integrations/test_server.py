"""`rlhub serve`: the reward protocol, the /v1 environment API, queueing and metrics."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")

from rlhub import registry
from rlhub.integrations.openrlhf.export import label_of
from rlhub.integrations.server.app import ServerConfig, create_app
from rlhub.integrations.server.process import ServerProcess
from rlhub.integrations.server.protocol import LOG_KEYS, strip_trailing_tokens
from starlette.testclient import TestClient

PROMPT = "<|im_start|>user\nsolve<|im_end|>\n<|im_start|>assistant\n"
DOMAINS = ("math/arithmetic-l1-v2", "code/py-count-v2", "instruct/lowercase-v3",
           "structured/json-schema-l1-v2", "agentic/calculator-v2")
MIXTURE = {"strategy": "static", "domains": {"math/arithmetic-l1-v2": 1.0,
                                            "code/py-roman-v2": 1.0}}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    mix = tmp_path_factory.mktemp("mix") / "mix.json"
    mix.write_text(json.dumps(MIXTURE))
    app = create_app(ServerConfig(workers=4, mixture=str(mix), episode_ttl_s=60,
                                  allow_domains=DOMAINS), registry())
    with TestClient(app) as c:
        yield c


def reward(client: TestClient, queries: list[str], labels: list[Any],
           prompts: list[str] | None = None) -> dict[str, Any]:
    resp = client.post("/get_reward", json={"query": queries, "labels": labels,
                                            "prompts": prompts or [PROMPT] * len(queries)})
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    body = resp.json()
    assert list(body["extra_logs"]) == list(LOG_KEYS)
    assert all(len(v) == len(queries) for v in [body["rewards"], body["scores"],
                                                *body["extra_logs"].values()])
    return body


def test_gold_scores_the_maximum_and_wrong_the_minimum_in_every_domain(client: TestClient) -> None:
    tasks = [registry().get(d).sample(1, seed=1)[0] for d in DOMAINS]
    queries = [PROMPT + t.gold + "<|im_end|>" for t in tasks]
    body = reward(client, queries + [PROMPT + "no idea" for _ in tasks],
                  [label_of(t) for t in tasks] * 2)
    n = len(tasks)
    assert body["rewards"][:n] == [1.0] * n and body["scores"][:n] == [1.0] * n
    assert body["extra_logs"]["passed"] == [1.0] * n + [0.0] * n
    assert body["rewards"][n:] == [0.0] * n
    assert body["extra_logs"]["error"] == [0.0] * (2 * n)


@pytest.mark.parametrize("completion", ["", "   \n\t", "garbage ~~ 0xDEADBEEF", "x" * 100_000,
                                        "\x00\x01\x1b[31m\x7f", "{{prompt}}"])
def test_adversarial_completions_score_below_the_maximum_without_an_error(
        client: TestClient, completion: str) -> None:
    task = registry().get("math/arithmetic-l1-v2").sample(1, seed=2)[0]
    code = registry().get("code/py-count-v2").sample(1, seed=2)[0]
    completion = completion.replace("{{prompt}}", task.prompt_text())
    body = reward(client, [PROMPT + completion] * 2, [label_of(task), label_of(code)])
    assert all(math.isfinite(r) and 0.0 <= r < 1.0 for r in body["rewards"])


def test_empty_input_gets_empty_lists(client: TestClient) -> None:
    body = reward(client, [], [])
    assert body == {"rewards": [], "scores": [], "extra_logs": {k: [] for k in LOG_KEYS}}


@pytest.mark.parametrize("label", ["{not json", 42, {"domain": "math/arithmetic-l1-v2"},
                                   {"domain": "nope/x-v1", "task": {"id": "t", "domain": "nope/x-v1",
                                                                    "prompt": "p"}}, None])
def test_a_malformed_label_gets_reward_zero_and_an_error_flag(client: TestClient,
                                                             label: Any) -> None:
    body = reward(client, [PROMPT + "4"], [label])
    assert body["rewards"] == [0.0] and body["extra_logs"]["error"] == [1.0]


def test_a_query_without_its_prompt_as_prefix_is_flagged_and_not_verified(
        client: TestClient) -> None:
    task = registry().get("math/arithmetic-l1-v2").sample(1)[0]
    body = reward(client, ["tant\n" + task.gold], [label_of(task)])
    assert body["rewards"] == [0.0]
    assert body["extra_logs"]["prompt_mismatch"] == [1.0]


def test_trailing_special_tokens_are_stripped_before_verification() -> None:
    assert strip_trailing_tokens("answer 4<|im_end|>\n<|endoftext|>") == "answer 4"
    assert strip_trailing_tokens("keep </s> inside") == "keep </s> inside"
    assert strip_trailing_tokens("x<eot>", ("<eot>",)) == "x"


def test_a_body_that_is_not_a_reward_request_is_a_json_400(client: TestClient) -> None:
    resp = client.post("/get_reward", content=b"[1, 2]",
                       headers={"content-type": "application/json"})
    assert resp.status_code == 400 and resp.headers["content-type"] == "application/json"
    assert resp.json() == {"error": "expected a JSON object body, found list"}


def test_domains_are_listed_with_their_ranges_and_turns(client: TestClient) -> None:
    rows = {r["id"]: r for r in client.get("/v1/domains").json()["domains"]}
    assert rows["code/py-roman-v2"]["max_turns"] == 2
    assert rows["math/arithmetic-l1-v2"]["reward_range"] == [0.0, 1.0]


def test_sampling_a_domain_is_deterministic_and_validated(client: TestClient) -> None:
    body = {"domain": "math/arithmetic-l1-v2", "n": 3, "seed": 7, "start": 2}
    first, again = (client.post("/v1/sample", json=body).json() for _ in range(2))
    assert first == again and [t["id"] for t in first["tasks"]] == \
        [f"math/arithmetic-l1-v2:train:7:{i}" for i in (2, 3, 4)]
    bad = client.post("/v1/sample", json={"domain": "math/arithmetic-l1-v2", "n": 0})
    assert bad.status_code == 400
    assert bad.json()["error"] == "expected 'n' to be an integer in [1, 1024], found 0"
    assert client.post("/v1/sample", json={"domain": "math/nope-v1"}).status_code == 404


def test_an_episode_repairs_and_its_step_rewards_sum_to_the_discounted_return(
        client: TestClient) -> None:
    task = registry().get("code/py-roman-v2").sample(1, seed=3)[0]
    opened = client.post("/v1/episodes", json={"task": task.to_dict()}).json()
    assert opened["max_turns"] == 2 and opened["observation"] == task.prompt
    path = f"/v1/episodes/{opened['episode_id']}/step"
    first = client.post(path, json={"completion": "def nothing(): pass"}).json()
    assert first["done"] is False and first["reward"] == 0.0
    assert first["observation"].startswith("Your answer did not pass.")
    second = client.post(path, json={"completion": task.gold}).json()
    assert second["done"] is True and second["observation"] is None
    assert first["reward"] + second["reward"] == pytest.approx(0.8)
    assert second["info"]["repair_turns"] == 1 and second["info"]["passed"] is True
    gone = client.post(path, json={"completion": task.gold})
    assert gone.status_code == 404 and "unknown episode" in gone.json()["error"]


def test_an_episode_can_be_opened_by_index_and_closed_early(client: TestClient) -> None:
    opened = client.post("/v1/episodes", json={"domain": "math/arithmetic-l1-v2", "index": 5})
    episode = opened.json()
    assert episode["task"]["id"] == "math/arithmetic-l1-v2:train:0:5"
    closed = client.delete(f"/v1/episodes/{episode['episode_id']}").json()
    assert closed == {"episode_id": episode["episode_id"], "closed": True}


def test_whole_groups_are_observed_and_malformed_reports_are_refused(client: TestClient) -> None:
    before = client.get("/v1/scheduler/weights").json()["observed_groups"]
    whole = client.post("/v1/scheduler/observe", json={"domain": "code/py-roman-v2",
                                                       "group_rewards": [[1, 1], [0, 1]]})
    assert whole.json() == {"observed_groups": 2, "zero_variance": 1}
    state = client.get("/v1/scheduler/weights").json()
    assert state["observed_groups"] == before + 2
    assert set(state["weights"]) == set(MIXTURE["domains"])
    bad = client.post("/v1/scheduler/observe", json={"domain": "rg/ab-v3", "group_rewards": []})
    assert bad.status_code == 400 and "expected a domain of the server's mixture" in bad.text
    nan = client.post("/v1/scheduler/observe", json={"domain": "code/py-roman-v2",
                                                     "group_rewards": [[1, "x"]]})
    assert nan.status_code == 400 and "expected 'group_rewards' as a list of lists" in nan.text


def test_metrics_count_requests_verifications_and_errors(client: TestClient) -> None:
    task = registry().get("math/arithmetic-l1-v2").sample(1)[0]
    reward(client, [PROMPT + task.gold, PROMPT + "x"], [label_of(task), "{bad"])
    text = client.get("/metrics").text
    assert 'rlhub_requests_total{endpoint="/get_reward",status="200"}' in text
    assert 'rlhub_verifications_total{domain="math/arithmetic-l1-v2",outcome="passed"}' in text
    assert 'rlhub_verifier_errors_total{domain="unknown",kind="label"}' in text
    assert "rlhub_queue_inflight" in text and "rlhub_queue_waiting" in text
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["pool"] == {"kind": "thread", "workers": 4}


def test_requests_beyond_the_admission_limit_wait_instead_of_failing(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """One admitted request at a time, 64 concurrent clients on new connections: all answered."""
    aiohttp = pytest.importorskip("aiohttp", reason="aiohttp is not installed")
    task = registry().get("code/py-count-v2").sample(1)[0]
    home = tmp_path_factory.mktemp("home")

    async def load(url: str) -> list[float]:
        body = {"query": [PROMPT + task.gold], "prompts": [PROMPT], "labels": [label_of(task)]}

        async def one() -> float:
            async with aiohttp.ClientSession() as s, s.post(url, json=body) as resp:
                assert resp.status == 200
                return (await resp.json())["rewards"][0]

        return list(await asyncio.gather(*(one() for _ in range(64))))

    with ServerProcess(["--workers", "2", "--max-inflight", "1"],
                       env={"RLHUB_HOME": str(home)}) as server:
        rewards = asyncio.run(load(server.url + "/get_reward"))
        metrics = _get_text(server.url + "/metrics")
    assert rewards == [1.0] * 64
    assert 'rlhub_requests_total{endpoint="/get_reward",status="200"} 64.0' in metrics


def _get_text(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read().decode()
