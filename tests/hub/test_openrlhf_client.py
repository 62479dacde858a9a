"""OpenRLHF 0.11.2's own single-turn executor and HTTP reward client against a real `rlhub serve`.

The executor, its aiohttp client and the experience conversion are OpenRLHF's code; the tokenizer
is rlhub's character-level tiny tokenizer (a real ``PreTrainedTokenizerFast`` with a chat
template); the engine is a scripted stand-in for vLLM, which cannot run on a CPU.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("openrlhf", reason="openrlhf is not installed (pip install --no-deps "
                    "openrlhf==0.11.2)")
pytest.importorskip("aiohttp", reason="aiohttp is not installed (pip install 'rlhub[serve]')")

from rlhub import registry
from rlhub.hub.export import as_messages, label_of
from rlhub.hub.server_process import ServerProcess
from rlhub.hub.server_protocol import LOG_KEYS

HARNESS = Path(__file__).with_name("test_openrlhf_harness.py")
DOMAINS = ("math/arithmetic-l1-v1", "code/py-roman-v2", "instruct/lowercase-v2",
           "structured/json-schema-l1-v2")


@dataclass
class SamplingParams:
    """The fields of vLLM's ``SamplingParams`` that OpenRLHF's executors read and write."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None
    min_tokens: int = 1
    skip_special_tokens: bool = False
    logprobs: int | None = None


class ScriptedEngine:
    """Answers each ``generate`` call with the next scripted completion, as vLLM would."""

    def __init__(self, tokenizer: Any, completions: list[str]):
        self.tokenizer = tokenizer
        self.completions = list(completions)
        self.calls: list[tuple[list[int], SamplingParams]] = []

    async def generate(self, prompt_token_ids: list[int], sampling_params: SamplingParams,
                       multi_modal_data: Any = None) -> Any:
        self.calls.append((list(prompt_token_ids), sampling_params))
        text = self.completions.pop(0)
        ids = self.tokenizer(text=text, add_special_tokens=False)["input_ids"]
        output = SimpleNamespace(token_ids=ids, text=text, finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from rlhub.policy.tiny import build_tokenizer

    return build_tokenizer()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    home = tmp_path_factory.mktemp("serve_home")
    with ServerProcess(["--workers", "4"], env={"RLHUB_HOME": str(home)}) as proc:
        yield proc


def chat(tokenizer: Any, task: Any) -> str:
    return tokenizer.apply_chat_template(as_messages(task.prompt), tokenize=False,
                                         add_generation_prompt=True)


def run_single(server: Any, tokenizer: Any, task: Any, completion: str,
               max_length: int = 8192, max_tokens: int | None = None) -> dict[str, Any]:
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    executor = SingleTurnAgentExecutor([server.url + "/get_reward"])
    engine = ScriptedEngine(tokenizer, [completion])
    params = SamplingParams(max_tokens=max_tokens)
    return asyncio.run(executor.execute(chat(tokenizer, task), label_of(task), params,
                                        max_length, tokenizer, engine))


def convert(outputs: list[dict[str, Any]], tmp_path: Path, max_len: int = 8192) -> dict[str, Any]:
    """OpenRLHF's experience conversion of ``outputs``, run in the stubbed child process."""
    import subprocess
    import sys

    payload = tmp_path / "outputs.json"
    payload.write_text(json.dumps({"outputs": outputs, "max_len": max_len}))
    done = subprocess.run([sys.executable, str(HARNESS), "experience", str(payload)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_single_turn_executor_scores_gold_at_max_and_wrong_at_min_in_every_domain(
        server: Any, tokenizer: Any, tmp_path: Path) -> None:
    outputs = []
    for domain_id in DOMAINS:
        task = registry().get(domain_id).sample(1, seed=3)[0]
        gold = run_single(server, tokenizer, task, task.gold + "<eos>")
        wrong = run_single(server, tokenizer, task, "I do not know.<eos>")
        assert gold["reward"] == [1.0], (domain_id, gold["extra_logs"])
        assert gold["scores"] == [1.0]
        assert wrong["reward"] == [0.0], domain_id
        for out in (gold, wrong):
            assert list(out["extra_logs"]) == list(LOG_KEYS)
            assert out["extra_logs"]["error"] == [0.0]
        assert gold["extra_logs"]["passed"] == [1.0] and wrong["extra_logs"]["passed"] == [0.0]
        outputs += [gold, wrong]
    converted = convert(outputs, tmp_path)
    assert converted["samples"] == 2 * len(DOMAINS)
    assert converted["rewards"] == [1.0, 0.0] * len(DOMAINS)
    assert set(LOG_KEYS) <= set(converted["info_keys"])


def test_a_left_truncated_prompt_is_flagged_and_not_verified(server: Any, tokenizer: Any) -> None:
    task = registry().get("math/arithmetic-l1-v1").sample(1)[0]
    prompt_len = len(tokenizer(text=chat(tokenizer, task), add_special_tokens=False)["input_ids"])
    out = run_single(server, tokenizer, task, task.gold + "<eos>",
                     max_length=prompt_len - 10 + 64, max_tokens=64)
    assert out["reward"] == [0.0]
    assert out["extra_logs"]["prompt_mismatch"] == [1.0]
    assert out["extra_logs"]["error"] == [1.0]


def test_a_malformed_label_gets_a_zero_reward_instead_of_a_lost_sample(
        server: Any, tokenizer: Any) -> None:
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    executor = SingleTurnAgentExecutor([server.url + "/get_reward"])
    engine = ScriptedEngine(tokenizer, ["42<eos>"])
    out = asyncio.run(executor.execute("user: hi\nassistant: ", "not json", SamplingParams(),
                                       256, tokenizer, engine))
    assert out["reward"] == [0.0]
    assert out["extra_logs"]["error"] == [1.0]


def test_the_http_client_gets_empty_lists_for_an_empty_shard(server: Any) -> None:
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    executor = SingleTurnAgentExecutor([server.url + "/get_reward", server.url + "/get_reward"])
    task = registry().get("math/arithmetic-l1-v1").sample(1)[0]
    got = asyncio.run(executor._fetch_rewards_via_http(["P" + task.gold], ["P"], [label_of(task)]))
    assert [g["rewards"] for g in got] == [[1.0]]
    body = asyncio.run(_post(server.url + "/get_reward", {"query": [], "prompts": [],
                                                          "labels": []}))
    assert body == {"rewards": [], "scores": [], "extra_logs": {k: [] for k in LOG_KEYS}}


async def _post(url: str, body: dict[str, Any]) -> Any:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.post(url, json=body) as resp:
        assert resp.headers["Content-Type"] == "application/json"
        return await resp.json()
