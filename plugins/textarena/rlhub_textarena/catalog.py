"""The static table of TextArena environments, the manifests made from it, and its generator.

Listing domains must not import TextArena (it imports nltk, openai and chess), so the plugin reads
``catalog.json``, generated from the installed TextArena by::

    python -m rlhub_textarena.catalog --write    # regenerate catalog.json
    python -m rlhub_textarena.catalog --check    # exit 1 and print the differences

The generator walks TextArena's registry. Each base id (``Sudoku-v0-easy``) is one game at one
difficulty level; its ``-raw`` and ``-train`` wrapper variants become the ``observation`` options of
that domain. It makes and resets every base id offline: a single-player game that loads is a
domain, and so is a two-player game of :data:`DUELS`, played against the bridge's built-in opponent
(:mod:`rlhub_textarena.opponents`); everything else is left out with the reason (two or more
players and no built-in opponent, a game a fixed line of play wins on luck (:data:`DUEL_LEFT_OUT`),
a level registered twice with the same parameters, an LLM judge or opponent behind an API key, an
NLTK corpus that cannot be downloaded here, a missing package or data file, a syntax error on this
Python). What we know about each game from reading its source (how it pays, which levels cannot be
won) is :data:`GAMES` and :data:`LEFT_OUT`; a single-player game missing from :data:`GAMES` stops
the generator, so a new TextArena release is reviewed.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

NAMESPACE = "textarena"
PACKAGE = "textarena"
VERSION = "1.0.0"
TABLE = "catalog.json"
NO_LIMIT_TURNS = 200  # rlhub's turn budget for games without a turn limit of their own
PROBE_SEED = 0

# How each single-player game pays (see domain.py): "win" pays 1 for a won game; "score" pays
# TextArena's reward, the game's own score, in ``range``. ``fixed`` games deal the same game for
# every seed (their parameters fix the board and nothing is drawn): one task per level.
GAMES: dict[str, dict[str, Any]] = {
    "2048": {"reward": "win", "tags": ["puzzle", "chance"]},
    "Blackjack": {"reward": "score", "range": [0, 1], "tags": ["cards", "chance"]},
    "Countdown": {"reward": "win", "fixed": True, "tags": ["arithmetic", "puzzle"]},
    "Crosswords": {"reward": "win", "tags": ["words", "puzzle"]},
    "Cryptarithm": {"reward": "win", "fixed": True, "tags": ["arithmetic", "puzzle"]},
    "FifteenPuzzle": {"reward": "win", "tags": ["puzzle", "planning"]},
    "FrozenLake": {"reward": "win", "tags": ["navigation", "planning"]},
    "GuessTheNumber": {"reward": "win", "tags": ["search"]},
    "LightsOut": {"reward": "win", "tags": ["puzzle"]},
    "LogicPuzzle": {"reward": "win", "tags": ["logic", "puzzle"]},
    "Mastermind": {"reward": "win", "tags": ["deduction"]},
    "Minesweeper": {"reward": "win", "tags": ["deduction", "puzzle"]},
    "PegJump": {"reward": "win", "fixed": True, "tags": ["puzzle", "planning"]},
    "RushHour": {"reward": "win", "tags": ["puzzle", "planning"]},
    "Secretary": {"reward": "score", "range": [0, 1], "tags": ["decision", "chance"]},
    "Set": {"reward": "score", "range": [0, 20], "tags": ["cards", "pattern"]},
    "Slitherlink": {"reward": "win", "tags": ["logic", "puzzle"]},
    "Sokoban": {"reward": "win", "tags": ["puzzle", "planning"]},
    "Sudoku": {"reward": "win", "tags": ["logic", "puzzle"]},
    "ThreeCardMonte": {"reward": "score", "range": [0, 1], "tags": ["memory", "tracking"]},
    "TowerOfHanoi": {"reward": "win", "fixed": True, "tags": ["puzzle", "planning"]},
}

ALWAYS_ROLL = ("to 50 points a player that only ever rolls (and so never banks a point) draws "
               "about one game in six, paid 0.5: the game's move limit often comes before the "
               "built-in opponent has banked anything, so the reward would pay a constant move")
BLIND_OTHELLO = ("a player that copies the first legal move TextArena lists wins {} of its games "
                 "against the built-in opponent on the {} board (whose search is too slow to look "
                 "deeper there): the reward would pay blind play")
# Environments that load but cannot meet rlhub's contract, by base id or game.
LEFT_OUT: dict[str, str] = {
    "Bandit": ("pays a wrong final choice its regret (max mean minus the chosen button's mean), "
               "so the worse the choice, the higher the reward"),
    "Sokoban-v0-medium": ("generating one puzzle takes 15 to 150 seconds (TextArena's room "
                          "generator), beyond the 10-second budget of a verification"),
    "FifteenPuzzle": ("cannot be won: solving the puzzle calls SinglePlayerState.set_winners, "
                      "which TextArena 0.7.4 lacks, so the winning move raises AttributeError"),
    "Othello-v0-tiny": BLIND_OTHELLO.format("a quarter", "4x4"),
    "Othello-v0-big": BLIND_OTHELLO.format("one in six", "10x10"),
    "Othello-v0-huge": BLIND_OTHELLO.format("one in six", "14x14"),
    "PigDice-v0-50": ALWAYS_ROLL,
    "PigDice-v0-short": ALWAYS_ROLL,
}
TILE_MOVES = 2  # a 2048 game needs at least target/2 moves or so: each move adds a 2 (or a 4)

REASONS = [  # (pattern in the error, reason)
    (r"Resource '?(\w+)'? not found", "needs the NLTK corpus {0!r}, which cannot be downloaded "
                                      "here"),
    (r"OPENROUTER_API_KEY", "needs an LLM through OpenRouter (network and an API key)"),
    (r"SyntaxError", "does not import on this Python ({error})"),
    (r"No module named '(\w+)'", "needs the package {0!r}, which TextArena does not install"),
    (r"FileNotFoundError", "a data file is missing from the TextArena wheel ({error})"),
]
MULTIPLAYER = ("a game for two or more players, and TextArena ships no offline opponent (its "
               "agents call LLM APIs or ask a human); rlhub has no built-in opponent for it yet")

# Two-player games played against the bridge's built-in opponent (opponents.py), by game.
DUELS: dict[str, dict[str, Any]] = {
    "TicTacToe": {"opponent": "TicTacToe", "tags": ["board", "planning"]},
    "WildTicTacToe": {"opponent": "WildTicTacToe", "tags": ["board", "planning"]},
    "ConnectFour": {"opponent": "ConnectFour", "tags": ["board", "planning"]},
    "SimpleTak": {"opponent": "SimpleTak", "tags": ["board", "planning"]},
    "Chopsticks": {"opponent": "Chopsticks", "tags": ["arithmetic", "planning"]},
    "Othello": {"opponent": "Othello", "tags": ["board", "planning"]},
    "Nim": {"opponent": "Nim", "tags": ["arithmetic", "planning"]},
    "PigDice": {"opponent": "PigDice", "tags": ["dice", "chance", "decision"]},
    "Breakthrough": {"opponent": "Breakthrough", "tags": ["board", "planning"]},
    "Battleship": {"opponent": "Battleship", "tags": ["board", "search", "chance"]},
}
LUCK = ("a constant line of play (always bet, always call) wins a share of matches on card or dice "
        "luck alone against any fixed opponent, so the reward would pay it for nothing")
FIXED_REPLY = ("a simultaneous-move game: against a fixed opponent the best reply is one fixed "
               "move sequence, which the reward would pay a policy for memorising")
DUEL_LEFT_OUT: dict[str, str] = {
    "KuhnPoker": LUCK, "IndianPoker": LUCK, "Poker": LUCK, "LiarsDice": LUCK,
    "ColonelBlotto": FIXED_REPLY, "IteratedPrisonersDilemma": FIXED_REPLY,
    "IteratedRockPaperScissors": FIXED_REPLY, "IteratedMatchingPennies": FIXED_REPLY,
    "IteratedTwoThirdsAverage": FIXED_REPLY, "IteratedUltimatumGame": FIXED_REPLY,
    "GameOfPureStrategy": FIXED_REPLY,
}


@functools.cache
def load() -> dict[str, Any]:
    """The shipped table: ``{"textarena": version, "license": ..., "domains": [...], ...}``."""
    text = resources.files("rlhub_textarena").joinpath(TABLE).read_text(encoding="utf-8")
    return json.loads(text)


# -- names ----------------------------------------------------------------------------------


def kebab(game: str) -> str:
    """``GuessTheNumber`` -> ``guess-the-number``; ``2048`` stays."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", game).lower()


def split_id(env_id: str) -> tuple[str, str]:
    """``Sudoku-v0-easy`` -> (``Sudoku``, ``easy``); ``2048-v0`` -> (``2048``, ``""``)."""
    game, _, level = env_id.partition("-v0")
    return game, level.lstrip("-")


def base_variants(env_ids: dict[str, str]) -> set[str]:
    """Of domains ``{id: env_id}``, one per game: its base variant (``Sudoku-v0``), else its
    first by id. The others are harder, longer or larger settings of the same code (rlhub's own
    tests check them in the slow run)."""
    games: dict[str, list[str]] = {}
    for domain_id in sorted(env_ids):
        games.setdefault(split_id(env_ids[domain_id])[0], []).append(domain_id)
    return {next((i for i in ids if not split_id(env_ids[i])[1]), ids[0])
            for ids in games.values()}


def domain_name(env_id: str) -> str:
    game, level = split_id(env_id)
    name = kebab(game) + (f"-{level}" if level else "")
    return re.sub(r"[^A-Za-z0-9_.+-]", "-", name)


# -- manifests ------------------------------------------------------------------------------


def _reward(row: dict[str, Any]) -> dict[str, Any]:
    turns = [0, row["max_turns"]]
    if row["reward"] == "duel":
        return {"range": [0, 1], "components": {
            "won": {"weight": 1.0, "description": "the policy's side won the game"},
            "drawn": {"weight": 0.5, "description": "the game was drawn"},
            "game_reward": {"weight": 0.0, "range": [-1, 1],
                            "description": "TextArena's reward for the policy's seat (logged)"},
            "moves": {"weight": 0.0, "range": turns, "description": "valid moves (logged only)"},
            "invalid_moves": {"weight": 0.0, "range": turns,
                              "description": "moves TextArena refused (logged only)"},
        }}
    lo, hi = row["range"]
    win = row["reward"] == "win"
    return {"range": [0, 1] if win else [lo, hi], "components": {
        "won": {"weight": 1.0 if win else 0.0, "description": "the game was won"},
        "game_reward": {"weight": 0.0 if win else 1.0, "range": [lo, hi],
                        "description": "TextArena's reward (its partial credit when unwon)"},
        "moves": {"weight": 0.0, "range": turns, "description": "valid moves (logged only)"},
        "invalid_moves": {"weight": 0.0, "range": turns,
                          "description": "moves TextArena refused (logged only)"},
    }}


def manifest(row: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """The rlhub manifest of one table row."""
    return {
        "id": f"{NAMESPACE}/{row['name']}-v1", "version": VERSION, "summary": row["summary"],
        "license": table["license"], "gold": False, "size": row["size"],
        "tags": ["game", "multi-turn", "textarena", *row["tags"]],
        "reward": _reward(row),
        "turns": {"max_turns": row["max_turns"], "repair_discount": 1.0},
        "verify_timeout_s": 10,
        "factory": "rlhub_textarena.domain:make",
        "params": {"env_id": row["env_id"], "observation": "chat",
                   "observations": row["observations"], "reward": row["reward"],
                   **({"opponent": row["opponent"]} if "opponent" in row else {})},
        "requires": {PACKAGE: f"=={table['textarena']}"},
    }


def manifests() -> list[dict[str, Any]]:
    table = load()
    return [manifest(row, table) for row in table["domains"]]


def left_out() -> list[dict[str, str]]:
    """``{id, reason}`` of every TextArena environment that is not a domain."""
    return [{"id": f"{NAMESPACE}/{name}-v1", "source": env_id, "reason": reason}
            for env_id, (name, reason) in sorted(load()["left_out"].items())]


# -- the generator ----------------------------------------------------------------------------

VARIANTS = {"chat": "-raw", "full": "", "train": "-train"}


def build() -> dict[str, Any]:
    """The table, from the installed TextArena (makes and resets every base environment)."""
    from importlib import metadata

    from textarena.envs.registration import ENV_REGISTRY

    base = [i for i in ENV_REGISTRY if not re.search(r"-(raw|train)(-|$)", i)]
    domains, left = [], {}
    for env_id in sorted(base):
        row = same_game(env_id, domains) or probe(env_id, set(ENV_REGISTRY))
        if isinstance(row, str):
            left[env_id] = [domain_name(env_id), row]
        else:
            domains.append(row)
    return {"textarena": metadata.version(PACKAGE),
            "license": metadata.metadata(PACKAGE)["License"], "domains": domains, "left_out": left}


def same_game(env_id: str, rows: list[dict[str, Any]]) -> str | None:
    """Why ``env_id`` is left out when a domain already has its game and parameters (TextArena
    registers some levels twice: ``PigDice-v0`` is ``PigDice-v0-100``)."""
    from textarena.envs.registration import ENV_REGISTRY

    spec = ENV_REGISTRY[env_id]
    for row in rows:
        other = ENV_REGISTRY[row["env_id"]]
        if (other.entry_point, other.kwargs) == (spec.entry_point, spec.kwargs):
            return (f"the same game with the same parameters as {row['env_id']}, which is "
                    f"{NAMESPACE}/{row['name']}-v1")
    return None


def probe(env_id: str, registered: set[str]) -> dict[str, Any] | str:
    """The table row of ``env_id``, or the reason it is left out."""
    game, _ = split_id(env_id)
    reason = (LEFT_OUT.get(env_id) or LEFT_OUT.get(game) or DUEL_LEFT_OUT.get(game)
              or _budget_reason(env_id))
    if reason:
        return reason
    if game in DUELS:
        return _duel_row(env_id, registered)
    try:
        from rlhub_textarena.domain import Game

        first = Game(env_id, PROBE_SEED, "full")
    except Exception as exc:  # noqa: BLE001 - every failure is a reason to leave the game out
        return _reason(exc)
    import textarena as ta

    if not isinstance(first.state, ta.SinglePlayerState):
        return MULTIPLAYER
    if game not in GAMES:
        raise SystemExit(f"{env_id}: a single-player game missing from GAMES; read its source "
                         "and add how it pays")
    return _row(env_id, first, registered)


def _budget_reason(env_id: str) -> str | None:
    """2048 has no move limit; a target tile that rlhub's turn budget cannot reach is left out."""
    from textarena.envs.registration import ENV_REGISTRY

    target = ENV_REGISTRY[env_id].kwargs.get("target_tile")
    if target and target // TILE_MOVES > NO_LIMIT_TURNS:
        return (f"the {target} tile takes about {target // TILE_MOVES} moves, more than rlhub's "
                f"budget of {NO_LIMIT_TURNS} turns for a game without a move limit")
    return None


def _reason(exc: BaseException) -> str:
    import textarena

    site = str(Path(textarena.__file__).parent.parent)  # no machine's own paths in the table
    text = f"{type(exc).__name__}: {exc}".replace(site, "<site-packages>")
    for pattern, reason in REASONS:
        found = re.search(pattern, text)
        if found:
            return reason.format(*found.groups(), error=text.splitlines()[0][:120])
    if re.search(r"player", text, re.IGNORECASE):
        return MULTIPLAYER
    return f"does not load: {text.splitlines()[0][:160]}"


def _row(env_id: str, first: Any, registered: set[str]) -> dict[str, Any]:
    game, _ = split_id(env_id)
    info = GAMES[game]
    limit = first.state.max_turns
    return {
        "name": domain_name(env_id), "env_id": env_id, "game": game,
        "tags": info["tags"], "reward": info["reward"], "range": info.get("range", [0, 1]),
        "max_turns": 2 * limit if limit else NO_LIMIT_TURNS,
        "size": 1 if info.get("fixed") else None,
        "observations": _observations(env_id, registered),
        "summary": _summary(env_id, limit, info["reward"]),
    }


def _duel_row(env_id: str, registered: set[str]) -> dict[str, Any] | str:
    from rlhub_textarena.domain import Duel, unwrapped

    game, _ = split_id(env_id)
    opponent = DUELS[game]["opponent"]
    try:
        state = unwrapped(Duel(env_id, PROBE_SEED, "full", opponent).env).state
    except Exception as exc:  # noqa: BLE001 - every failure is a reason to leave the game out
        return _reason(exc)
    return {
        "name": domain_name(env_id), "env_id": env_id, "game": game, "opponent": opponent,
        "tags": ["two-player", *DUELS[game]["tags"]], "reward": "duel", "range": [0, 1],
        "max_turns": 2 * (state.max_turns or _moves_bound(state.game_state)), "size": None,
        "observations": _observations(env_id, registered, opponent),
        "summary": _summary(env_id, state.max_turns, "duel"),
    }


def _moves_bound(game_state: dict[str, Any]) -> int:
    """Moves a game without a turn limit can last: one per object (Nim) or board cell (of one
    player's board, where each has one: Battleship)."""
    if "piles" in game_state:
        return sum(game_state["piles"])
    board = game_state["board"]
    board = board[0] if isinstance(board, dict) else board
    return len(board) * len(board[0])


def _observations(env_id: str, registered: set[str],
                  opponent: str | None = None) -> dict[str, str]:
    from rlhub_textarena.domain import Duel, Game

    found = {}
    for mode, suffix in VARIANTS.items():
        variant = env_id + suffix
        try:
            game = (Game(variant, PROBE_SEED, mode) if opponent is None
                    else Duel(variant, PROBE_SEED, mode, opponent))
            game.observe()
            game.play("[rlhub probe]")
        except Exception:  # noqa: BLE001 - a wrapper that cannot show this game is no option
            continue
        if variant in registered:
            found[mode] = variant
    return found


def _summary(env_id: str, limit: int | None, reward: str) -> str:
    from textarena.envs.registration import ENV_REGISTRY

    kwargs = ", ".join(f"{k}={v}" for k, v in ENV_REGISTRY[env_id].kwargs.items())
    pays = {"win": "pays 1 for a win", "score": "pays the game's score",
            "duel": "against rlhub's built-in opponent; pays 1 for a win, 0.5 for a draw"}[reward]
    turns = f"up to {limit} moves" if limit else "no move limit"
    return f"TextArena {env_id} ({kwargs or 'defaults'}; {turns}), one move per turn; {pays}."


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per difference between two tables."""
    from rlhub.bridges import table_differences

    return table_differences(old, new, ("textarena", "license"))


def main(argv: list[str] | None = None) -> int:
    from rlhub.bridges import catalog_main

    return catalog_main(__doc__ or "", build, Path(__file__).with_name(TABLE), differences, argv)


if __name__ == "__main__":
    sys.exit(main())
