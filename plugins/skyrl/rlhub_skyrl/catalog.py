"""What rlhub-skyrl does with each environment skyrl-gym 0.4.0 registers (no skyrl_gym import).

``BRIDGED`` environments score one completion against a row's ground truth with no side effects:
they become the ``skyrl`` verifier (``options.env``), used by data-only domain files over a
dataset in SkyRL's format. Every other registered environment is left out with the reason;
``tests/test_skyrl.py`` fails when skyrl-gym registers one this table does not name.
"""

from __future__ import annotations

NAMESPACE = "skyrl"
PACKAGE = "skyrl-gym"
VERSION = "0.4.0"
HOW = ("bridged as the `skyrl` verifier: point a data-only domain file at a dataset of SkyRL rows "
       "with `verifier: {{name: skyrl, options: {{env: {env}}}}}`; skyrl-gym ships no tasks "
       "(its examples download {source} from the Hugging Face Hub)")

BRIDGED: dict[str, dict[str, str]] = {  # env -> where its ground truth lives in the row extras
    "gsm8k": {"extras": "reward_spec", "source": "openai/gsm8k"},
    "aime": {"extras": "reward_model", "source": "AIME problems"},
}
LEFT_OUT: dict[str, str] = {
    "gsm8k_multi_turn": ("multi-turn over a dataset: rlhub's data-only domains are single-turn, "
                         "so it has no task source here"),
    "text2sql": ("needs SynSQL/Spider SQLite databases and a dataset of questions, downloaded "
                 "from the Hugging Face Hub (no network here)"),
    "search": "needs a running retrieval server and its corpus (no network here)",
    "searchcode": ("needs a retrieval server, and runs the model's Python with subprocess on the "
                   "host, outside any sandbox"),
    "lcb": ("runs the model's program with exec() in the host process, outside any sandbox; rlhub "
            "never runs model code outside its sandbox"),
}


def left_out() -> list[dict[str, str]]:
    """``{id, source, reason}`` of every registered environment: none is a listed domain."""
    rows = [{"id": f"{NAMESPACE}/{env.replace('_', '-')}-v1", "source": env,
             "reason": HOW.format(env=env, source=info["source"])}
            for env, info in BRIDGED.items()]
    rows += [{"id": f"{NAMESPACE}/{env.replace('_', '-')}-v1", "source": env, "reason": reason}
             for env, reason in LEFT_OUT.items()]
    return sorted(rows, key=lambda row: row["id"])
