"""GEM games as rlhub domains: one GEM environment per domain, played move by move.

A task is a seed for GEM's ``reset(seed)`` (odd for ``test``, even for ``train``) and the opening
observation (GEM's instructions and board). An episode makes the environment, resets it under its
own :class:`~rlhub.bridges.RandomScope` (GEM seeds the global ``random`` and ``numpy.random``
modules) and sends each completion to ``env.step`` as the move. The chat observation after a move
is GEM's message plus its board (``info["suffix"]``), as GEM's own chat wrappers show it.

Scoring: 1 for a won game (GEM ends it with its "Congratulations!" message), 0 otherwise. GEM's
episode return (the sum of its per-step rewards, with partial credit and a -0.1 format penalty) is
the ``episode_return`` component with weight 0: its partial credit pays degenerate players (a
constant guess in Guess the Number earns most of the reward at the turn limit).
"""

from __future__ import annotations

import copy
import logging
import random
from typing import Any

from rlhub import Manifest, Task, Verdict
from rlhub.bridges import GameCache, GameDomain, GameEpisode, RandomScope, bounded_space

SEED_SPACE = 2**30
WIN_MESSAGE = "Congratulations!"


def _gem() -> Any:
    """Import gem without letting it reconfigure the host's logging (it calls basicConfig)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import gem

    root.handlers[:], root.level = handlers, level
    return gem


class Game:
    """One GEM environment, reset with ``seed`` and driven under its own random scope."""

    def __init__(self, env_id: str, seed: int):
        self.scope = RandomScope(seed)
        self.env, (observation, info) = self.scope.run(_make, env_id, seed)
        self.opening = join(observation, info)
        self.last = ""
        self.total = 0.0
        self.moves = 0
        self.format_errors = 0

    def fork(self) -> Game:
        return self.scope.run(copy.deepcopy, self)

    def play(self, action: str) -> tuple[bool, str]:
        observation, reward, terminated, truncated, info = self.scope.run(self.env.step, action)
        self.moves += 1
        self.total += float(reward)
        self.format_errors += float(reward) < 0
        self.last = str(observation)
        return bool(terminated or truncated), join(observation, info)

    @property
    def won(self) -> bool:
        return self.last.startswith(WIN_MESSAGE)


def _make(env_id: str, seed: int) -> tuple[Any, tuple[str, dict[str, Any]]]:
    env = _gem().make(env_id)
    return env, env.reset(seed=seed)


def join(observation: Any, info: dict[str, Any]) -> str:
    suffix = str(info.get("suffix", "")).strip() if isinstance(info, dict) else ""
    return "\n\n".join(part for part in (str(observation).strip(), suffix) if part)


class GemDomain(GameDomain):
    """A GEM environment id (``params.env_id``)."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.env_id = str(self.params["env_id"])
        self.games = GameCache()

    def new_game(self, seed: int) -> Game:
        """A fresh game reset with ``seed``: a fork of a cached reset."""
        return self.games.fresh(seed, lambda: Game(self.env_id, seed))

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        seed = 2 * rng.randrange(SEED_SPACE) + (split == "test")
        return {"prompt": self.new_game(seed).opening, "answer": None,
                "meta": {"seed": seed, "env_id": self.env_id}}

    def start(self, task: Task) -> GemEpisode:
        return GemEpisode(self, task)


class GemEpisode(GameEpisode):
    """One game of a :class:`GemDomain`; each completion is one move."""

    domain: GemDomain

    def __init__(self, domain: GemDomain, task: Task):
        super().__init__(domain, task)
        self.game = domain.new_game(int(task.meta["seed"]))
        self.opening = self.game.opening

    def move(self, completion: str) -> tuple[bool, str]:
        return self.game.play(bounded_space(completion))

    def outcome(self) -> Verdict:
        game = self.game
        components = {"won": float(game.won), "episode_return": game.total,
                      "moves": float(game.moves), "format_errors": float(game.format_errors)}
        return Verdict(components, game.won, game.last)

    def truncated(self) -> Verdict:
        return Verdict({**self.outcome().components, "won": 0.0}, False, "")


def make(manifest: Manifest) -> GemDomain:
    """The manifest's factory."""
    return GemDomain(manifest)
