"""The static table of GEM environments, the manifests made from it, and its generator.

GEM 0.1.0 registers its games, reasoning-gym's datasets (``rg:*``) and datasets fetched from the
Hugging Face Hub (``math:*``, ``code:*``, ``qa:*``, ``eval:*``). Only the games run offline, and
most of them are TextArena's games re-implemented: a GEM level with the same game and the same
board parameters as a TextArena level is the same task, which rlhub-textarena already bridges, so
it is listed as left out and names that domain (:data:`SAME_AS`; its turn budget may differ). The
domains here (:data:`DOMAINS`) are the levels no other plugin provides. Regenerate the table with::

    python -m rlhub_gem.catalog --write    # or --check: exit 1 and print the differences

The generator needs gem-llm and the extra ``rlhub-gem[generate]`` (rlhub-textarena, whose domain
names it quotes); listing and playing the domains need neither.
"""

from __future__ import annotations

import functools
import json
import sys
from importlib import metadata, resources
from pathlib import Path
from typing import Any

NAMESPACE = "gem"
PACKAGE = "gem-llm"
VERSION = "1.0.0"
TABLE = "catalog.json"
INSTALL = f"pip install --no-deps {PACKAGE}==0.1.0"

DOMAINS: dict[str, tuple[str, list[str]]] = {  # GEM id -> (domain name, tags)
    "game:GuessTheNumber-v0-easy": ("guess-the-number-easy", ["search"]),
    "game:Minesweeper-v0-hard": ("minesweeper-hard", ["deduction", "puzzle"]),
    "game:FifteenPuzzle-v0-easy": ("fifteen-puzzle-easy", ["puzzle", "planning"]),
    "game:Sudoku-v0-easy": ("sudoku-easy", ["logic", "puzzle"]),
    "game:Sudoku-v0-hard": ("sudoku-hard", ["logic", "puzzle"]),
    "game:Sokoban-v0-easy": ("sokoban-easy", ["puzzle", "planning"]),
}

# GEM id -> (TextArena id, {GEM parameter: TextArena parameter}) of the same game and board.
SAME_AS: dict[str, tuple[str, dict[str, str]]] = {
    "game:GuessTheNumber-v0-hard": ("GuessTheNumber-v0-hardcore",
                                    {"min_number": "min_number", "max_number": "max_number"}),
    "game:Mastermind-v0-hard": ("Mastermind-v0-hard", {
        "code_length": "code_length", "num_numbers": "num_numbers",
        "duplicate_numbers": "duplicate_numbers"}),
    "game:Minesweeper-v0-easy": ("Minesweeper-v0-small",
                                 {"rows": "rows", "cols": "cols", "num_mines": "num_mines"}),
    "game:TowerofHanoi-v0-easy": ("TowerOfHanoi-v0", {"num_disks": "num_disks"}),
    "game:TowerofHanoi-v0-hard": ("TowerOfHanoi-v0-hard", {"num_disks": "num_disks"}),
    "game:Game2048-v0-easy": ("2048-v0-mega-easy", {"target_tile": "target_tile"}),
    "game:Crosswords-v0-easy": ("Crosswords-v0",
                                {"hardcore": "hardcore", "num_words": "num_words"}),
    "game:Crosswords-v0-hard": ("Crosswords-v0-hardcore",
                                {"hardcore": "hardcore", "num_words": "num_words"}),
}

LEFT_OUT: dict[str, str] = {
    "game:Mastermind-v0-easy": ("with two of six colours there are 30 codes, and the prompt's "
                                "example guess (\\boxed{5 2}) is a legal one: an echoed prompt "
                                "wins one game in 30 and fails the contract's echo probe"),
    "game:Sokoban-v0-hard": ("generating one puzzle takes about 20 seconds (GEM's room generator), "
                             "beyond the 10-second budget of a verification"),
    "game:FifteenPuzzle-v0-hard": ("a shuffled 4x4 board is unsolvable half the time and needs "
                                   "about 52 moves when it is not; GEM allows 50, and no scripted "
                                   "player can show a win in that budget"),
    "game:Game2048-v0-hard": ("cannot be won: the 512 tile takes about 256 moves and GEM allows "
                              "50"),
    "game:Game2048-v0-extreme-hard": ("cannot be won: the 2048 tile takes about 1000 moves and GEM "
                                      "allows 100"),
}
NLTK_GAMES = ("Wordle", "Hangman", "WordSearch")


@functools.cache
def load() -> dict[str, Any]:
    """The shipped table: ``{"gem": version, "license", "domains": [...], "left_out": {...}}``."""
    text = resources.files("rlhub_gem").joinpath(TABLE).read_text(encoding="utf-8")
    return json.loads(text)


def installed() -> bool:
    """Whether gem-llm is installed (a metadata lookup; gem itself is not imported)."""
    try:
        return bool(metadata.version(PACKAGE))
    except metadata.PackageNotFoundError:
        return False


def manifest(row: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """The rlhub manifest of one table row."""
    turns = [0, row["max_turns"]]
    return {
        "id": f"{NAMESPACE}/{row['name']}-v1", "version": VERSION, "summary": row["summary"],
        "license": table["license"], "gold": False, "size": None,
        "tags": ["game", "multi-turn", "gem", *row["tags"]],
        "reward": {"range": [0, 1], "components": {
            "won": {"weight": 1.0, "description": "GEM declared the game won"},
            "episode_return": {"weight": 0.0, "range": [-1, 1],
                               "description": "GEM's summed per-step rewards (logged only)"},
            "moves": {"weight": 0.0, "range": turns, "description": "moves played"},
            "format_errors": {"weight": 0.0, "range": turns,
                              "description": "moves GEM could not parse (logged only)"},
        }},
        "turns": {"max_turns": row["max_turns"], "repair_discount": 1.0},
        "verify_timeout_s": 10,
        "factory": "rlhub_gem.domain:make",
        "params": {"env_id": row["env_id"]},
        "requires": {PACKAGE: f"=={table['gem']}"},
    }


def manifests(present: bool | None = None) -> list[dict[str, Any]]:
    """One manifest per table row; none unless gem-llm is ``present`` (None: :func:`installed`)."""
    if not (installed() if present is None else present):
        return []
    table = load()
    return [manifest(row, table) for row in table["domains"]]


def left_out(present: bool | None = None) -> list[dict[str, str]]:
    """``{id, source, reason}`` of every GEM environment that is not a domain here (every one
    unless gem-llm is ``present``; None: :func:`installed`)."""
    rows = [{"id": f"{NAMESPACE}/{name}-v1", "source": env_id, "reason": reason}
            for env_id, (name, reason) in sorted(load()["left_out"].items())]
    if not (installed() if present is None else present):
        reason = f"{PACKAGE} is not installed; install it with `{INSTALL}`"
        rows += [{"id": f"{NAMESPACE}/{row['name']}-v1", "source": row["env_id"],
                  "reason": reason} for row in load()["domains"]]
    return rows


# -- the generator ----------------------------------------------------------------------------


def name_of(env_id: str) -> str:
    from rlhub_textarena.catalog import domain_name  # the same naming as the TextArena bridge

    kind, _, rest = env_id.partition(":")
    return DOMAINS[env_id][0] if env_id in DOMAINS else f"{kind}-{domain_name(rest)}".lower()


def reason_for(env_id: str, kwargs: dict[str, Any]) -> str | None:
    """Why ``env_id`` is not a domain here, or None when it is one."""
    kind, _, rest = env_id.partition(":")
    game = rest.split("-v0")[0]
    if env_id in DOMAINS:
        return None
    if env_id in SAME_AS:
        ta_id, _ = SAME_AS[env_id]
        from rlhub_textarena.catalog import domain_name

        return f"the same task as textarena/{domain_name(ta_id)}-v1 ({ta_id}): same game and board"
    if env_id in LEFT_OUT:
        return LEFT_OUT[env_id]
    if kind == "rg":
        return (f"a reasoning-gym dataset: rlhub-reasoning-gym bridges reasoning-gym itself "
                f"(rg/{rest}-v3, or its list of left-out datasets)")
    if "dataset_name" in kwargs:
        return (f"needs the dataset {kwargs['dataset_name']} from the Hugging Face Hub (no network "
                "here)")
    if env_id.endswith("-random"):
        return (f"draws one of GEM's {game} levels at random each episode: a mixture, which rlhub "
                "expresses over the level domains")
    if game in NLTK_GAMES:
        return "needs the NLTK corpus 'words', which cannot be downloaded here"
    raise SystemExit(f"{env_id}: a GEM environment this catalog does not know; review it")


def build() -> dict[str, Any]:
    """The table, from the installed GEM (imports it and checks each domain resets offline)."""
    from rlhub_gem.domain import Game, _gem

    registry = _gem().envs.registration.ENV_REGISTRY
    domains, left = [], {}
    for env_id, spec in sorted(registry.items()):
        reason = reason_for(env_id, spec.kwargs)
        if reason is not None:
            left[env_id] = [name_of(env_id), reason]
            continue
        Game(env_id, 0)  # it must reset offline
        kwargs = ", ".join(f"{k}={v}" for k, v in spec.kwargs.items())
        name, tags = DOMAINS[env_id]
        domains.append({"name": name, "env_id": env_id, "tags": tags,
                        "max_turns": int(spec.kwargs["max_turns"]),
                        "summary": f"GEM {env_id} ({kwargs}), one move per turn; pays 1 for a "
                                   "win."})
    return {"gem": metadata.version(PACKAGE), "license": metadata.metadata(PACKAGE)["License"],
            "domains": domains, "left_out": left}


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per difference between two tables."""
    from rlhub.bridges import table_differences

    return table_differences(old, new, ("gem", "license"))


def main(argv: list[str] | None = None) -> int:
    from rlhub.bridges import catalog_main

    return catalog_main(__doc__ or "", build, Path(__file__).with_name(TABLE), differences, argv)


if __name__ == "__main__":
    sys.exit(main())
