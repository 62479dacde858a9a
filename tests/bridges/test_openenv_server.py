"""``rlhub serve --openenv``: rlhub domains for OpenEnv's own client, and what it refuses."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request

import pytest
from websockets.asyncio.client import connect

from rlhub.integrations.server.process import ServerProcess

ARITH = "math/arithmetic-l1-v2"


@pytest.fixture(scope="module")
def server():
    with ServerProcess(["--openenv", "--workers", "2"]) as proc:
        yield proc


def test_openenv_client_resets_and_steps_an_rlhub_domain(server, openenv_client):
    import rlhub

    gold = rlhub.registry().get(ARITH).task("train", 3, 5).gold
    reset = {"domain": ARITH, "split": "train", "seed": 3, "index": 5}
    first, state, scored, again = openenv_client(
        server.url, [["reset", reset], ["state"], ["step", {"message": gold}],
                     ["step", {"message": gold}]])
    assert first["done"] is False and first["reward"] is None
    assert first["observation"]["task_id"] == f"{ARITH}:train:3:5"
    assert first["observation"]["messages"][0]["role"] == "user"
    assert state["domain"] == ARITH and state["step_count"] == 0
    assert (scored["reward"], scored["done"]) == (1.0, True)
    assert scored["metadata"]["score"]["components"] == {"correct": 1.0, "format": 1.0}
    assert again == {"error": "RuntimeError: Server error: no episode: send a reset first "
                              "(code: EXECUTION_ERROR)"}


def test_a_multi_turn_domain_answers_each_step_and_rewards_sum_to_the_return(server,
                                                                             openenv_client):
    plan = [["reset", {"domain": "agentic/guess-number-v2", "seed": 1}]]
    plan += [["step", {"message": f"<guess>{g}</guess>"}] for g in (500, 250, 750)]
    results = openenv_client(server.url, plan)
    steps = results[1:]
    assert all(not r["done"] for r in steps[:-1])
    assert re.search(r"higher|lower", steps[0]["observation"]["messages"][0]["content"])
    assert [r["observation"]["turn"] for r in steps] == [1, 2, 3]
    assert sum(r["reward"] for r in steps) == pytest.approx(steps[-1]["metadata"]["return"])


def test_unknown_reset_arguments_and_bad_actions_are_refused_by_name(server, openenv_client):
    results = openenv_client(server.url, [
        ["reset", {"domain": ARITH, "sandbox": {"network": True}}],
        ["reset", {"domain": "math/nope-v1"}],
        ["reset", {"domain": ARITH}],
        ["step", {"message": 42}],
        ["step", {"message": "x", "limits": {"wall_s": 999}}]])
    assert results[0]["error"].startswith("RuntimeError: Server error: reset takes ['domain', "
                                          "'episode_id', 'index', 'seed', 'split']; found unknown "
                                          "['sandbox']")
    assert "unknown domain 'math/nope-v1'" in results[1]["error"]
    assert results[3]["error"].startswith("RuntimeError: Server error: expected the action "
                                          "{\"message\": \"<completion>\"}, found keys ['message']")
    assert "found keys ['limits', 'message']" in results[4]["error"]


def _episodes(server) -> int:
    with urllib.request.urlopen(server.url + "/health", timeout=10) as resp:
        return json.load(resp)["episodes"]


async def _raw_session(url: str, frames: list[str], then_drop: bool = False) -> list[dict]:
    replies = []
    async with connect(url.replace("http://", "ws://") + "/ws") as ws:
        for frame in frames:
            await ws.send(frame)
            replies.append(json.loads(await ws.recv()))
        if then_drop:
            return replies
    return replies


def test_malformed_frames_get_error_messages_and_the_session_survives(server):
    frames = ["{not json", "[1, 2]", json.dumps({"type": "fly"}),
              json.dumps({"type": "reset", "data": "x"}),
              json.dumps({"type": "reset", "data": {"domain": ARITH}})]
    replies = asyncio.run(_raw_session(server.url, frames))
    codes = [r["data"].get("code") for r in replies[:4]]
    assert codes == ["INVALID_JSON", "INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR"]
    assert replies[4]["type"] == "observation"


def test_a_disconnect_or_a_new_reset_drops_the_sessions_episode(server):
    before = _episodes(server)
    reset = json.dumps({"type": "reset", "data": {"domain": "agentic/guess-number-v2"}})
    asyncio.run(_raw_session(server.url, [reset, reset, reset], then_drop=True))
    assert _episodes(server) == before
