"""The ``players`` probe class: degenerate players of a game, paid no more than chance.

A game bridged from another ecosystem (TextArena, GEM: ``gold: false``, episodes played move by
move) has no gold answer for the constant and hedge probes to read. What a policy can learn there
without reading the board is a fixed way of playing, so four scripted players each play the same
:data:`SEEDS` games (at most :data:`MAX_MOVES` moves each, the rest of the game being cut as
rlhub's turn budget would cut it):

* ``constant``: the first move the opening shows (``[4]``, ``\\boxed{1 1 5}``), every turn;
* ``echo``: the last observation, sent back;
* ``first legal move``: the first move the latest observation lists (a line naming the available
  or valid moves, else anywhere in it), else the constant move;
* ``random``: a random move of those listed, else the opening's example with its digits redrawn
  (seeded): the measure of chance.

A degenerate player (the first three) must earn no more than chance: its mean reward, as a
fraction of the range, may exceed the random player's by at most :data:`MARGIN`. One that does
wins by a fixed line (a weak opponent, a move the game mis-scores) and is reported.
"""

from __future__ import annotations

import random
import re
import statistics
from collections.abc import Callable, Sequence

from rlhub.domain import Domain
from rlhub.task import Task
from rlhub.testing.probes import ProbeReport, cannot_run, is_game

SEEDS = 8
MAX_MOVES = 20
MARGIN = 0.25
PLAYER_SEED = 99
_MOVE = re.compile(r"\[[^\[\]\n]{1,24}\]|\\boxed\{[^{}\n]{1,24}\}")
_LISTING = re.compile(r"available|valid|legal|possible", re.IGNORECASE)

Player = Callable[[str], str]


def moves_in(text: str) -> list[str]:
    """The moves a text shows: on its last line that lists moves, else anywhere (in order)."""
    listing = [line for line in text.splitlines() if _LISTING.search(line) and _MOVE.search(line)]
    return list(dict.fromkeys(_MOVE.findall(listing[-1] if listing else text)))


def redrawn(move: str, rng: random.Random) -> str:
    """``move`` with every digit drawn afresh (a random move in the game's own format)."""
    return re.sub(r"\d", lambda _: str(rng.randint(1, 9)), move)


def players(opening: str, seed: int) -> dict[str, Player]:
    """The four players of one game (see the module docstring)."""
    shown = moves_in(opening)
    constant = shown[0] if shown else "[0]"
    rng = random.Random(PLAYER_SEED * 1000 + seed)

    def random_move(observation: str) -> str:
        listed = moves_in(observation)
        return rng.choice(listed) if listed else redrawn(constant, rng)

    return {"constant": lambda _: constant,
            "echo": lambda observation: observation[-500:],
            "first legal move": lambda observation: (moves_in(observation) or [constant])[0],
            "random": random_move}


def play(domain: Domain, task: Task, player: Player) -> float:
    """The reward of one game played by ``player``, as a fraction of the range."""
    lo, hi = domain.manifest.reward_range
    episode = domain.start(task)
    episode.max_turns = min(episode.max_turns, MAX_MOVES)
    observation = task.prompt_text()
    while True:
        result = episode.step(player(observation))
        if result.done:
            return (result.score.reward - lo) / ((hi - lo) or 1.0)
        observation = result.observation or ""


def check_players(domain: Domain, tasks: Sequence[Task], space: Sequence[Task]) -> ProbeReport:
    """The ``players`` class on :data:`SEEDS` games of the domain's first split."""
    if not is_game(domain):
        return cannot_run("players", "not a game: its constant, hedge and template probes apply")
    report = ProbeReport("players")
    games = domain.sample(SEEDS, split=domain.manifest.data["splits"][0], seed=PLAYER_SEED)
    earned: dict[str, list[float]] = {}
    for i, task in enumerate(games):
        for name, player in players(task.prompt_text(), i).items():
            try:
                earned.setdefault(name, []).append(play(domain, task, player))
            except Exception as exc:  # noqa: BLE001 - a game that crashes on a move is a finding
                report.problems.append(f"{domain.id}: the {name} player's game {task.id} raised "
                                       f"{type(exc).__name__}: {exc}")
                earned.setdefault(name, []).append(0.0)
            report.probes += 1
    _judge(domain, earned, report)
    return report


def _judge(domain: Domain, earned: dict[str, list[float]], report: ProbeReport) -> None:
    lo, hi = domain.manifest.reward_range
    chance = statistics.fmean(earned["random"])
    report.passed = sum(1 for rewards in earned.values() for r in rewards if r >= 1.0)
    for name, rewards in earned.items():
        mean = statistics.fmean(rewards)
        if name == "random":
            continue
        report.max_reward = max(report.max_reward or lo, lo + mean * (hi - lo))
        if mean > chance + MARGIN:
            report.problems.append(
                f"{domain.id}: the {name} player earned {mean:.2f} of the range on average over "
                f"{len(rewards)} games, more than chance (a random player: {chance:.2f}); a "
                "fixed way of playing must not be paid")
