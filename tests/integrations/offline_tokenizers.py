"""Tokenizers of the Qwen2, Llama-3 and Mistral families, built offline for the bridge tests.

Nothing is downloaded: each tokenizer is a BPE trained here on a small corpus, wrapped in the
pipeline its family ships in ``tokenizer.json`` (normalizer, pre-tokenizer, decoder, special
tokens) and the ``tokenizer_config.json`` fields that change encoding and decoding (tokenizer
class, ``clean_up_tokenization_spaces``, ``legacy``, BOS/EOS, the chat template), then saved as a
model folder and loaded with ``AutoTokenizer`` as OpenRLHF loads the actor's tokenizer. The
vocabulary is small and different, so ids differ from the real ones; what these tests depend on
(special tokens kept whole, byte-level or SentencePiece-style spaces, decode normalisation, the
turn structure of the template) is the family's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QWEN_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. "
    "You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if (message.role == 'user') or (message.role == 'system' and not loop.first) "
    "or (message.role == 'assistant') %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")

LLAMA3_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if messages[0]['role'] == 'system' %}"
    "{%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}"
    "{%- else %}{%- set system_message = '' %}{%- endif %}"
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}"
    "{{- 'Cutting Knowledge Date: December 2023\\n' }}{{- 'Today Date: 26 Jul 2024\\n\\n' }}"
    "{{- system_message }}{{- '<|eot_id|>' }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' "
    "+ message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}")

MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}"
    "{% endif %}{% endfor %}")

QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
              r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
                r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = [
    "Your answer did not pass. Please fix it and answer again.",
    "Reply with the word ok , nothing else ! It 's easy , isn't it ? We 're done .",
    "def solve(x):\n    return x + 1\n\nprint(solve(41))",
    "What is 12 + 30? Put the answer in \\boxed{}. The answer is \\boxed{42}.",
    "Write the number 1994 in Roman numerals: MCMXCIV. I do not know.",
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    "Cutting Knowledge Date: December 2023 Today Date: 26 Jul 2024 system user assistant",
    "Task 0: reply with the word ok , nothing else ! ok",
    "[INST] Say it again [/INST] ok",
    "".join(chr(c) for c in range(32, 127)),  # every printable ASCII character has a token
]

FAMILIES = ("qwen2", "llama3", "mistral")


def build(family: str, folder: Path) -> Path:
    """Write the model folder of ``family`` (one of :data:`FAMILIES`) into ``folder``."""
    tokenizer, config = {"qwen2": _qwen2, "llama3": _llama3, "mistral": _mistral}[family]()
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    return folder


def _train(model: Any, pre: Any, special: list[str], normalizer: Any = None,
           **trainer: Any) -> Any:
    from tokenizers import Tokenizer, trainers

    tok = Tokenizer(model)
    if pre is not None:
        tok.pre_tokenizer = pre
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.train_from_iterator(CORPUS * 4, trainers.BpeTrainer(vocab_size=600,
                                                            special_tokens=special, **trainer))
    return tok


def _qwen2() -> tuple[Any, dict[str, Any]]:
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers

    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = _train(models.BPE(), pre, special,
                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    return tok, {"tokenizer_class": "Qwen2Tokenizer", "clean_up_tokenization_spaces": False,
                 "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                 "errors": "replace", "split_special_tokens": False,
                 "model_max_length": 131072, "chat_template": QWEN_TEMPLATE}


def _llama3() -> tuple[Any, dict[str, Any]]:
    from tokenizers import Regex, decoders, models, pre_tokenizers, processors

    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    special = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
               "<|end_header_id|>", "<|eot_id|>"]
    tok = _train(models.BPE(), pre, special,
                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    return tok, {"tokenizer_class": "PreTrainedTokenizerFast",
                 "clean_up_tokenization_spaces": True, "bos_token": "<|begin_of_text|>",
                 "eos_token": "<|eot_id|>", "model_input_names": ["input_ids", "attention_mask"],
                 "model_max_length": 131072, "chat_template": LLAMA3_TEMPLATE}


def _mistral() -> tuple[Any, dict[str, Any]]:
    from tokenizers import decoders, models, normalizers, processors

    special = ["<unk>", "<s>", "</s>"]
    tok = _train(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True), None,
                 special, normalizers.Sequence([normalizers.Prepend("▁"),
                                                normalizers.Replace(" ", "▁")]))
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return tok, {"tokenizer_class": "LlamaTokenizer", "legacy": True, "add_bos_token": True,
                 "add_eos_token": False, "clean_up_tokenization_spaces": False,
                 "spaces_between_special_tokens": False, "bos_token": "<s>",
                 "eos_token": "</s>", "unk_token": "<unk>", "model_max_length": 32768,
                 "chat_template": MISTRAL_TEMPLATE}
