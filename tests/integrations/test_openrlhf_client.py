"""OpenRLHF 0.11.2's own single-turn executor and HTTP reward client against a real `rlhub serve`.

The executor, its aiohttp client and the experience conversion are OpenRLHF's code; the engine is
the vLLM-faithful fake of :mod:`openrlhf_fakes` (the stop token in the ids, not in the text), and
the tokenizers are rlhub's tiny one and offline builds of the Qwen2, Llama-3 and Mistral families
(:mod:`offline_tokenizers`), whose decoding does not give back the prompt string exactly.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import flakyplug
import pytest

pytest.importorskip("openrlhf", reason="openrlhf is not installed (pip install --no-deps "
                    "openrlhf==0.11.2)")
pytest.importorskip("aiohttp", reason="aiohttp is not installed (pip install 'rlhub[serve]')")

sys.path.insert(0, str(Path(__file__).parent))

import offline_tokenizers  # noqa: E402
from openrlhf_fakes import ActorView, FakeEngine, SamplingParams, ScriptedModel  # noqa: E402
from rlhub import Registry, registry  # noqa: E402
from rlhub.integrations.openrlhf.export import as_messages, label_of  # noqa: E402
from rlhub.integrations.server.process import ServerProcess  # noqa: E402
from rlhub.integrations.server.protocol import LOG_KEYS  # noqa: E402

HARNESS = Path(__file__).with_name("test_openrlhf_harness.py")
DOMAINS = ("math/arithmetic-l1-v2", "code/py-roman-v2", "instruct/lowercase-v3",
           "structured/json-schema-l1-v2")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    from rlhub.policy.tiny import build_tokenizer

    path = tmp_path_factory.mktemp("tiny")
    build_tokenizer().save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def tokenizer(tiny_dir: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_dir)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    home = tmp_path_factory.mktemp("serve_home")
    with ServerProcess(["--workers", "4"], env={"RLHUB_HOME": str(home),
                                                "RLHUB_PLUGINS": "flakyplug"}) as proc:
        yield proc


def chat(tokenizer: Any, task: Any) -> str:
    """The templated prompt, as OpenRLHF's ``PromptDataset`` builds it."""
    return tokenizer.apply_chat_template(as_messages(task.prompt), tokenize=False,
                                         add_generation_prompt=True)


def run_single(server: Any, model_dir: str, task: Any, completion: str,
               max_length: int = 8192, max_tokens: int | None = None, label: Any = None,
               tokenizer: Any = None) -> dict[str, Any]:
    """OpenRLHF's single-turn executor on one sample, the model answering ``completion``."""
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    executor = SingleTurnAgentExecutor([server.url + "/get_reward"])
    engine = ActorView(FakeEngine(model_dir, ScriptedModel("unused", default=[completion])))
    tokenizer = tokenizer or engine.engine.tokenizer
    params = SamplingParams(max_tokens=max_tokens, skip_special_tokens=False)
    return asyncio.run(executor.execute(chat(tokenizer, task), label_of(task) if label is None
                                        else label, params, max_length, tokenizer, engine))


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
        server: Any, tiny_dir: str, tmp_path: Path) -> None:
    outputs = []
    for domain_id in DOMAINS:
        task = registry().get(domain_id).sample(1, seed=3)[0]
        gold = run_single(server, tiny_dir, task, task.gold)
        wrong = run_single(server, tiny_dir, task, "I do not know.")
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


def test_a_left_truncated_prompt_is_flagged_and_not_verified(
        server: Any, tiny_dir: str, tokenizer: Any) -> None:
    task = registry().get("math/arithmetic-l1-v2").sample(1)[0]
    prompt_len = len(tokenizer(text=chat(tokenizer, task), add_special_tokens=False)["input_ids"])
    out = run_single(server, tiny_dir, task, task.gold,
                     max_length=prompt_len - 10 + 64, max_tokens=64)
    assert out["reward"] == [0.0]
    assert out["extra_logs"]["prompt_mismatch"] == [1.0]
    assert out["extra_logs"]["error"] == [1.0]


def test_a_malformed_label_gets_a_zero_reward_instead_of_a_lost_sample(
        server: Any, tiny_dir: str) -> None:
    task = registry().get("math/arithmetic-l1-v2").sample(1)[0]
    out = run_single(server, tiny_dir, task, "42", label="not json")
    assert out["reward"] == [0.0]
    assert out["extra_logs"]["error"] == [1.0] and out["extra_logs"]["failure_label"] == [1.0]


@pytest.mark.parametrize("family", ["qwen2", "llama3", "llama3-transformers4", "mistral"])
def test_a_prompt_that_decodes_differently_is_still_matched_and_verified(
        server: Any, family: str, tmp_path: Path) -> None:
    """Mistral decodes ``<s>[INST]`` as ``<s> [INST]``; Llama-3's config asks for the space
    clean-up that transformers 4 applied (`` ,`` -> ``,``), forced here as transformers 4 did."""
    from transformers import AutoTokenizer

    folder = offline_tokenizers.build(family.split("-")[0], tmp_path / family)
    tokenizer = AutoTokenizer.from_pretrained(
        folder, clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output=
        family.endswith("transformers4"))
    task = Registry(plugins=[flakyplug], autoload=False).get("flaky/ok-v1").task("train", 0, 3)
    assert " ," in task.prompt and " !" in task.prompt
    out = run_single(server, str(folder), task, "ok", tokenizer=tokenizer)
    assert out["reward"] == [1.0], out["extra_logs"]
    assert out["extra_logs"]["prompt_mismatch"] == [0.0]


def test_the_http_client_gets_empty_lists_for_an_empty_shard(server: Any) -> None:
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    executor = SingleTurnAgentExecutor([server.url + "/get_reward", server.url + "/get_reward"])
    task = registry().get("math/arithmetic-l1-v2").sample(1)[0]
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
