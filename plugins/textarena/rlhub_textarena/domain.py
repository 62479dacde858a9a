"""TextArena games as rlhub domains: one TextArena environment per domain, played move by move.

A task is a TextArena seed (odd for the ``test`` split, even for ``train``, so the splits never
share a game) and the game's opening observation. An episode makes the environment, resets it with
that seed under its own :class:`~rlhub.bridges.RandomScope` (TextArena reseeds and draws from the
global ``random`` module) and sends each completion to ``env.step`` as the player's move.

Observation formatting is the option ``observation`` (``task.meta``, default from the manifest's
``params``), one of TextArena's wrapper variants of the same game:

* ``chat`` (``<id>-raw``): the game's new messages since the last move, for chat policies that keep
  the conversation (rlhub's rollout loop, the server's episodes);
* ``full`` (``<id>``, TextArena's default): the whole transcript every turn;
* ``train`` (``<id>-train``): TextArena's training view (the prompt and the current board).

Scoring (``params.reward``): ``win`` games pay 1 for a won game and 0 otherwise; TextArena's own
reward (its partial credit for unfinished games) is kept as the ``game_reward`` component with
weight 0, because it pays degenerate players (a constant guess in Guess the Number earns ~0.7).
``score`` games (Blackjack, Set, ...) pay TextArena's reward itself, which is the game's score.
``duel`` games are two-player games against the bridge's built-in opponent
(:mod:`rlhub_textarena.opponents`): the policy's seat (player 0 or 1) comes from the seed, the
opponent moves whenever the turn is its own, and the reward is the outcome for the policy's side
(components ``won``, weight 1, and ``drawn``, weight 0.5); an episode cut short by rlhub's turn
budget pays nothing.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import textarena as ta

from rlhub import Manifest, Task, Verdict
from rlhub.bridges import (
    GameCache,
    GameDomain,
    GameEpisode,
    RandomScope,
    bounded_lines,
    bounded_space,
)

from rlhub_textarena.opponents import NO_MOVE, OPPONENTS

SEED_SPACE = 2**30
MAX_REPLIES = 1000  # opponent moves in a row before the turn must come back (PigDice rolls)


class Game:
    """One TextArena environment, reset with ``seed`` and driven under its own random scope."""

    players = 1
    seat = 0

    def __init__(self, variant: str, seed: int, mode: str):
        self.scope = RandomScope(seed)
        self.mode = mode
        self.env = self.scope.run(_make, variant, seed, self.players)
        self.moves = 0
        self.invalid = 0

    def fork(self) -> Game:
        """An independent copy of this game, in the same state and with the same random state."""
        return self.scope.run(copy.deepcopy, self)

    @property
    def state(self) -> Any:
        return self.env.state

    def observe(self) -> str:
        _, observation = self.scope.run(self.env.get_observation)
        return render(observation, self.seat) if self.mode == "chat" else str(observation)

    def play(self, action: str) -> bool:
        """Play one move; count it as valid or refused (TextArena does not advance its turn)."""
        turn = self.state.turn
        done, _ = self.scope.run(self.env.step, action)
        refused = self.state.turn == turn or (
            done and self.state.game_info[self.seat].get("invalid_move"))
        self.invalid += bool(refused)
        self.moves += not refused
        return bool(done)

    def result(self) -> tuple[float, str]:
        """TextArena's reward for the player and its reason, once the game is over.

        Countdown, Cryptarithm, Slitherlink and ThreeCardMonte call ``set_invalid_move(progress,
        reason)`` positionally, swapping TextArena's ``(reason, reward)``: a game lost to invalid
        moves then "pays" its reason string. That is a loss, scored 0 with the string as feedback.
        """
        rewards, game_info = self.scope.run(self.env.close)
        reward = (rewards or {}).get(self.seat, 0.0)
        reason = str(game_info[self.seat].get("reason", ""))
        if isinstance(reward, str):
            return 0.0, f"Invalid Move: {reward}"
        return float(reward), reason

    def partial_credit(self) -> float:
        """TextArena's own credit for an unfinished game (what its turn limit would pay)."""
        credit = getattr(self.env, "_get_percentage_completion", None)
        return float(self.scope.run(credit)) if credit is not None else 0.0


class Duel(Game):
    """A two-player game: the policy plays ``seat`` (from the seed), the bridge's opponent the
    other, deterministically from the seed (:mod:`rlhub_textarena.opponents`)."""

    players = 2

    def __init__(self, variant: str, seed: int, mode: str, opponent: str):
        self.seat = (seed >> 1) & 1
        self.opponent = OPPONENTS[opponent]
        self.rng = random.Random(seed)
        super().__init__(variant, seed, mode)
        self.scope.run(self.reply)

    def play(self, action: str) -> bool:
        return super().play(action) or self.scope.run(self.reply)

    def reply(self) -> bool:
        """The opponent's moves until the turn is the policy's again; whether the game is over.

        An opponent with no legal move plays :data:`~rlhub_textarena.opponents.NO_MOVE`, which
        TextArena refuses: it loses as any player without a move does under TextArena's rules.
        """
        base = unwrapped(self.env)
        for _ in range(MAX_REPLIES):
            if base.state.done or base.state.current_player_id == self.seat:
                return bool(base.state.done)
            action = self.opponent(base, 1 - self.seat, self.rng)
            self.env.step(action)
            refused = base.state.error_count or base.state.game_info[1 - self.seat].get(
                "invalid_move")
            if refused and action != NO_MOVE:
                raise RuntimeError(f"the built-in opponent's move {action!r} was refused")
        raise RuntimeError(f"the built-in opponent moved {MAX_REPLIES} times in a row")


def unwrapped(env: Any) -> Any:
    while hasattr(env, "env"):
        env = env.env
    return env


def _make(variant: str, seed: int, players: int) -> Any:
    env = ta.make(variant)
    env.reset(num_players=players, seed=seed)
    return env


def render(messages: list[tuple[int, str, Any]], seat: int = 0) -> str:
    """The game's messages for a chat policy: everything except the echo of its own move; the
    other player's moves are labelled with who made them."""
    parts = [str(text).strip() if sender == ta.GAME_ID else f"Player {sender}: {text}".strip()
             for sender, text, kind in messages
             if not (kind == ta.ObservationType.PLAYER_ACTION and sender == seat)]
    return "\n\n".join(part for part in parts if part)


class TextArenaDomain(GameDomain):
    """A TextArena environment id (``params.env_id``) and its formatting variants."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.variants: dict[str, str] = self.params["observations"]
        self.default_mode = str(self.params["observation"])
        self.win_mode = self.params["reward"] in ("win", "duel")
        self.opponent: str | None = self.params.get("opponent")
        self.games = GameCache()

    def new_game(self, mode: str, seed: int) -> Game:
        """A fresh game reset with ``seed`` (a fork of a cached reset: some take seconds)."""
        return self.games.fresh((mode, seed), lambda: self._game(self.variants[mode], seed, mode))

    def _game(self, variant: str, seed: int, mode: str) -> Game:
        if self.opponent is None:
            return Game(variant, seed, mode)
        return Duel(variant, seed, mode, self.opponent)

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        seed = 2 * rng.randrange(SEED_SPACE) + (split == "test")
        game = self.new_game(self.default_mode, seed)
        return {"prompt": game.observe(), "answer": None,
                "meta": {"seed": seed, "env_id": self.params["env_id"],
                         "observation": self.default_mode}}

    def mode(self, task: Task) -> str:
        mode = str(task.meta.get("observation", self.default_mode))
        if mode not in self.variants:
            raise ValueError(f"{self.id}: expected task.meta['observation'] in "
                             f"{sorted(self.variants)}, found {mode!r}")
        return mode

    def start(self, task: Task) -> TextArenaEpisode:
        return TextArenaEpisode(self, task)

    def verdict(self, game: Game, reward: float, reason: str, finished: bool) -> Verdict:
        """The components of a finished (or cut-short) game."""
        won = finished and reward >= 1.0
        components = {"won": float(won), "game_reward": reward, "moves": float(game.moves),
                      "invalid_moves": float(game.invalid)}
        if self.opponent is not None:
            components["drawn"] = float(finished and reward == 0)
        hi = self.manifest.reward_range[1]
        passed = won if self.win_mode else finished and reward >= hi
        return Verdict(components, passed, reason)


class TextArenaEpisode(GameEpisode):
    """One game of a :class:`TextArenaDomain`; each completion is one move."""

    domain: TextArenaDomain

    def __init__(self, domain: TextArenaDomain, task: Task):
        super().__init__(domain, task)
        self.game = domain.new_game(domain.mode(task), int(task.meta["seed"]))
        self.opening = self.game.observe()  # the task's prompt; later observations are new

    def move(self, completion: str) -> tuple[bool, str]:
        if self.game.play(bounded_lines(bounded_space(completion))):
            return True, ""
        return False, self.game.observe()

    def outcome(self) -> Verdict:
        reward, reason = self.game.result()
        return self.domain.verdict(self.game, reward, reason, finished=True)

    def truncated(self) -> Verdict:
        win_mode = self.domain.win_mode and self.domain.opponent is None
        credit = self.game.partial_credit() if win_mode else 0.0
        return self.domain.verdict(self.game, credit, "", finished=False)


def make(manifest: Manifest) -> TextArenaDomain:
    """The manifest's factory."""
    return TextArenaDomain(manifest)
