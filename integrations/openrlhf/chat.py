"""The policy's chat template, as the OpenRLHF agent module needs it for multi-turn episodes.

OpenRLHF's multi-turn executor appends the action tokens exactly as vLLM generated them, then the
tokens of the ``environment_feedback`` text the agent returns. vLLM keeps the stop token (EOS,
``<|im_end|>``, ``<|eot_id|>``) in the token ids but leaves it out of the text, so the end of the
model's turn can only be seen in the ids. :meth:`ChatFormat.reply` therefore works on the action's
token ids: it adds the template's end-of-turn tokens that the action does not already end with
(compared token by token: an action ending in ``<`` is not half of ``<|im_end|>``), then the user
turn with the environment's text and the next generation prompt. The result reads exactly as the
chat template renders the whole conversation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from rlhub.integrations.openrlhf.export import as_messages

Render = Callable[..., str]
_MARK_ANSWER, _MARK_REPLY = "\x00RLHUB-ANSWER\x00", "\x00RLHUB-REPLY\x00"


class ChatFormat:
    """Prompts and environment replies in one tokenizer's chat template (ChatML without one)."""

    def __init__(self, tokenizer: Any, render: Render, end_of_turn: str, user_turn: str):
        self.tokenizer = tokenizer
        self._render = render
        self.end_of_turn = end_of_turn
        self.user_turn = user_turn  # with "{}" where the reply goes
        self.end_ids = _ids(tokenizer, end_of_turn)
        eos = getattr(tokenizer, "eos_token", None)
        self.stop_texts = tuple(t for t in (eos, end_of_turn.strip()) if t)

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> ChatFormat:
        """The format of ``tokenizer``'s chat template; ChatML when it has none usable."""
        def render(messages: list[dict[str, str]], gen: bool = True) -> str:
            return str(tokenizer.apply_chat_template(messages, tokenize=False,
                                                     add_generation_prompt=gen))

        try:
            one = render([{"role": "user", "content": "q"},
                          {"role": "assistant", "content": _MARK_ANSWER}], gen=False)
            two = render([{"role": "user", "content": "q"},
                          {"role": "assistant", "content": _MARK_ANSWER},
                          {"role": "user", "content": _MARK_REPLY}])
        except Exception:  # noqa: BLE001 - no template, or one that rejects this shape
            return cls.chatml(tokenizer)
        if not two.startswith(one) or _MARK_ANSWER not in one or _MARK_REPLY not in two:
            return cls.chatml(tokenizer)
        end_of_turn = one[one.index(_MARK_ANSWER) + len(_MARK_ANSWER):]
        user_turn = two[len(one):].replace("{", "{{").replace("}", "}}").replace(_MARK_REPLY, "{}")
        return cls(tokenizer, render, end_of_turn, user_turn)

    @classmethod
    def chatml(cls, tokenizer: Any) -> ChatFormat:
        """ChatML (``<|im_start|>role\\n...<|im_end|>\\n``), used by Qwen and many others."""
        def render(messages: list[dict[str, str]], gen: bool = True) -> str:
            body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
                           for m in messages)
            return body + ("<|im_start|>assistant\n" if gen else "")

        return cls(tokenizer, render, "<|im_end|>\n",
                   "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n")

    def prompt(self, prompt: Any) -> str:
        """A task prompt (text or chat messages) as the model's templated input."""
        return self._render(as_messages(prompt))

    def reply(self, action_ids: list[int], text: str) -> str:
        """The environment's ``text`` as the next user turn after an action of ``action_ids``."""
        close = self.end_ids
        for k in range(len(close), 0, -1):
            if list(action_ids[-k:]) == close[:k]:
                close = close[k:]
                break
        rest = self.tokenizer.decode(close, skip_special_tokens=False,
                                     clean_up_tokenization_spaces=False) if close else ""
        return rest + self.user_turn.format(text)


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text=text, add_special_tokens=False)["input_ids"]) if text else []


_formats: dict[tuple[Any, ...], ChatFormat] = {}
_lock = threading.Lock()


def chat_format(tokenizer: Any) -> ChatFormat:
    """The (cached) format of ``tokenizer``: OpenRLHF hands each rollout call its own copy of the
    actor's tokenizer, so the cache is keyed by what the format depends on, not by identity."""
    key = (getattr(tokenizer, "name_or_path", None), getattr(tokenizer, "chat_template", None),
           len(tokenizer), getattr(tokenizer, "eos_token", None))
    with _lock:
        if key not in _formats:
            _formats[key] = ChatFormat.from_tokenizer(tokenizer)
        return _formats[key]
