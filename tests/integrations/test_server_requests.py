"""`rlhub serve` under retrying and hostile clients: request keys, leases, failure classes.

A client is untrusted and may retry anything: double submits, a request key replayed on another
episode, a lease requested over and over. Infrastructure failures (``flakyplug``: a sandbox that
will not start, an unreachable judge, a crashing verifier) are repeated by the server and then
answered with the domain's minimum and their failure class, never as a wrong answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import flakyplug
import pytest

pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")

from rlhub import Registry, registry
from rlhub.integrations.openrlhf.export import label_of
from rlhub.integrations.server.app import ServerConfig, create_app
from rlhub.integrations.server.protocol import FAILURE_KEYS, LOG_KEYS, split_query
from starlette.testclient import TestClient
from test_server import MIXTURE, PROMPT


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The server of ``test_server`` with the flaky plugin registered as well."""
    mix = tmp_path_factory.mktemp("mix") / "mix.json"
    mix.write_text(json.dumps(MIXTURE))
    app = create_app(ServerConfig(workers=4, mixture=str(mix), episode_ttl_s=60,
                                  allow_domains=("flaky/*",)),
                     Registry(plugins=[flakyplug]))
    with TestClient(app) as c:
        yield c


def keyed(client: TestClient, path: str, body: dict[str, Any], key: str) -> Any:
    return client.post(path, json=body, headers={"Idempotency-Key": key})


def open_episode(client: TestClient, seed: int) -> str:
    task = registry().get("code/py-roman-v2").sample(1, seed=seed)[0]
    return str(client.post("/v1/episodes", json={"task": task.to_dict()}).json()["episode_id"])


def flaky_task() -> Any:
    return Registry(plugins=[flakyplug], autoload=False).get("flaky/ok-v1").task("train", 0, 0)


def rewards_of(client: TestClient, completions: list[str], task: Any = None) -> dict[str, Any]:
    task = task or flaky_task()
    body = {"query": [PROMPT + c for c in completions], "prompts": [PROMPT] * len(completions),
            "labels": [label_of(task)] * len(completions)}
    answer = client.post("/get_reward", json=body).json()
    assert list(answer["extra_logs"]) == list(LOG_KEYS)
    return answer


def test_a_lease_key_gives_every_request_the_same_task_and_is_never_used_up(
        client: TestClient) -> None:
    before = client.get("/health").json()["scheduler"]["open_leases"]
    got = [client.post("/v1/sample", json={"lease": "group-7f3a"}).json() for _ in range(12)]
    assert {g["tasks"][0]["id"] for g in got} == {got[0]["tasks"][0]["id"]}
    assert {g["lease"] for g in got} == {"group-7f3a"}
    assert got[0]["tasks"][0]["domain"] in MIXTURE["domains"]
    other = client.post("/v1/sample", json={"lease": "group-7f3b"}).json()
    assert other["lease"] == "group-7f3b"
    assert client.get("/health").json()["scheduler"]["open_leases"] == before + 2


def test_a_lease_key_that_is_not_a_short_string_is_refused(client: TestClient) -> None:
    for bad in ("", "x" * 201, 17, ["a"]):
        resp = client.post("/v1/sample", json={"lease": bad})
        assert resp.status_code == 400
        assert "expected 'lease' to be a string of 1-200 characters" in resp.json()["error"]


def test_a_retried_step_is_answered_once_even_after_the_episode_closed(
        client: TestClient) -> None:
    task = registry().get("code/py-roman-v2").sample(1, seed=3)[0]
    episode = open_episode(client, 3)
    path = f"/v1/episodes/{episode}/step"
    wrong = keyed(client, path, {"completion": "def nothing(): pass"}, "ep-1:step:0")
    again = keyed(client, path, {"completion": "def nothing(): pass"}, "ep-1:step:0")
    assert wrong.json() == again.json() and wrong.json()["done"] is False
    repaired = keyed(client, path, {"completion": task.gold}, "ep-1:step:1")
    assert repaired.json()["done"] is True
    assert repaired.json()["info"]["return"] == pytest.approx(0.8)  # one failed attempt, not two
    late = keyed(client, path, {"completion": task.gold}, "ep-1:step:1")
    assert late.status_code == 200 and late.json() == repaired.json()


def test_concurrent_double_submits_of_one_step_run_it_once(client: TestClient) -> None:
    episode = open_episode(client, 4)
    path = f"/v1/episodes/{episode}/step"
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: keyed(client, path, {"completion": "x = 1"},
                                                "ep-2:step:0").json(), range(8)))
    assert all(a == answers[0] for a in answers) and answers[0]["info"]["turn"] == 1
    nxt = keyed(client, path, {"completion": "x = 2"}, "ep-2:step:1").json()
    assert nxt["info"]["turn"] == 2  # the eight submits made one turn


def test_a_request_key_replayed_on_another_episode_is_refused_and_changes_nothing(
        client: TestClient) -> None:
    first, second = open_episode(client, 5), open_episode(client, 6)
    keyed(client, f"/v1/episodes/{first}/step", {"completion": "x = 1"}, "replayed-key")
    stolen = keyed(client, f"/v1/episodes/{second}/step", {"completion": "x = 1"}, "replayed-key")
    assert stolen.status_code == 409
    assert "was first sent with another method, path or body" in stolen.json()["error"]
    fresh = keyed(client, f"/v1/episodes/{second}/step", {"completion": "x"}, "own-key").json()
    assert fresh["info"]["turn"] == 1


def test_a_request_key_sent_again_with_another_body_is_refused(client: TestClient) -> None:
    episode = open_episode(client, 7)
    path = f"/v1/episodes/{episode}/step"
    assert keyed(client, path, {"completion": "a"}, "body-key").status_code == 200
    assert keyed(client, path, {"completion": "b"}, "body-key").status_code == 409


def test_a_malformed_request_key_is_a_400(client: TestClient) -> None:
    resp = keyed(client, "/v1/sample", {"lease": "g"}, "has spaces\tand tabs")
    assert resp.status_code == 400
    assert resp.json()["error"].startswith("expected the idempotency-key header to be 1-200")


def test_a_retried_group_report_is_counted_once(client: TestClient) -> None:
    before = client.get("/v1/scheduler/weights").json()["observed_groups"]
    report = {"domain": "math/arithmetic-l1-v2", "group_rewards": [[1.0, 0.0, 1.0]]}
    for _ in range(3):
        assert keyed(client, "/v1/scheduler/observe", report, "g-9:observe").status_code == 200
    assert client.get("/v1/scheduler/weights").json()["observed_groups"] == before + 1


def test_a_transient_infrastructure_failure_is_retried_before_the_server_answers(
        client: TestClient) -> None:
    answer = rewards_of(client, ["FLAKY:transient1:2 ok"])
    logs = answer["extra_logs"]
    assert answer["rewards"] == [1.0]
    assert (logs["retries"], logs["trainable"], logs["failure_none"]) == ([2.0], [1.0], [1.0])


@pytest.mark.parametrize(("completion", "failure"), [
    ("SANDBOX-DOWN ok", "sandbox"), ("JUDGE-DOWN ok", "judge"), ("CRASH ok", "verifier")])
def test_a_persistent_infrastructure_failure_gets_the_domain_minimum_and_its_class(
        client: TestClient, completion: str, failure: str) -> None:
    answer = rewards_of(client, [completion])
    logs = answer["extra_logs"]
    assert answer["rewards"] == [-1.0]  # the range minimum of flaky/ok-v1, not 0
    assert logs[f"failure_{failure}"] == [1.0] and logs["trainable"] == [0.0]
    assert logs["retries"] == [2.0] and logs["error"] == [1.0]


def test_every_sample_carries_exactly_one_failure_class_under_the_same_keys(
        client: TestClient) -> None:
    math_task = registry().get("math/arithmetic-l1-v2").sample(1)[0]
    body = {"query": [PROMPT + "ok", PROMPT + "no", PROMPT + "CRASH", "tant\nok",
                      PROMPT + math_task.gold, PROMPT + "x"],
            "prompts": [PROMPT] * 6,
            "labels": [label_of(flaky_task())] * 4 + [label_of(math_task), "{forged"]}
    logs = client.post("/get_reward", json=body).json()["extra_logs"]
    assert list(logs) == list(LOG_KEYS)
    classes = [next(k for k in FAILURE_KEYS if logs[k][i] == 1.0) for i in range(6)]
    assert classes == ["failure_none", "failure_answer", "failure_verifier", "failure_label",
                       "failure_none", "failure_label"]
    assert all(sum(logs[k][i] for k in FAILURE_KEYS) == 1.0 for i in range(6))
    assert logs["trainable"] == [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]


def test_verify_reports_the_failure_class_and_the_retries(client: TestClient) -> None:
    got = client.post("/v1/verify", json={"task": flaky_task().to_dict(),
                                          "completion": "SANDBOX-DOWN"}).json()
    assert (got["failure"], got["retries"], got["reward"]) == ("sandbox", 2, -1.0)


@pytest.mark.parametrize(("prompt", "query"), [
    ("Q: a , b !\nassistant\n", "Q: a, b!\nassistant\nok"),          # cleaned-up spaces
    ("<s>[INST] say ok [/INST]", "<s> [INST] say ok [/INST] ok"),     # a space after <s>
    ("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
     "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nok"),
])
def test_a_prompt_changed_only_in_whitespace_by_decoding_still_splits_the_query(
        prompt: str, query: str) -> None:
    assert split_query(query, prompt) is not None
    assert split_query(query, prompt).strip() == "ok"  # type: ignore[union-attr]


def test_a_truncated_or_altered_prompt_still_does_not_match() -> None:
    assert split_query("tant\nok", "assistant\n") is None
    assert split_query("Q: a, c!\nok", "Q: a , b !\n") is None


def test_a_decoded_prompt_with_cleaned_up_spaces_is_verified(client: TestClient) -> None:
    task = flaky_task()
    prompt = f"<|im_start|>user\n{task.prompt}<|im_end|>\n<|im_start|>assistant\n"
    cleaned = prompt.replace(" ,", ",").replace(" !", "!")
    body = {"query": [cleaned + "ok"], "prompts": [prompt], "labels": [label_of(task)]}
    answer = client.post("/get_reward", json=body).json()
    assert answer["rewards"] == [1.0] and answer["extra_logs"]["prompt_mismatch"] == [0.0]


def test_health_lists_what_the_server_speaks(client: TestClient) -> None:
    health = client.get("/health").json()
    assert {"idempotency-key", "lease-key", "failure-classes"} <= set(health["features"])
    assert health["scheduler"]["enabled"] is True
