"""``rlhub eval`` plays a swe agent domain against ``rlhub policy serve``: the server turns the
calls a text policy writes into OpenAI ``tool_calls`` the ``openai`` client's types read, and the
eval's OpenAI policy sends the domain's tools and plays the calls back into the episode."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import RLHUB, cli_env

import subprocess

import rlhub

AGENT = "swe/syn-fix-test-s-agent-v1"
PLUGINS = "loopplugin,swe"


def test_policy_serve_answers_with_tool_calls_the_openai_client_reads(serve) -> None:
    import openai
    from openai.types.chat import ChatCompletionMessageToolCall

    base = serve("swe-agent:", plugins=PLUGINS)
    domain = rlhub.registry().get(AGENT)
    task = domain.task("train", 0, 0)
    client = openai.OpenAI(base_url=base, api_key="none")
    messages = [{"role": "user", "content": task.prompt_text()}]
    first = client.chat.completions.create(model="swe", messages=messages,
                                           tools=domain.tool_specs())
    call = first.choices[0].message.tool_calls[0]
    assert first.choices[0].finish_reason == "tool_calls"
    assert isinstance(call, ChatCompletionMessageToolCall) and call.function.name == "run_tests"
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "1 failed"}]
    second = client.chat.completions.create(model="swe", messages=messages,
                                            tools=domain.tool_specs())
    submit = second.choices[0].message.tool_calls[0]
    assert submit.function.name == "submit"
    assert "diff --git" in json.loads(submit.function.arguments)["patch"]


def test_eval_drives_agent_episodes_through_an_openai_compatible_policy(serve, rlhub_home,
                                                                       tmp_path: Path) -> None:
    base = serve("swe-agent:", plugins=PLUGINS)
    mixture = tmp_path / "mix.json"
    mixture.write_text(json.dumps({"strategy": "uniform", "domains": {AGENT: {}}}))
    run = tmp_path / "run"
    done = subprocess.run([RLHUB, "eval", "--mixture", str(mixture), "--policy",
                           f"openai:{base}#swe", "-n", "2", "--out", str(run), "--json"],
                          env=cli_env(rlhub_home, RLHUB_PLUGINS=PLUGINS), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    metrics = json.loads(done.stdout)["domains"][AGENT]
    assert metrics["reward_mean"] == 1.0 and metrics["turns_mean"] == 2.0
