"""``builtin:tiny``: a character-level GPT-2 small enough to run on a laptop CPU.

The tokenizer (``tokenizers`` WordLevel, one token per character) covers printable ASCII, tab and
newline, so every gold completion of a first-party domain can be encoded; anything else maps to
``<unk>``. The model is a 4-layer GPT-2 (about 0.9M parameters) initialised deterministically from
a seed. :func:`build_tiny` saves both to a directory in the usual ``save_pretrained`` layout, so
the trainer can fine-tune the model and ``hf:DIR`` (or :func:`load_tiny`) can serve the result.

The tokenizer carries a chat template: ``<bos>`` then one ``role: content`` line per message and,
for generation, ``assistant: ``. Training code should build prompts with :func:`chat_prompt` (or the
tokenizer's ``apply_chat_template``) so that it sees exactly what the policy sees.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

TINY_VERSION = "1"
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")
CHARS = "\t\n" + "".join(chr(i) for i in range(32, 127))
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
DEFAULT_CONFIG: dict[str, Any] = {"n_layer": 4, "n_embd": 128, "n_head": 4, "n_positions": 1024}
MARKER = "rlhub_tiny.json"


def chat_prompt(messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> str:
    """The text the chat template renders for ``messages`` (without the ``<bos>`` token)."""
    lines = "".join(f"{m['role']}: {m['content']}\n" for m in messages)
    return lines + ("assistant: " if add_generation_prompt else "")


def build_tokenizer() -> Any:
    """The character-level tokenizer as a ``PreTrainedTokenizerFast`` (left padding)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate([*SPECIALS, *CHARS])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), "isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(list(SPECIALS))
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<bos>",
                                  eos_token="<eos>", unk_token="<unk>", padding_side="left",
                                  truncation_side="left")
    tok.chat_template = CHAT_TEMPLATE
    return tok


def build_model(seed: int, vocab_size: int, **config: Any) -> Any:
    """A freshly initialised GPT-2 LM; the same weights for the same seed in every process."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=vocab_size, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     **{**DEFAULT_CONFIG, **config})
    torch.manual_seed(seed)
    return GPT2LMHeadModel(cfg).eval()


def build_tiny(path: str | os.PathLike[str], *, seed: int = 0, **config: Any) -> Path:
    """Build the tiny model and tokenizer and save them to ``path`` (atomically; kept if present).

    Concurrent builders race safely: each writes a private temp dir and renames it into place;
    the loser discards its copy.
    """
    path = Path(path)
    if (path / MARKER).exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        tok = build_tokenizer()
        model = build_model(seed, len(tok), **config)
        model.generation_config.pad_token_id = 0
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        meta = {"version": TINY_VERSION, "seed": seed, "config": {**DEFAULT_CONFIG, **config}}
        (tmp / MARKER).write_text(json.dumps(meta, sort_keys=True))
        try:
            os.rename(tmp, path)
        except OSError:  # another process renamed its copy first; keep theirs
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not (path / MARKER).exists():
        raise OSError(f"builtin:tiny: expected a model in {path} after building, found none")
    return path


def default_dir(seed: int = 0) -> Path:
    """Where ``builtin:tiny`` keeps its model: ``models/tiny-v1-seed<seed>`` in the cache."""
    from rlhub.home import rlhub_cache

    return rlhub_cache() / "models" / f"tiny-v{TINY_VERSION}-seed{seed}"


def load_tiny(path: str | os.PathLike[str] | None = None, *, seed: int = 0) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from ``path`` (default :func:`default_dir`), building it if missing."""
    from transformers import AutoTokenizer, GPT2LMHeadModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    where = build_tiny(path or default_dir(seed), seed=seed)
    tok = AutoTokenizer.from_pretrained(where)
    tok.padding_side, tok.truncation_side = "left", "left"
    return GPT2LMHeadModel.from_pretrained(where).eval(), tok
