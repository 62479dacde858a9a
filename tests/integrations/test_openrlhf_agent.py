"""The rlhub agent module inside OpenRLHF 0.11.2's rollout, against a real ``rlhub serve``.

The rollout tests run OpenRLHF's own trainer-side code in a child process
(``test_openrlhf_harness.py rollout``): ``create_vllm_engines`` builds the ``RolloutRayActor``,
which loads this agent with ``_load_agent_executor``; ``SamplesGenerator`` plays the prompt and
eval datasets (dynamic filtering included); ``RemoteExperienceMaker`` computes the advantages and
``compute_eval_metrics`` the eval metrics. Only the vLLM engine (faithful to vLLM's stop-token
behaviour) and Ray are faked. The failure tests run OpenRLHF's ``MultiTurnAgentExecutor`` in this
process, the ``n`` executions of a rollout call gathered as ``generate_responses`` does, behind a
loopback proxy that drops, fails or loses the server's answers on command.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import flakyplug
import pytest

pytest.importorskip("openrlhf", reason="openrlhf is not installed (pip install --no-deps "
                    "openrlhf==0.11.2)")
pytest.importorskip("aiohttp", reason="aiohttp is not installed (pip install 'rlhub[serve]')")

sys.path.insert(0, str(Path(__file__).parent))

import offline_tokenizers  # noqa: E402
import test_openrlhf_harness as harness  # noqa: E402
from openrlhf_fakes import ActorView, FakeEngine, SamplingParams, ScriptedModel  # noqa: E402
from rlhub import Registry, registry  # noqa: E402
from rlhub.integrations.openrlhf.export import as_messages, label_of, write_jsonl  # noqa: E402
from rlhub.integrations.server.process import ServerProcess  # noqa: E402
from rlhub.serving import bind, refused_port  # noqa: E402
from rlhub.integrations.server.protocol import LOG_KEYS  # noqa: E402

AGENT = Path(__file__).resolve().parents[2] / "integrations" / "openrlhf" / "agent.py"
MIXTURE = "strategy: static\ndomains:\n  flaky/ok-v1: 1\n  math/arithmetic-l1-v2: 1\n"
MARKERS = {"qwen2": "<|im_start|>assistant", "llama3": "<|start_header_id|>assistant"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """``rlhub serve`` with the flaky plugin and a mixture, repeating nothing by itself."""
    home = tmp_path_factory.mktemp("serve_home")
    (home / "mix.yaml").write_text(MIXTURE)
    with ServerProcess(["--workers", "2", "--infra-retries", "0", "--mixture",
                        str(home / "mix.yaml")],
                       env={"RLHUB_HOME": str(home), "RLHUB_PLUGINS": "flakyplug"}) as proc:
        yield proc


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("models")
    return {f: str(offline_tokenizers.build(f, root / f)) for f in ("qwen2", "llama3")}


def flaky(index: int) -> Any:
    return Registry(plugins=[flakyplug], autoload=False).get("flaky/ok-v1").task("train", 0, index)


def health(server: ServerProcess) -> dict[str, Any]:
    import urllib.request

    with urllib.request.urlopen(server.url + "/health", timeout=10) as resp:
        return dict(json.loads(resp.read()))


# -- OpenRLHF's rollout, in a child process --------------------------------------------------------


def rollout(tmp_path: Path, model_dir: str, script: dict[str, Any], env: dict[str, str],
            train: list[Any] = (), held: list[Any] = (), **spec: Any) -> dict[str, Any]:
    """OpenRLHF's rollout of ``train`` (one batch) and ``held`` (its eval) with this agent."""
    (tmp_path / "model.json").write_text(json.dumps(script))
    files = {}
    for name, tasks, role in (("train", train, "train"), ("eval", held, "eval")):
        if tasks:
            files[name] = str(tmp_path / f"{name}.jsonl")
            write_jsonl(files[name], list(tasks), role)
    full = {"agent": str(AGENT), "model_dir": model_dir, **files,
            "env": {"RLHUB_FAKE_MODEL": str(tmp_path / "model.json"), **env}, **spec}
    (tmp_path / "spec.json").write_text(json.dumps(full))
    return dict(harness.run_json("rollout", str(tmp_path / "spec.json")))


def conversation(model_dir: str, prompt: str, turns: list[str]) -> str:
    """The chat template's rendering of the prompt and alternating answers and repair requests."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    messages = [{"role": "user", "content": prompt}]
    for i, turn in enumerate(turns):
        role = "assistant" if i % 2 == 0 else "user"
        messages.append({"role": role, "content": turn})
    return str(tok.apply_chat_template(messages, tokenize=False))


REPAIR = "Your answer did not pass.\nsay ok\nPlease fix it and answer again."
SCRIPT_ROWS = [["Task 0:", ["x <", "ok"]],              # repaired by both members: 0.0 each
               ["Task 1:", [["ok", "nope"], "nope"]],   # one passes, one fails twice
               ["Task 2:", ["FLAKY:void2:1 ok"]]]       # the first check's sandbox fails


def by_task(samples: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    rows: dict[int, list[dict[str, Any]]] = {}
    for s in samples:
        rows.setdefault(int(json.loads(s["label"])["task"]["id"].rsplit(":", 1)[1]), []).append(s)
    return rows


def test_repairs_are_on_template_and_an_infra_failure_voids_its_group_chatml(
        server: ServerProcess, models: dict[str, str], tmp_path: Path) -> None:
    out = rollout(tmp_path, models["qwen2"], {"turn_marker": MARKERS["qwen2"],
                                              "rules": SCRIPT_ROWS},
                  {"RLHUB_SERVER_URL": server.url, "RLHUB_INFRA_RETRIES": "0"},
                  train=[flaky(0), flaky(1), flaky(2)], n=2, batch=3)
    assert "error" not in out, out
    rows = by_task(out["train"]["samples"])
    repaired = rows[0][0]
    rendered = conversation(models["qwen2"], flaky(0).prompt, ["x <", REPAIR, "ok"])
    assert repaired["text"] == rendered.removesuffix("\n")  # no <|im_end|><|im_end|>, no "|im_end|>"
    assert [s["reward"] for s in rows[0]] == [0.0, 0.0]    # -1 + (1 - -1) * 0.5**1
    assert [s["score"] for s in rows[0]] == [0.0, 0.0]     # equal mid-range returns: no signal
    assert sorted(s["reward"] for s in rows[1]) == [-1.0, 1.0]
    assert max(s["max_abs_advantage"] for s in rows[1]) > 0.5
    voided = rows[2]
    assert [s["reward"] for s in voided] == [-1.0, -1.0]   # the domain minimum, for the group
    assert [s["max_abs_advantage"] for s in voided] == [0.0, 0.0]  # nothing reaches the loss
    assert [s["info"]["trainable"] for s in voided] == [0.0, 0.0]
    assert sorted(s["info"]["failure_sandbox"] for s in voided) == [0.0, 1.0]
    assert all(set(LOG_KEYS) <= set(s["info"]) for s in out["train"]["samples"])


def test_repairs_are_on_template_and_dynamic_filtering_drops_groups_without_signal_llama3(
        server: ServerProcess, models: dict[str, str], tmp_path: Path) -> None:
    out = rollout(tmp_path, models["llama3"], {"turn_marker": MARKERS["llama3"],
                                               "rules": [[t, a] for t, a in SCRIPT_ROWS[:2]] +
                                               [["Task 2:", ["FLAKY:void3:1 ok"]]]},
                  {"RLHUB_SERVER_URL": server.url, "RLHUB_INFRA_RETRIES": "0"},
                  train=[flaky(0), flaky(1), flaky(2)], n=2, batch=3, filter=[0.0, 1.0])
    assert "error" not in out, out
    kept = out["train"]["samples"]
    assert set(by_task(kept)) == {1}  # the mid-range tie and the voided group are filtered out
    assert out["train"]["prompts_consumed"] == 3
    failed = next(s for s in kept if s["reward"] == -1.0)
    rendered = conversation(models["llama3"], flaky(1).prompt, ["nope", REPAIR, "nope"])
    assert failed["text"] == rendered  # <|eot_id|> once per turn


def test_eval_rows_are_played_as_written_and_never_reach_the_scheduler(
        server: ServerProcess, models: dict[str, str], tmp_path: Path) -> None:
    math = registry().get("math/arithmetic-l1-v2").sample(2, split="test", seed=4)
    row = flaky(5)
    script = {"turn_marker": MARKERS["qwen2"],
              "rules": [[t.prompt, [t.gold]] for t in math], "default": ["I do not know."]}
    before = health(server)["scheduler"]
    out = rollout(tmp_path, models["qwen2"], script,
                  {"RLHUB_SERVER_URL": server.url, "RLHUB_SCHEDULE": "1"},
                  train=[row, row], held=math, n=2, batch=2, eval_n=3)
    assert "error" not in out, out
    after = health(server)["scheduler"]
    assert out["eval"]["logs"]["eval_math/arithmetic-l1-v2_pass1"] == 1.0
    assert [k for k in out["eval"]["logs"] if k.endswith("_pass1")] == \
        ["eval_math/arithmetic-l1-v2_pass1"]
    assert after["open_leases"] == before["open_leases"] + 2  # two rows, one label: two leases
    assert after["observed_groups"] == before["observed_groups"] + 2  # training groups only
    played = [s["text"][:s["text"].index(MARKERS["qwen2"])] for s in out["train"]["samples"]]
    assert len(played) == 4 and all(row.prompt not in text for text in played)
    assert played[0] == played[1] and played[2] == played[3]  # one task per group


def test_an_agent_that_must_schedule_on_a_server_without_a_scheduler_stops_the_job_at_start(
        models: dict[str, str], tmp_path: Path) -> None:
    with ServerProcess(["--workers", "1"], env={"RLHUB_HOME": str(tmp_path)}) as plain:
        out = rollout(tmp_path, models["qwen2"], {"turn_marker": "x", "rules": []},
                      {"RLHUB_SERVER_URL": plain.url, "RLHUB_SCHEDULE": "1"},
                      train=[flaky(0)], n=2, batch=1)
    assert out["error"].startswith("ServerMisconfigured: rlhub agent: RLHUB_SCHEDULE=1 but the "
                                   f"server at {plain.url} runs without --mixture")


# -- failures, in this process ----------------------------------------------------------------


class Proxy:
    """A loopback proxy to the server whose ``rule(method, path, nth)`` may answer instead:
    ``"fail"`` (503), ``"gone"`` (404, as a restarted server does for an episode), ``"lose"``
    (forward, then answer 502: the server did the work, the client never heard)."""

    def __init__(self, target: str, rule: Callable[[str, str, int], str]):
        self.target, self.rule = target, rule
        self.seen: Counter[tuple[str, str]] = Counter()
        self.loop = asyncio.new_event_loop()
        self.sock = bind("127.0.0.1", 0)  # bound here, so no other process can take the port
        self.port = int(self.sock.getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Proxy:
        from aiohttp import web

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app)
        self.loop.run_until_complete(runner.setup())
        self.loop.run_until_complete(web.SockSite(runner, self.sock).start())
        self.runner = runner
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)

    async def handle(self, request: Any) -> Any:
        import aiohttp
        from aiohttp import web

        kind = "step" if request.path.endswith("/step") else request.path
        self.seen[request.method, kind] += 1
        action = self.rule(request.method, kind, self.seen[request.method, kind])
        if action in ("fail", "gone"):
            return web.json_response({"error": f"proxy: {action}"},
                                     status=503 if action == "fail" else 404)
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() in ("content-type", "idempotency-key")}
        async with aiohttp.ClientSession() as session, session.request(
                request.method, self.target + request.path_qs, data=await request.read(),
                headers=headers) as resp:
            body, status = await resp.read(), resp.status
        if action == "lose":
            return web.json_response({"error": "proxy: answer lost"}, status=502)
        return web.Response(body=body, status=status, content_type="application/json")


def load_agent(monkeypatch: pytest.MonkeyPatch, url: str, **env: str) -> Any:
    """The agent file, loaded as OpenRLHF's ``_load_agent_executor`` loads it."""
    from openrlhf.utils.agent import AgentExecutorBase

    monkeypatch.setenv("RLHUB_SERVER_URL", url)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    spec = importlib.util.spec_from_file_location("agent_module", str(AGENT))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    assert issubclass(module.AgentExecutor, AgentExecutorBase)
    return module


def play_group(executor: Any, model_dir: str, task: Any, answers: list[Any], n: int = 2,
               max_length: int = 4096, label: Any = None,
               params: SamplingParams | None = None) -> tuple[list[dict[str, Any]], ActorView]:
    """``n`` executions of one rollout call, gathered as ``generate_responses`` gathers them."""
    engine = ActorView(FakeEngine(model_dir, ScriptedModel(MARKERS["qwen2"], default=answers)))
    tok = engine.engine.tokenizer
    prompt = tok.apply_chat_template(as_messages(task.prompt), tokenize=False,
                                     add_generation_prompt=True)
    params = params or SamplingParams(max_tokens=None, skip_special_tokens=False)

    async def call() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(
            executor.execute(prompt, label_of(task) if label is None else label, params,
                             max_length, tok, engine) for _ in range(n))))

    return asyncio.run(call()), engine


def test_a_lost_answer_is_retried_under_its_request_key_and_the_step_runs_once(
        server: ServerProcess, models: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    rule = lambda method, kind, nth: "lose" if kind == "step" and nth == 1 else "pass"  # noqa: E731
    with Proxy(server.url, rule) as proxy:
        module = load_agent(monkeypatch, proxy.url)
        outs, _ = play_group(module.AgentExecutor(), models["qwen2"], flaky(6), ["x", "ok"])
    assert sorted(o["reward"] for o in outs) == [0.0, 0.0]  # repaired once each, not twice wrong
    assert sorted(o["extra_logs"]["retries"] for o in outs) == [0.0, 1.0]
    assert all(o["extra_logs"]["trainable"] == 1.0 for o in outs)


def test_an_episode_lost_by_the_server_is_replayed_on_a_new_one(
        server: ServerProcess, models: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    rule = lambda method, kind, nth: "gone" if kind == "step" and nth == 3 else "pass"  # noqa: E731
    with Proxy(server.url, rule) as proxy:
        module = load_agent(monkeypatch, proxy.url, RLHUB_INFRA_RETRIES="1")
        outs, _ = play_group(module.AgentExecutor(), models["qwen2"], flaky(7), ["x", "ok"])
        opened = proxy.seen["POST", "/v1/episodes"]
    assert [o["reward"] for o in outs] == [0.0, 0.0]
    assert opened == 3  # two episodes, and one more for the replay
    assert sorted(o["extra_logs"]["retries"] for o in outs) == [0.0, 1.0]


def test_a_sandbox_failure_is_retried_by_replay_and_then_trains(
        server: ServerProcess, models: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_agent(monkeypatch, server.url, RLHUB_INFRA_RETRIES="1")
    outs, _ = play_group(module.AgentExecutor(), models["qwen2"], flaky(8),
                         ["FLAKY:replayed8:1 ok"])
    assert [o["reward"] for o in outs] == [1.0, 1.0]
    assert [o["extra_logs"]["trainable"] for o in outs] == [1.0, 1.0]


def test_an_outage_past_the_deadline_voids_the_group_at_the_domain_minimum(
        server: ServerProcess, models: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    rule = lambda method, kind, nth: "fail" if kind == "step" else "pass"  # noqa: E731
    with Proxy(server.url, rule) as proxy:
        module = load_agent(monkeypatch, proxy.url, RLHUB_HTTP_DEADLINE_S="1.5",
                            RLHUB_INFRA_RETRIES="0")
        outs, _ = play_group(module.AgentExecutor(), models["qwen2"], flaky(9), ["ok"])
    assert [o["reward"] for o in outs] == [-1.0, -1.0] and [o["scores"] for o in outs] == [0, 0]
    for o in outs:
        assert list(o["extra_logs"]) == list(LOG_KEYS)
        assert (o["extra_logs"]["trainable"], o["extra_logs"]["failure_verifier"]) == (0.0, 1.0)
        assert o["extra_logs"]["retries"] >= 1.0


def test_the_job_stops_when_no_group_settles_within_the_outage_budget(
        server: ServerProcess, models: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_agent(monkeypatch, server.url, RLHUB_OUTAGE_BUDGET_S="0",
                        RLHUB_INFRA_RETRIES="0")
    from rlhub.integrations.openrlhf.group import ServerOutage

    with pytest.raises(ServerOutage, match=r"voided by failures that are not the model's "
                                        r"\(\{'sandbox': 1\}\)"):
        play_group(module.AgentExecutor(), models["qwen2"], flaky(10), ["SANDBOX-DOWN ok"])


def test_an_unreachable_hub_stops_the_job_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlhub.integrations.openrlhf.client import ServerMisconfigured

    url = f"http://127.0.0.1:{refused_port()}"
    module = load_agent(monkeypatch, url, RLHUB_STARTUP_TIMEOUT_S="1")
    with pytest.raises(ServerMisconfigured, match=f"expected `rlhub serve` at {url}"):
        module.AgentExecutor()


def test_a_malformed_label_voids_its_group_as_a_label_failure(
        server: ServerProcess, models: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_agent(monkeypatch, server.url)
    outs, _ = play_group(module.AgentExecutor(), models["qwen2"], flaky(11), ["ok"],
                         label="{forged")
    assert [o["extra_logs"]["failure_label"] for o in outs] == [1.0, 1.0]
    assert [o["extra_logs"]["trainable"] for o in outs] == [0.0, 0.0]


def test_an_episode_cut_at_the_length_limit_is_closed_and_its_group_reported(
        server: ServerProcess, models: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_agent(monkeypatch, server.url)
    before = health(server)
    task = flaky(12)
    outs, engine = play_group(module.AgentExecutor(), models["qwen2"], task, ["x"],
                              max_length=_prompt_len(models["qwen2"], task) + 4)
    after = health(server)
    assert [len(o["action_ranges"]) for o in outs] == [1, 1]  # no room for the repair turn
    assert after["episodes"] == before["episodes"]  # both closed, not left to the TTL
    assert after["scheduler"]["observed_groups"] == before["scheduler"]["observed_groups"] + 1
    assert [o["extra_logs"]["trainable"] for o in outs] == [1.0, 1.0]


def _prompt_len(model_dir: str, task: Any) -> int:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    text = tok.apply_chat_template(as_messages(task.prompt), tokenize=False,
                                   add_generation_prompt=True)
    return len(tok(text=text, add_special_tokens=False)["input_ids"])


def test_repair_turns_sample_hotter_when_a_temperature_step_is_set(
        server: ServerProcess, models: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_agent(monkeypatch, server.url, RLHUB_REPAIR_TEMPERATURE_STEP="0.25",
                        RLHUB_MAX_TEMPERATURE="0.9")
    _, engine = play_group(module.AgentExecutor(), models["qwen2"], flaky(13), ["x", "y"], n=1,
                           params=SamplingParams(temperature=0.7, max_tokens=None,
                                                 skip_special_tokens=False))
    assert [round(p.temperature, 6) for _, p in engine.calls] == [0.7, 0.9]


def test_the_agent_refuses_to_start_without_a_server_url() -> None:
    from rlhub.integrations.openrlhf.agent import AgentSettings

    with pytest.raises(RuntimeError, match="expected RLHUB_SERVER_URL"):
        AgentSettings.from_env({})


# -- the chat format, by token ids -------------------------------------------------------------


@pytest.mark.parametrize("family", ["qwen2", "llama3"])
def test_the_reply_closes_the_turn_only_where_the_action_ids_do_not(
        models: dict[str, str], family: str) -> None:
    from rlhub.integrations.openrlhf.chat import ChatFormat
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(models[family])
    fmt = ChatFormat.from_tokenizer(tok)
    ids = tok(text="x <", add_special_tokens=False)["input_ids"]
    stopped = ids + [tok.eos_token_id]  # as vLLM gives a stopped action: the stop token in its ids
    whole = tok.apply_chat_template([{"role": "user", "content": "q"},
                                     {"role": "assistant", "content": "x <"},
                                     {"role": "user", "content": "fix"}],
                                    tokenize=False, add_generation_prompt=True)
    assert whole.endswith(tok.decode(stopped, skip_special_tokens=False)
                          + fmt.reply(stopped, "fix"))
    assert whole.endswith("x <" + fmt.reply(ids, "fix"))  # a cut action: "<" is not half a token


def test_a_swe_agent_episode_plays_token_in_token_out_with_its_tool_results_as_turns(
        models: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A repository task (workspace, tools, hidden tests) through the same agent: the tool call
    is run on the server, its result comes back as the next turn, the submission is graded."""
    task = registry().get("swe/syn-fix-test-s-agent-v1").task("train", 0, 0)
    answers = ['<tool_call>{"name": "run_tests", "arguments": {}}</tool_call>', task.gold]
    with ServerProcess(["--workers", "2", "--allow-domain", "swe/*"],
                       env={"RLHUB_HOME": str(tmp_path)}) as swe_server:
        module = load_agent(monkeypatch, swe_server.url)
        outs, engine = play_group(module.AgentExecutor(), models["qwen2"], task, answers, n=1,
                                  max_length=200_000)
    assert outs[0]["reward"] == 1.0
    assert outs[0]["extra_logs"]["passed"] == 1.0
