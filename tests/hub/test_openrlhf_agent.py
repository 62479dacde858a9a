"""The rlhub agent module inside OpenRLHF 0.11.2's own ``MultiTurnAgentExecutor``.

The module is loaded by file path exactly as OpenRLHF's ``_load_agent_executor`` does, against a
real ``rlhub serve`` child process; the engine replays scripted completions (first wrong, then
repaired), and the outputs go through OpenRLHF's experience conversion in a stubbed child process.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openrlhf", reason="openrlhf is not installed (pip install --no-deps "
                    "openrlhf==0.11.2)")
pytest.importorskip("aiohttp", reason="aiohttp is not installed (pip install 'rlhub[serve]')")

from rlhub import registry
from rlhub.hub.export import label_of
from rlhub.hub.server_process import ServerProcess
from rlhub.serving import refused_port
from rlhub.hub.server_protocol import LOG_KEYS

AGENT = Path(__file__).resolve().parents[2] / "hub" / "openrlhf_agent.py"
HARNESS = Path(__file__).with_name("test_openrlhf_harness.py")
WRONG = "def nothing():\n    return 0\n<eos>"

sys.path.insert(0, str(Path(__file__).parent))
from test_openrlhf_client import SamplingParams, ScriptedEngine, chat


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from rlhub.policy.tiny import build_tokenizer

    return build_tokenizer()


@pytest.fixture(scope="module")
def tokenizer_dir(tokenizer: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tokenizer saved like a model folder: what ``RLHUB_TOKENIZER`` names in production."""
    path = tmp_path_factory.mktemp("tokenizer")
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    home = tmp_path_factory.mktemp("serve_home")
    mixture = home / "mix.yaml"
    mixture.write_text("strategy: static\ndomains:\n  math/arithmetic-l1-v1: 1\n"
                       "  code/py-roman-v1: 1\n")
    with ServerProcess(["--workers", "4", "--mixture", str(mixture)],
                       env={"RLHUB_HOME": str(home)}) as proc:
        yield proc


def load_agent(monkeypatch: pytest.MonkeyPatch, url: str, tokenizer_dir: str, **env: str) -> Any:
    """Load the agent file as OpenRLHF's ``_load_agent_executor`` does; return the module."""
    from openrlhf.utils.agent import AgentExecutorBase

    monkeypatch.setenv("RLHUB_SERVER_URL", url)
    monkeypatch.setenv("RLHUB_TOKENIZER", tokenizer_dir)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    spec = importlib.util.spec_from_file_location("agent_module", str(AGENT))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    assert issubclass(module.AgentExecutor, AgentExecutorBase)
    return module


def execute(module: Any, tokenizer: Any, task: Any, completions: list[str],
            params: SamplingParams | None = None, label: Any = None) -> tuple[dict, ScriptedEngine]:
    engine = ScriptedEngine(tokenizer, completions)
    out = asyncio.run(module.AgentExecutor().execute(
        chat(tokenizer, task), label_of(task) if label is None else label,
        params or SamplingParams(), 8192, tokenizer, engine))
    return out, engine


def convert(outputs: list[dict[str, Any]], tmp_path: Path) -> dict[str, Any]:
    payload = tmp_path / "outputs.json"
    payload.write_text(json.dumps({"outputs": outputs, "max_len": 8192}))
    done = subprocess.run([sys.executable, str(HARNESS), "experience", str(payload)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_wrong_answer_gets_feedback_and_the_repair_earns_the_discounted_reward(
        server: Any, tokenizer: Any, tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    module = load_agent(monkeypatch, server.url, tokenizer_dir)
    task = registry().get("code/py-roman-v1").sample(1, seed=5)[0]
    repaired, engine = execute(module, tokenizer, task, [WRONG, task.gold + "<eos>"])
    assert repaired["reward"] == pytest.approx(0.8)  # repair_discount 0.8, one failed attempt
    assert repaired["scores"] == pytest.approx(0.8)
    assert len(repaired["action_ranges"]) == 2 and len(engine.calls) == 2
    (_, end1), (start2, _) = repaired["action_ranges"]
    feedback = tokenizer.decode(repaired["observation_tokens"][end1:start2])
    assert feedback.startswith("\nuser: Your answer did not pass.")
    assert feedback.endswith("\nassistant: ")
    assert engine.calls[1][0] == repaired["observation_tokens"][:start2]
    assert list(repaired["extra_logs"]) == list(LOG_KEYS)
    assert repaired["extra_logs"]["passed"] == 1.0
    assert repaired["extra_logs"]["repair_turns"] == 1.0
    wrong, _ = execute(module, tokenizer, task, [WRONG, WRONG])
    assert wrong["reward"] == 0.0 and len(wrong["action_ranges"]) == 2
    assert wrong["extra_logs"]["passed"] == 0.0
    first_try, _ = execute(module, tokenizer, task, [task.gold + "<eos>"])
    assert first_try["reward"] == 1.0 and len(first_try["action_ranges"]) == 1
    converted = convert([repaired, wrong, first_try], tmp_path)
    assert converted["rewards"] == pytest.approx([0.8, 0.0, 1.0])
    assert set(LOG_KEYS) <= set(converted["info_keys"])
    assert converted["action_tokens"][0] > converted["action_tokens"][2]


def test_a_single_turn_domain_ends_after_one_turn(server: Any, tokenizer: Any, tokenizer_dir: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_agent(monkeypatch, server.url, tokenizer_dir)
    task = registry().get("math/arithmetic-l1-v1").sample(1, seed=2)[0]
    out, engine = execute(module, tokenizer, task, ["The answer is \\boxed{-1}.<eos>", "unused"])
    assert out["reward"] == 0.0 and len(engine.calls) == 1
    assert out["extra_logs"]["error"] == 0.0


def test_repair_turns_sample_hotter_when_a_temperature_step_is_set(
        server: Any, tokenizer: Any, tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_agent(monkeypatch, server.url, tokenizer_dir, RLHUB_REPAIR_TEMPERATURE_STEP="0.25",
                        RLHUB_MAX_TEMPERATURE="0.9")
    task = registry().get("code/py-roman-v1").sample(1, seed=6)[0]
    _, engine = execute(module, tokenizer, task, [WRONG, WRONG],
                        params=SamplingParams(temperature=0.7))
    assert [round(p.temperature, 6) for _, p in engine.calls] == [0.7, 0.9]


def test_with_scheduling_a_prompt_group_shares_one_scheduler_task_and_reports_its_rewards(
        server: Any, tokenizer: Any, tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    module = load_agent(monkeypatch, server.url, tokenizer_dir, RLHUB_SCHEDULE="1",
                        RLHUB_GROUP_SIZE="2")
    before = _get(server.url + "/v1/scheduler/weights")["observed_groups"]
    row = registry().get("math/arithmetic-l1-v1").sample(1, seed=9)[0]
    executor = module.AgentExecutor()

    async def group() -> list[dict[str, Any]]:
        engines = [ScriptedEngine(tokenizer, ["no idea<eos>"] * 2) for _ in range(2)]
        return list(await asyncio.gather(*(
            executor.execute(chat(tokenizer, row), label_of(row), SamplingParams(), 8192,
                             tokenizer, e) for e in engines)))

    first, second = asyncio.run(group())
    start = first["action_ranges"][0][0]
    assert first["observation_tokens"][:start] == second["observation_tokens"][:start]
    prompt = tokenizer.decode(first["observation_tokens"][:start])
    assert prompt != chat(tokenizer, row)  # the scheduler's task, not the dataset row
    assert prompt.startswith("<bos>user: ") and prompt.endswith("assistant: ")
    after = _get(server.url + "/v1/scheduler/weights")["observed_groups"]
    assert after == before + 1


def test_an_unreachable_hub_gives_an_error_flag_instead_of_a_crash(
        tokenizer: Any, tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_agent(monkeypatch, f"http://127.0.0.1:{refused_port()}", tokenizer_dir, RLHUB_HTTP_RETRIES="1")
    task = registry().get("math/arithmetic-l1-v1").sample(1)[0]
    out, _ = execute(module, tokenizer, task, [task.gold + "<eos>"])
    assert out["reward"] == 0.0
    assert out["extra_logs"]["error"] == 1.0 and list(out["extra_logs"]) == list(LOG_KEYS)


def test_the_chat_format_comes_from_the_tokenizer_template(tokenizer: Any) -> None:
    from rlhub.hub.openrlhf_agent import ChatFormat

    fmt = ChatFormat.from_tokenizer(tokenizer)
    assert fmt.prompt("hi") == "<bos>user: hi\nassistant: "
    assert fmt.reply("x = 1", "try again") == "\nuser: try again\nassistant: "
    assert fmt.reply("x = 1\n", "again") == "\nuser: again\nassistant: "[1:]
    assert fmt.eos == ("<eos>",)


def test_the_chatml_fallback_closes_the_turn_only_when_the_model_did_not() -> None:
    from rlhub.hub.openrlhf_agent import ChatFormat

    class NoTemplate:
        def apply_chat_template(self, *args: Any, **kwargs: Any) -> str:
            raise ValueError("this tokenizer has no chat template")

    fmt = ChatFormat.from_tokenizer(NoTemplate())
    expected = "<|im_start|>user\nfix it<|im_end|>\n<|im_start|>assistant\n"
    assert fmt.reply("answer<|im_end|>", "fix it") == "\n" + expected
    assert fmt.reply("answer", "fix it") == "<|im_end|>\n" + expected
    assert fmt.prompt([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]) \
        == "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n"


def test_the_agent_refuses_to_start_without_a_server_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlhub.hub.openrlhf_agent import AgentSettings

    with pytest.raises(RuntimeError, match="expected RLHUB_SERVER_URL"):
        AgentSettings.from_env({})


def _get(url: str) -> Any:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())
