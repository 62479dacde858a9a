"""`rlhub serve`'s bodies (integrations/server/bodies.py): a body that does not fit its route's model is
answered with what was expected and what was found, word for word as before the models."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")

from rlhub import registry
from rlhub.integrations.openrlhf.export import label_of
from rlhub.integrations.server.app import ServerConfig, create_app
from rlhub.integrations.server.connections import OPEN_FILES
from starlette.testclient import TestClient

MIXTURE = {"strategy": "static", "domains": {"math/arithmetic-l1-v2": 1.0}}
ARITHMETIC = "math/arithmetic-l1-v2"
ITEMS_413 = "expected at most 4 items per request, found 5; split the batch (or raise --max-items)"
COMPLETION = ("expected 'completion' to be a string (or 'message' an OpenAI assistant message), "
              "found {}")
LABEL_OR_TASK = "expected 'label' or 'task' (an object, Task.to_dict()), found {}"
GROUPS = "expected 'group_rewards' as a list of lists of numbers (one per prompt group), found {}"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    mix = tmp_path_factory.mktemp("mix") / "mix.json"
    mix.write_text(json.dumps(MIXTURE))
    app = create_app(ServerConfig(workers=2, mixture=str(mix), max_items=4), registry())
    with TestClient(app) as c:
        yield c


REFUSED = [
    ("/get_reward", {"query": "x"}, 400, "body: expected 'query' to be a list, found str"),
    ("/get_reward", {"query": ["x"], "labels": "y"}, 400,
     "body: expected 'prompts' and 'labels' to be lists"),
    ("/get_reward", {"query": ["x"] * 5}, 413, ITEMS_413),
    ("/v1/sample", {"n": True}, 400, "expected 'n' to be an integer in [1, 4], found True"),
    ("/v1/sample", {"n": 5}, 400, "expected 'n' to be an integer in [1, 4], found 5"),
    ("/v1/sample", {"domain": ARITHMETIC, "seed": "7"}, 400,
     "expected 'seed' to be an integer, found '7'"),
    ("/v1/sample", {"domain": ARITHMETIC, "start": -1}, 400,
     "expected 'start' to be an integer >= 0, found -1"),
    ("/v1/sample", {"lease": ""}, 400,
     "expected 'lease' to be a string of 1-200 characters, found \"\""),
    ("/v1/verify", {"label": "x"}, 400, COMPLETION.format("NoneType")),
    ("/v1/verify", {"completion": 4, "label": "x"}, 400, COMPLETION.format("int")),
    ("/v1/verify", {"message": {"content": 4}, "label": "x"}, 400,
     "expected 'message' as an OpenAI assistant message (content a string or null, tool_calls "
     "a list)"),
    ("/v1/verify", {"completion": "x"}, 400, LABEL_OR_TASK.format("NoneType")),
    ("/v1/verify", {"completion": "x", "task": "t"}, 400, LABEL_OR_TASK.format("str")),
    ("/v1/verify", {"items": [{"completion": "x", "label": "y"}, 3]}, 400,
     "expected each item as an object, found int"),
    ("/v1/verify", {"items": [{}] * 5}, 413, ITEMS_413),
    ("/v1/episodes", {"domain": ARITHMETIC, "index": -1}, 400,
     "expected 'index' to be an integer >= 0, found -1"),
    ("/v1/episodes", {"label": None}, 400, LABEL_OR_TASK.format("NoneType")),
    ("/v1/scheduler/observe", {"domain": ARITHMETIC}, 400, GROUPS.format("null")),
    ("/v1/scheduler/observe", {"domain": ARITHMETIC, "group_rewards": [[1, True]]}, 400,
     GROUPS.format("[[1, true]]")),
    ("/v1/scheduler/observe", {"domain": 5, "group_rewards": [[1]]}, 400,
     "expected a domain of the server's mixture, found 5; GET /v1/scheduler/weights lists them"),
]


@pytest.mark.parametrize(("path", "body", "status", "message"), REFUSED,
                         ids=[f"{p} {json.dumps(b)[:40]}" for p, b, _, _ in REFUSED])
def test_a_body_that_does_not_fit_its_model_is_refused_naming_what_was_expected_and_found(
        client: TestClient, path: str, body: dict[str, Any], status: int, message: str) -> None:
    resp = client.post(path, json=body)
    assert (resp.status_code, resp.json()) == (status, {"error": message})


def test_verify_takes_an_openai_message_and_answers_each_item_with_its_score(
        client: TestClient) -> None:
    task = registry().get(ARITHMETIC).sample(1, seed=4)[0]
    message = {"role": "assistant", "content": task.gold, "tool_calls": []}
    resp = client.post("/v1/verify", json={"items": [
        {"message": message, "label": label_of(task)},
        {"completion": "no idea", "task": task.to_dict()}]})
    results = resp.json()["results"]
    assert [(r["reward"], r["passed"], r["failure"]) for r in results] == \
        [(1.0, True, "none"), (0.0, False, "answer")]
    assert set(results[0]) == {"domain", "task_id", "reward", "score", "passed", "error",
                               "failure", "retries", "verify_ms"}


def test_a_lease_answer_names_its_key_and_a_sample_answer_has_none(client: TestClient) -> None:
    leased = client.post("/v1/sample", json={"lease": "k1"}).json()
    sampled = client.post("/v1/sample", json={"n": 2}).json()
    assert leased["lease"] == "k1" and len(leased["tasks"]) == len(leased["labels"]) == 1
    assert set(sampled) == {"source", "tasks", "labels"} and len(sampled["tasks"]) == 2


def test_the_server_raises_its_open_files_limit_toward_the_hard_limit() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip(f"the hard limit on open files is {hard}; nothing to raise")
    code = ("import resource\n"
            "from rlhub.integrations.server.connections import raise_open_files\n"
            "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
            "print(raise_open_files(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    wanted = OPEN_FILES if hard == resource.RLIM_INFINITY else min(OPEN_FILES, hard)
    assert out == [str(wanted)] * 2
