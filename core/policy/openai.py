"""``openai:BASE_URL#MODEL``: any OpenAI-compatible chat endpoint (vLLM, TGI, ``rlhub policy serve``).

``BASE_URL`` is the API root including ``/v1`` (``http://127.0.0.1:8000/v1``). Each conversation is
one ``POST {BASE_URL}/chat/completions``. Options: the sampling keys, ``concurrency`` (requests in
flight, default 16), ``retries`` (default 3) with exponential backoff from ``backoff_s`` (default
0.5, jittered, capped at 8 s), ``timeout_s`` per request (default 60) and ``api_key`` (default
``$OPENAI_API_KEY``). Connection errors, timeouts, 408, 409, 429 and 5xx are retried; other 4xx
are not. A request that still fails, or whose response is malformed, becomes a
:class:`~rlhub.policy.protocol.Generation` with ``error`` set; it never raises into the loop.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

from rlhub.errors import PolicyError
from rlhub.policy.protocol import Conversation, Generation, sampling_from

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
MAX_BACKOFF_S = 8.0


class _Retryable(Exception):
    """A failure worth another attempt."""


class OpenAIPolicy:
    """The ``openai:`` policy (see the module docstring). It speaks the tools API: given
    ``tools``, it sends them and returns the endpoint's ``tool_calls`` on each Generation."""

    accepts_tools = True

    def __init__(self, base_url: str, model: str, *, spec: str = "", concurrency: int = 16,
                 retries: int = 3, backoff_s: float = 0.5, timeout_s: float = 60.0,
                 api_key: str | None = None, **sampling: Any):
        if not base_url.startswith(("http://", "https://")):
            raise PolicyError(f"openai: expected BASE_URL starting with http:// or https://, "
                              f"found {base_url!r} (spec form: openai:BASE_URL#MODEL)")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.spec = spec or f"openai:{base_url}#{model}"
        self.concurrency = max(1, int(concurrency))
        self.retries = max(0, int(retries))
        self.backoff_s = float(backoff_s)
        self.timeout_s = float(timeout_s)
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.defaults = sampling_from(sampling)
        self._clients: dict[int, tuple[Any, asyncio.Semaphore]] = {}

    @classmethod
    def from_spec(cls, spec: str, options: dict[str, Any]) -> OpenAIPolicy:
        rest = spec[len("openai:"):]
        base_url, sep, model = rest.rpartition("#")
        if not sep or not base_url or not model:
            raise PolicyError(f"policy spec {spec!r}: expected openai:BASE_URL#MODEL, "
                              "e.g. openai:http://127.0.0.1:8000/v1#my-model")
        return cls(base_url, model, spec=spec, **options)

    def info(self) -> dict[str, Any]:
        return {"spec": self.spec, "model": self.model, "base_url": self.base_url}

    # -- protocol ---------------------------------------------------------------------------

    async def generate(self, messages_batch: list[Conversation], **sampling: Any) -> list[str]:
        results = await self.generate_detailed(messages_batch, **sampling)
        failed = [g.error for g in results if g.error]
        if failed:
            raise PolicyError(f"{self.spec}: {failed[0]}")
        return [g.text or "" for g in results]

    async def generate_detailed(self, messages_batch: list[Conversation],
                                **sampling: Any) -> list[Generation]:
        params: dict[str, Any] = {**self.defaults, **sampling_from(sampling)}
        if sampling.get("tools"):
            params["tools"] = sampling["tools"]
        return list(await asyncio.gather(*(self._one(m, params) for m in messages_batch)))

    async def aclose(self) -> None:
        for client, _ in self._clients.values():
            await client.aclose()
        self._clients.clear()

    # -- one request ------------------------------------------------------------------------

    def _client(self) -> tuple[Any, asyncio.Semaphore]:
        """The httpx client and semaphore of the running event loop (one per loop)."""
        import httpx

        key = id(asyncio.get_running_loop())
        if key not in self._clients:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            limits = httpx.Limits(max_connections=self.concurrency)
            client = httpx.AsyncClient(timeout=self.timeout_s, headers=headers, limits=limits)
            self._clients[key] = (client, asyncio.Semaphore(self.concurrency))
        return self._clients[key]

    async def _one(self, messages: Conversation, params: dict[str, Any]) -> Generation:
        client, semaphore = self._client()
        body = {"model": self.model, "messages": messages, **params}
        start = time.perf_counter()
        error = ""
        for attempt in range(1, self.retries + 2):
            try:
                async with semaphore:
                    gen = await self._post(client, body)
                gen.latency_s, gen.attempts = time.perf_counter() - start, attempt
                return gen
            except _Retryable as exc:
                error = str(exc)
            except PolicyError as exc:
                return Generation(None, str(exc), latency_s=time.perf_counter() - start,
                                  attempts=attempt)
            if attempt <= self.retries:
                await asyncio.sleep(self._delay(attempt))
        return Generation(None, f"{error} (gave up after {self.retries + 1} attempts)",
                          latency_s=time.perf_counter() - start, attempts=self.retries + 1)

    def _delay(self, attempt: int) -> float:
        base = min(MAX_BACKOFF_S, self.backoff_s * 2 ** (attempt - 1))
        return base * (0.5 + random.random() / 2)

    async def _post(self, client: Any, body: dict[str, Any]) -> Generation:
        import httpx

        url = f"{self.base_url}/chat/completions"
        try:
            resp = await client.post(url, json=body)
        except httpx.TimeoutException as exc:
            raise _Retryable(f"POST {url}: timed out after {self.timeout_s:g} s "
                             f"({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            raise _Retryable(f"POST {url}: {type(exc).__name__}: {exc}") from exc
        if resp.status_code in RETRY_STATUS:
            raise _Retryable(f"POST {url}: HTTP {resp.status_code}: {resp.text[:200]}")
        if resp.status_code >= 400:
            raise PolicyError(f"POST {url}: HTTP {resp.status_code}: {resp.text[:200]}")
        return parse_response(resp.content, url)


def parse_response(content: bytes, url: str = "") -> Generation:
    """A :class:`Generation` from a chat-completions response body; malformed bodies raise."""
    import json

    where = f"POST {url}: " if url else ""
    try:
        data = json.loads(content)
        choice = data["choices"][0]
        message = choice["message"]
        text, calls = message["content"], message.get("tool_calls")
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise PolicyError(f"{where}malformed response: expected JSON with "
                          f"choices[0].message.content, found {content[:200]!r} "
                          f"({type(exc).__name__}: {exc})") from exc
    if text is None and calls:
        text = ""  # a message that only calls tools
    if not isinstance(text, str):
        raise PolicyError(f"{where}malformed response: expected choices[0].message.content "
                          f"to be a string, found {type(text).__name__}")
    if calls is not None and not isinstance(calls, list):
        raise PolicyError(f"{where}malformed response: expected choices[0].message.tool_calls "
                          f"to be a list, found {type(calls).__name__}")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return Generation(text, finish_reason=choice.get("finish_reason"),
                      prompt_tokens=usage.get("prompt_tokens"),
                      completion_tokens=usage.get("completion_tokens"), tool_calls=calls or None)
