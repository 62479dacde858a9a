"""The rlhub agent module for OpenRLHF 0.11.2: ``--train.agent_func_path /path/to/openrlhf_agent.py``.

OpenRLHF loads this file by path inside every vLLM engine actor and builds ``AgentExecutor()``,
a :class:`openrlhf.utils.agent.MultiTurnAgentExecutor` over :class:`AgentInstance`. One instance
plays one sample as an episode of ``rlhub serve``:

* ``reset`` opens the episode (``POST /v1/episodes``) on the task in the sample's label (a row of
  ``rlhub export``). With ``RLHUB_SCHEDULE=1`` it instead asks the server's scheduler for the task
  (``POST /v1/sample`` with ``slot`` = a hash of the label and ``group_size``), so the mixture
  adapts online; all instances of one prompt group get the same task (see
  :mod:`rlhub.hub.server_state`), and the prompt is rebuilt with the chat template.
* ``step`` sends the turn's text (trailing end-of-turn tokens removed) to
  ``/v1/episodes/{id}/step`` with aiohttp on the engine's own event loop, never blocking it. It
  returns the step reward as a tensor (step rewards sum to the rlhub trajectory reward, repair
  discount included), ``scores`` = that return rescaled to [0, 1] (for dynamic filtering), the
  environment's reply wrapped in the chat template's turn tokens, ``done`` after a pass or at the
  domain's ``max_turns``, and ``extra_logs`` with the fixed keys of
  :data:`rlhub.hub.server_protocol.LOG_KEYS`.
* When an episode ends, its reward goes to the server's scheduler tagged with its group (the lease
  id, or the label hash) and ``RLHUB_GROUP_SIZE``; the server observes each group once all its
  samples arrived.
* In repair turns the temperature may rise by ``RLHUB_REPAIR_TEMPERATURE_STEP`` per failed
  attempt, up to ``RLHUB_MAX_TEMPERATURE``, through the ``sampling_params`` that 0.11.2's executor
  accepts from ``step`` (off by default: it makes repair turns off-policy for IS correction).

A hub that cannot be reached (after ``RLHUB_HTTP_RETRIES`` attempts) never crashes training: the
sample gets reward 0, ``error = 1`` and ``done``.

Environment variables: ``RLHUB_SERVER_URL`` (required, e.g. ``http://10.0.0.5:8000``),
``RLHUB_SCHEDULE``, ``RLHUB_GROUP_SIZE`` (= ``--rollout.n_samples_per_prompt``),
``RLHUB_TOKENIZER`` (the actor model path: the chat template comes from its tokenizer; without it
the ChatML template of :meth:`ChatFormat.chatml` is used), ``RLHUB_HTTP_TIMEOUT_S``,
``RLHUB_HTTP_RETRIES``, ``RLHUB_REPAIR_TEMPERATURE_STEP``, ``RLHUB_MAX_TEMPERATURE``.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import logging
import os
import threading
from typing import Any, NamedTuple

from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor
from rlhub.hub.export import as_messages
from rlhub.hub.server_protocol import (
    DEFAULT_STRIP_TOKENS,
    FORMAT_COMPONENTS,
    LOG_KEYS,
    LabelError,
    parse_label,
    strip_trailing_tokens,
)

log = logging.getLogger("rlhub.openrlhf_agent")


class AgentSettings(NamedTuple):
    """The module's options, read from the environment (see the module docstring).

    A NamedTuple rather than a dataclass: OpenRLHF executes this file as a module that is not in
    ``sys.modules``, where ``@dataclass`` cannot resolve its annotations.
    """

    server_url: str
    schedule: bool = False
    group_size: int = 1
    tokenizer: str | None = None
    timeout_s: float = 180.0
    retries: int = 5
    temperature_step: float = 0.0
    max_temperature: float = 1.2

    @classmethod
    def from_env(cls, env: Any = None) -> AgentSettings:
        env = os.environ if env is None else env
        url = env.get("RLHUB_SERVER_URL", "").rstrip("/")
        if not url:
            raise RuntimeError("rlhub agent: expected RLHUB_SERVER_URL (e.g. http://host:8000, "
                               "the address of `rlhub serve`) in the environment, found none")
        return cls(url, env.get("RLHUB_SCHEDULE", "0") in ("1", "true", "yes"),
                   int(env.get("RLHUB_GROUP_SIZE", "1")), env.get("RLHUB_TOKENIZER") or None,
                   float(env.get("RLHUB_HTTP_TIMEOUT_S", "180")),
                   int(env.get("RLHUB_HTTP_RETRIES", "5")),
                   float(env.get("RLHUB_REPAIR_TEMPERATURE_STEP", "0")),
                   float(env.get("RLHUB_MAX_TEMPERATURE", "1.2")))


class HubUnavailable(RuntimeError):
    """The server did not answer after every retry."""


class HubClient:
    """Async JSON calls to ``rlhub serve``.

    Each call opens its own aiohttp session, as OpenRLHF's reward client does: nothing outlives
    the event loop that made it, and the server is built for a new connection per request.
    """

    def __init__(self, settings: AgentSettings):
        self.settings = settings

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body``; retry connection errors and 5xx answers, raise :class:`HubUnavailable`."""
        import aiohttp

        url, last = self.settings.server_url + path, "no attempt"
        for attempt in range(max(1, self.settings.retries)):
            try:
                timeout = aiohttp.ClientTimeout(total=self.settings.timeout_s)
                async with aiohttp.ClientSession(timeout=timeout) as session, \
                        session.post(url, json=body) as resp:
                    data = await resp.json(content_type=None)
                    if resp.status < 500:
                        if resp.status >= 400:
                            raise HubUnavailable(f"{url}: HTTP {resp.status}: {data.get('error')}")
                        return data
                    last = f"HTTP {resp.status}: {data.get('error')}"
            except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            await asyncio.sleep(min(1.0 * (attempt + 1), 5.0))
        raise HubUnavailable(f"{url}: no answer after {self.settings.retries} attempts ({last})")


class ChatFormat:
    """How prompts and environment replies are wrapped in the policy's chat template.

    :meth:`from_tokenizer` derives both from ``tokenizer.apply_chat_template``: the prompt is the
    template with the generation prompt; the reply is what the template puts after an assistant
    message (the end-of-turn tokens) followed by a user turn and the next generation prompt. The
    fallback is ChatML (``<|im_start|>role\\n...<|im_end|>\\n``), used by Qwen and many others.
    """

    def __init__(self, render: Any, end_of_turn: str, user_turn: str, eos: tuple[str, ...] = ()):
        self._render = render
        self.end_of_turn = end_of_turn
        self.user_turn = user_turn  # with "{}" where the reply goes
        self.eos = eos

    @classmethod
    def chatml(cls) -> ChatFormat:
        def render(messages: list[dict[str, str]]) -> str:
            body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
                           for m in messages)
            return body + "<|im_start|>assistant\n"

        return cls(render, "<|im_end|>\n", "<|im_start|>user\n{}<|im_end|>\n"
                   "<|im_start|>assistant\n", ("<|im_end|>",))

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> ChatFormat:
        """The format of ``tokenizer``'s chat template, or ChatML when it has none usable."""
        def render(messages: list[dict[str, str]], gen: bool = True) -> str:
            return tokenizer.apply_chat_template(messages, tokenize=False,
                                                 add_generation_prompt=gen)

        marker_a, marker_b = "\x00RLHUB-ANSWER\x00", "\x00RLHUB-REPLY\x00"
        try:
            one = render([{"role": "user", "content": "q"},
                          {"role": "assistant", "content": marker_a}], gen=False)
            two = render([{"role": "user", "content": "q"},
                          {"role": "assistant", "content": marker_a},
                          {"role": "user", "content": marker_b}])
        except Exception:  # noqa: BLE001 - no template, or one that rejects this shape
            return cls.chatml()
        if not two.startswith(one) or marker_a not in one or marker_b not in two:
            return cls.chatml()
        end_of_turn = one[one.index(marker_a) + len(marker_a):]
        user_turn = two[len(one):].replace("{", "{{").replace("}", "}}").replace(marker_b, "{}")
        eos = tuple(t for t in (getattr(tokenizer, "eos_token", None),) if t)
        return cls(render, end_of_turn, user_turn, eos)

    def prompt(self, prompt: Any) -> str:
        """A task prompt (text or chat messages) as the model's templated input."""
        return self._render(as_messages(prompt))

    def reply(self, action_text: str, text: str) -> str:
        """The environment's ``text`` as the next user turn after ``action_text``.

        The end-of-turn tokens are added only where the model did not emit them itself.
        """
        close = self.end_of_turn
        for k in range(len(close), 0, -1):
            if action_text.endswith(close[:k]):
                close = close[k:]
                break
        return close + self.user_turn.format(text)


_formats: dict[str | None, ChatFormat] = {}
_format_lock = threading.Lock()


def chat_format(tokenizer_path: str | None) -> ChatFormat:
    """The (cached) chat format of the tokenizer at ``tokenizer_path``; ChatML without one."""
    with _format_lock:
        if tokenizer_path not in _formats:
            if tokenizer_path:
                from transformers import AutoTokenizer

                tok = AutoTokenizer.from_pretrained(tokenizer_path, trust_remote_code=True)
                _formats[tokenizer_path] = ChatFormat.from_tokenizer(tok)
            else:
                _formats[tokenizer_path] = ChatFormat.chatml()
        return _formats[tokenizer_path]


def slot_of(label: Any) -> str:
    """A stable key of a dataset row, from its label."""
    text = label if isinstance(label, str) else json.dumps(label, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def fixed_logs(**values: float) -> dict[str, float]:
    """``extra_logs`` with exactly :data:`LOG_KEYS`, as floats."""
    return {key: float(values.get(key, 0.0)) for key in LOG_KEYS}


_client: HubClient | None = None


def client() -> HubClient:
    global _client
    if _client is None:
        _client = HubClient(AgentSettings.from_env())
    return _client


class AgentInstance(AgentInstanceBase):
    """One sample's episode on ``rlhub serve``; see the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.client = client()
        self.settings = self.client.settings
        self.episode_id: str | None = None
        self.domain: str | None = None
        self.group: str | None = None
        self.reward_range = (0.0, 1.0)
        self.problem: str | None = None
        self.label: Any = None
        self.format = ChatFormat.chatml()

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        observation, label = states["observation"], states.get("label")
        self.format = await asyncio.to_thread(chat_format, self.settings.tokenizer)
        try:
            task, observation = await self._task(label, observation)
            opened = await self.client.post("/v1/episodes", {"label": self.label})
        except (LabelError, HubUnavailable) as exc:
            self.problem = str(exc)
            log.warning("rlhub agent: cannot open an episode: %s", exc)
            return {"observation": observation}
        self.episode_id, self.domain = opened["episode_id"], task["domain"]
        self.reward_range = tuple(opened["reward_range"])  # type: ignore[assignment]
        return {"observation": observation}

    async def _task(self, label: Any, observation: str) -> tuple[dict[str, Any], str]:
        """The task to play and the prompt text: the label's, or the scheduler's choice."""
        if not self.settings.schedule:
            _, task = parse_label(label)
            self.group, self.label = slot_of(label), label  # the server checks the label itself
            return task.to_dict(), observation
        leased = await self.client.post("/v1/sample", {"slot": slot_of(label),
                                                       "group_size": self.settings.group_size})
        task = leased["tasks"][0]
        self.group, self.label = leased["lease"], leased["labels"][0]  # signed by the server
        return task, self.format.prompt(task["prompt"])

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        import torch

        action = states["action_text"]
        if self.episode_id is None:  # reset could not open one; already logged
            return self._failed()
        completion = strip_trailing_tokens(action, self._strip_tokens())
        try:
            result = await self.client.post(f"/v1/episodes/{self.episode_id}/step",
                                            {"completion": completion})
        except HubUnavailable as exc:
            log.warning("rlhub agent: step failed: %s", exc)
            return self._failed()
        info, done = result["info"], bool(result["done"])
        if done:
            await self._report(float(info["return"]))
        lo, hi = self.reward_range
        return {
            "rewards": torch.tensor(float(result["reward"])),
            "scores": (float(info["return"]) - lo) / (hi - lo),
            "environment_feedback": "" if done else self.format.reply(action,
                                                                      result["observation"] or ""),
            "done": done,
            "sampling_params": None if done else self._repair_params(states, info),
            "extra_logs": self._logs(info),
        }

    def _strip_tokens(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(DEFAULT_STRIP_TOKENS + self.format.eos))

    def _logs(self, info: dict[str, Any]) -> dict[str, float]:
        components = (info.get("score") or {}).get("components") or {}
        passed = float(bool(info.get("passed")))
        fmt = next((components[k] for k in FORMAT_COMPONENTS if k in components),
                   passed)
        return fixed_logs(passed=passed, format_ok=fmt, repair_turns=info.get("repair_turns", 0),
                          verify_ms=info.get("verify_ms", 0.0),
                          error=float(info.get("error") is not None))

    def _repair_params(self, states: dict[str, Any], info: dict[str, Any]) -> Any:
        """Hotter sampling params for the next turn after a failed attempt, or None."""
        step, params = self.settings.temperature_step, states.get("sampling_params")
        if step <= 0 or params is None or not info.get("attempt") or info.get("passed"):
            return None
        hotter = copy.deepcopy(params)
        hotter.temperature = min(self.settings.max_temperature,
                                 float(getattr(params, "temperature", 1.0)) + step)
        return hotter

    async def _report(self, reward: float) -> None:
        """Send this sample's reward to the server's scheduler (its group completes there)."""
        if self.settings.group_size <= 1 or self.group is None or self.domain is None:
            return
        sample = {"domain": self.domain, "group": self.group, "reward": reward,
                  "group_size": self.settings.group_size}
        try:
            await self.client.post("/v1/scheduler/observe", {"samples": [sample]})
        except HubUnavailable as exc:  # a server without --mixture answers 400: nothing to feed
            log.info("rlhub agent: scheduler not fed: %s", exc)

    def _failed(self) -> dict[str, Any]:
        """The answer for a sample the hub could not judge: reward 0, ``error = 1``, done."""
        import torch

        return {"rewards": torch.tensor(0.0), "scores": 0.0, "environment_feedback": "",
                "done": True, "extra_logs": fixed_logs(error=1.0)}


class AgentExecutor(MultiTurnAgentExecutor):
    """What OpenRLHF's ``_load_agent_executor`` builds (no arguments)."""

    def __init__(self) -> None:
        super().__init__(AgentInstance)
