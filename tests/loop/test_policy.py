"""Policies: the tiny model, the local transformers policy, the OpenAI client and server."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rlhub.errors import PolicyError
from rlhub.policy import make_policy
from rlhub.policy.openai import OpenAIPolicy
from rlhub.policy.tiny import CHARS, build_tiny, load_tiny
from rlhub.plugins import Registry
from rlhub.serving import refused_port

REG = Registry(autoload=False)  # the built-in policy kinds only

HELLO = [{"role": "user", "content": "Say hello."}]


def test_the_tiny_tokenizer_round_trips_every_printable_ascii_character_and_newline() -> None:
    _, tok = load_tiny()
    text = "".join(chr(i) for i in range(32, 127)) + "\n\tdef f(x):\n    return x\n"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.unk_token_id not in ids
    assert tok.decode(ids, skip_special_tokens=True) == text
    assert set(CHARS) >= set(text)


def test_the_tiny_model_is_initialised_deterministically_from_its_seed(tmp_path: Path) -> None:
    import torch
    from transformers import GPT2LMHeadModel

    a = GPT2LMHeadModel.from_pretrained(build_tiny(tmp_path / "a", seed=3))
    b = GPT2LMHeadModel.from_pretrained(build_tiny(tmp_path / "b", seed=3))
    c = GPT2LMHeadModel.from_pretrained(build_tiny(tmp_path / "c", seed=4))
    pa, pb, pc = (dict(m.named_parameters()) for m in (a, b, c))
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert not all(torch.equal(pa[k], pc[k]) for k in pa)
    assert sum(p.numel() for p in pa.values()) < 2_000_000


def test_a_saved_tiny_model_loads_back_as_an_hf_policy_that_generates(tmp_path: Path) -> None:
    where = build_tiny(tmp_path / "tiny", seed=0)
    policy = make_policy(f"hf:{where}", {"max_tokens": 8, "threads": 1}, registry=REG)
    texts = asyncio.run(policy.generate([HELLO, HELLO], temperature=0.0))
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts)
    assert texts[0] == texts[1]  # greedy decoding of the same prompt


def test_an_hf_spec_naming_a_missing_directory_is_reported_as_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="expected a transformers causal LM directory"):
        make_policy(f"hf:{tmp_path / 'nothing-here'}", {}, registry=REG)


def test_an_unknown_policy_kind_names_the_kinds_that_exist() -> None:
    with pytest.raises(PolicyError, match=r"unknown policy spec 'nope:x': expected one of "
                       r"openai:BASE_URL#MODEL, hf:PATH, builtin:tiny"):
        make_policy("nope:x", {}, registry=REG)


def test_an_openai_spec_without_a_model_is_rejected_with_the_expected_form() -> None:
    with pytest.raises(PolicyError, match="expected openai:BASE_URL#MODEL"):
        make_policy("openai:http://127.0.0.1:1/v1", {}, registry=REG)


def test_concurrent_requests_to_the_tiny_model_are_merged_into_batches() -> None:
    policy = make_policy("builtin:tiny", {"max_tokens": 4}, registry=REG)
    calls: list[int] = []
    run = policy._batcher.run
    policy._batcher.run = lambda convs, s: calls.append(len(convs)) or run(convs, s)

    async def many() -> list[list[str]]:
        return await asyncio.gather(*(policy.generate([HELLO]) for _ in range(12)))

    results = asyncio.run(many())
    assert len(results) == 12 and sum(calls) == 12
    assert len(calls) < 12


def test_rlhub_policy_serve_answers_chat_completions_for_the_openai_policy(serve) -> None:
    base = serve("builtin:tiny")
    models = httpx.get(f"{base}/models").json()
    assert [m["id"] for m in models["data"]] == ["tiny"]
    policy = make_policy(f"openai:{base}#tiny", {"max_tokens": 6, "concurrency": 4},
                         registry=REG)
    gens = asyncio.run(policy.generate_detailed([HELLO] * 5, temperature=1.0))
    assert all(g.error is None and isinstance(g.text, str) for g in gens)
    assert all(g.completion_tokens is not None and g.completion_tokens <= 6 for g in gens)
    bad = httpx.post(f"{base}/chat/completions", json={"messages": []})
    assert bad.status_code == 422


def test_a_dead_endpoint_becomes_an_error_generation_after_the_retries() -> None:
    policy = OpenAIPolicy(f"http://127.0.0.1:{refused_port()}/v1", "m", retries=2, backoff_s=0.01,
                          timeout_s=1.0)
    gens = asyncio.run(policy.generate_detailed([HELLO, HELLO]))
    assert all(g.text is None for g in gens)
    assert all("gave up after 3 attempts" in g.error and g.attempts == 3 for g in gens)
    with pytest.raises(PolicyError, match="ConnectError"):
        asyncio.run(policy.generate([HELLO]))


def test_a_slow_endpoint_times_out_into_an_error_generation(serve) -> None:
    base = serve("oracle:right", "--options", '{"delay_s": 30}')
    policy = OpenAIPolicy(base, "right", retries=1, backoff_s=0.01, timeout_s=0.3)
    (gen,) = asyncio.run(policy.generate_detailed([HELLO]))
    assert gen.text is None and "timed out after 0.3 s" in gen.error
    assert 0.6 <= gen.latency_s < 20  # two 0.3 s attempts, never the server's 30 s


class _Garbage(http.server.BaseHTTPRequestHandler):
    bodies = {"/v1/chat/completions": b"<html>not json</html>"}
    status = 200

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = self.server.body  # type: ignore[attr-defined]
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def garbage_server() -> Iterator[object]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def configure(body: bytes, status: int = 200) -> str:
        server.body, server.status = body, status  # type: ignore[attr-defined]
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield configure
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("body, expected", [
    (b"<html>not json</html>", "malformed response: expected JSON"),
    (b'{"choices": []}', "malformed response: expected JSON"),
    (b'{"choices": [{"message": {"content": 7}}]}', "to be a string, found int"),
])
def test_a_malformed_response_becomes_an_error_generation(garbage_server, body: bytes,
                                                          expected: str) -> None:
    policy = OpenAIPolicy(garbage_server(body), "m", retries=0)
    (gen,) = asyncio.run(policy.generate_detailed([HELLO]))
    assert gen.text is None and expected in gen.error


def test_a_client_error_status_is_not_retried(garbage_server) -> None:
    policy = OpenAIPolicy(garbage_server(b'{"error": "bad"}', status=400), "m", retries=3,
                          backoff_s=0.01)
    (gen,) = asyncio.run(policy.generate_detailed([HELLO]))
    assert gen.attempts == 1 and "HTTP 400" in gen.error
