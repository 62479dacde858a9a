"""Building blocks for bridge plugins: turn-based games from other ecosystems as rlhub domains.

Game libraries (TextArena, GEM, ...) draw their chance from the process-global ``random`` (and
``numpy.random``) module and reseed it on every reset. Two episodes played side by side in one
process (the rollout loop's thread pool, the server's workers) would then take turns consuming one
stream, and neither would replay the same way. :class:`RandomScope` gives each episode a private
copy of that global state: every call into the library runs under one process-wide lock with the
episode's own state installed, and the caller's state is put back afterwards. Whatever the library
prints meanwhile goes to stderr, so that ``--json`` output on stdout stays JSON.

:class:`GameEpisode` maps a game onto rlhub's step protocol (``Episode.step(completion) ->
StepResult``). Each completion is one move; a move that does not end the game returns the game's
next observation and is not a scored attempt (``info["attempt"] = False``), so the rollout loop
takes the trajectory's reward from the final turn alone. The final turn is scored with the game's
own outcome (:meth:`GameEpisode.outcome`); when rlhub's turn budget (``turns.max_turns``) runs
out first the episode ends with :meth:`GameEpisode.truncated`, the game's verdict on an unfinished
game. :meth:`GameDomain.check` plays a completion as the only move of a fresh game, so the one-shot
surface (``Domain.verify``, ``/get_reward``, the contract kit) scores exactly a one-turn episode.

Scorers are strangers' code. :func:`gold_agrees` is what a bridge checks itself before it pays
an upstream scorer's full marks: when the gold answer is a number, the answer must be that number
(at the gold's printed precision), and no answer may be the gold with more around it; a
reasoning-gym scorer crediting a matching prefix of the printed number paid ``0`` in full for the
gold ``0.98``, and a Reasoning Core scorer found the gold in ``gold\\nYes``.

Also here: :class:`GameCache` (reset games kept and forked, as some take seconds to generate),
:func:`bounded_space` and :func:`bounded_lines` (long whitespace runs and long lines cut before a
library's regexes see them) and
:func:`catalog_main` (the ``--write``/``--check`` command of a bridge's static catalog).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol, TypeVar

from rlhub.domain import Domain, Episode, StepResult, Verdict
from rlhub.task import Task

T = TypeVar("T")
_GLOBAL_RANDOM = threading.RLock()
LONGEST_SPACE = 32
LONGEST_LINE = 2000
_SPACE_RUN = re.compile(r"\s{%d,}" % (LONGEST_SPACE + 1))


def bounded_space(completion: str) -> str:
    """``completion`` with every whitespace run cut to :data:`LONGEST_SPACE` characters.

    Game libraries parse moves with regular expressions such as ``\\[(\\d+)\\s*\\s*(\\d+)\\]``
    (TextArena's PegJump), which take quadratic time on a long run of whitespace: 20,000 spaces
    inside a bracket held a verification for 13 s, and with it the lock every game shares. No move
    needs more than a few spaces.
    """
    return _SPACE_RUN.sub(lambda m: m.group(0)[:LONGEST_SPACE], completion)


def bounded_lines(completion: str) -> str:
    """``completion`` with every line cut to its last :data:`LONGEST_LINE` characters.

    Some move parsers are quadratic in a line's length: TextArena's ConnectFour matches
    ``.*\\[(?:col\\s*)?(\\d+)\\].*``, and one 1 MB line held a verification for minutes. No move
    needs a longer line, and a final move is written at a line's end.
    """
    if len(completion) <= LONGEST_LINE:
        return completion
    return "\n".join(line[-LONGEST_LINE:] for line in completion.split("\n"))


_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,3})?|[+-]?\d+/\d+")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def as_number(text: str) -> Fraction | None:
    """``text`` as an exact number (``42``, ``-0.98``, ``1,234.5``, ``3/7``, ``1e-3``), or None.
    Exponents have at most three digits, so no text denotes a number too large to build."""
    text = text.strip()
    if _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    if len(text) > 64 or not _NUMBER.fullmatch(text):
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def gold_agrees(answer: str, gold: Any) -> bool | None:
    """Whether ``answer`` agrees with the gold, as far as the bridge can tell by itself.

    A numeric gold wants that number: equal within half a unit of the gold's last printed
    decimal (exactly, for an integer or a fraction). Any other gold: True when the answer is the
    gold (spaces aside), False when it holds the gold and more (``gold\\nYes``: a hedge an
    upstream scorer that searches the answer accepts in any position), else None: the upstream
    scorer decides (a puzzle may have other right answers).
    """
    if not isinstance(gold, (str, int, float)):
        return None
    expected = as_number(str(gold))
    if expected is None:
        return _superstring(answer, str(gold))
    found = as_number(answer)
    if found is None:
        return False
    mantissa = str(gold).strip().split("e")[0].split("E")[0]
    decimals = len(mantissa.split(".", 1)[1]) if "." in mantissa else 0
    return abs(found - expected) <= (Fraction(1, 2 * 10**decimals) if decimals else 0)


def _superstring(answer: str, gold: str) -> bool | None:
    said, wanted = " ".join(answer.split()).rstrip("."), " ".join(gold.split())
    if not wanted or said == wanted:
        return True if wanted else None
    return False if wanted in said else None


class RandomScope:
    """A private copy of the global ``random`` and ``numpy.random`` state, seeded from ``seed``.

    ``scope.run(fn, *args)`` calls ``fn`` with this scope's state installed and keeps the state it
    leaves behind for the next call; everything else in the process sees its own state unchanged.
    """

    def __init__(self, seed: int):
        self._py = random.Random(seed).getstate()
        self._np: Any = None
        self._seed = seed

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self.active():
            return fn(*args, **kwargs)

    @contextmanager
    def active(self) -> Iterator[None]:
        with _GLOBAL_RANDOM:
            numpy_random = _numpy_random()
            saved_py = random.getstate()
            saved_np = numpy_random.get_state() if numpy_random else None
            random.setstate(self._py)
            if numpy_random is not None:
                numpy_random.set_state(self._numpy_state(numpy_random))
            try:
                with redirect_stdout(sys.stderr):
                    yield
            finally:
                self._py = random.getstate()
                random.setstate(saved_py)
                if numpy_random is not None:
                    self._np = numpy_random.get_state()
                    numpy_random.set_state(saved_np)

    def _numpy_state(self, numpy_random: Any) -> Any:
        if self._np is None:
            self._np = numpy_random.RandomState(self._seed % 2**32).get_state()
        return self._np


def _numpy_random() -> Any:
    """``numpy.random`` when numpy is already imported (a library that uses it has imported it)."""
    numpy = sys.modules.get("numpy")
    return getattr(numpy, "random", None) if numpy is not None else None


class GameEpisode(Episode):
    """One game: moves in, observations out, the game's outcome scored on the last turn.

    Subclasses implement :meth:`move` (play one completion; return whether the game is over and
    the next observation), :meth:`outcome` (the verdict on a finished game) and
    :meth:`truncated` (the verdict when rlhub's turn budget ends an unfinished game). ``info``
    of every step holds ``action`` (``move`` or ``end``), ``turn`` and ``attempt``.
    """

    def __init__(self, domain: Domain, task: Task):
        super().__init__(domain, task)
        self.max_turns = domain.manifest.max_turns
        self.final: StepResult | None = None

    def move(self, completion: str) -> tuple[bool, str]:
        raise NotImplementedError

    def outcome(self) -> Verdict:
        raise NotImplementedError

    def truncated(self) -> Verdict:
        raise NotImplementedError

    def step(self, completion: str) -> StepResult:
        if self.final is not None:
            return replace(self.final, info={**self.final.info,
                                             "error": "the game is over; start a new episode"})
        self.turn += 1
        over, observation = self.move(completion)
        if not over and self.turn < self.max_turns:
            info = {"action": "move", "turn": self.turn, "attempt": False}
            return StepResult(observation, self.domain.finalize(Verdict({}, False)), False, info)
        verdict = self.outcome() if over else self.out_of_turns()
        self.final = StepResult(None, self.domain.finalize(verdict), True,
                                {"action": "end", "turn": self.turn, "attempt": True,
                                 "finished": over})
        return self.final

    def out_of_turns(self) -> Verdict:
        """The verdict when the turn budget ends the episode before the game is over."""
        verdict = self.truncated()
        note = (f"The episode ended after {self.turn} turn{'s' if self.turn > 1 else ''}, "
                "before the game did.")
        return replace(verdict, passed=False, feedback=f"{note} {verdict.feedback}".strip())


class GameDomain(Domain):
    """A domain whose episodes are :class:`GameEpisode` subclasses; ``check`` plays one move."""

    def start(self, task: Task) -> GameEpisode:
        raise NotImplementedError

    def check(self, task: Task, completion: str) -> Verdict:
        episode = self.start(task)
        episode.max_turns = episode.turn = 1
        over, _ = episode.move(completion)
        return episode.outcome() if over else episode.out_of_turns()


class Forkable(Protocol):
    """A game that can copy itself, state and random state included."""

    def fork(self) -> Any: ...


F = TypeVar("F", bound=Forkable)


class GameCache:
    """The last ``size`` freshly reset games by key; :meth:`fresh` hands out forks of them.

    Some games take seconds to generate (a Sudoku with few clues, a Rush Hour board); every
    episode and one-shot verification of a task starts from the same reset, so it is made once.
    """

    def __init__(self, size: int = 64):
        self.size = size
        self._games: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def fresh(self, key: Hashable, make: Callable[[], F]) -> F:
        with self._lock:
            game = self._games.get(key)
            if game is not None:
                self._games.move_to_end(key)
        if game is None:
            game = make()
            with self._lock:
                self._games[key] = game
                while len(self._games) > self.size:
                    self._games.popitem(last=False)
        return game.fork()


def table_differences(old: dict[str, Any], new: dict[str, Any], keys: tuple[str, ...],
                      row_key: str = "env_id") -> list[str]:
    """One line per difference between two catalogs: top-level ``keys``, domain rows (by their
    ``row_key`` field) and left-out entries."""
    lines = [f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in keys
             if old.get(key) != new.get(key)]
    rows = [{r[row_key]: r for r in table["domains"]} for table in (old, new)]
    for kind, (was, now) in (("domain", rows), ("left out", (old["left_out"], new["left_out"]))):
        for name in sorted(was.keys() | now.keys()):
            if was.get(name) != now.get(name):
                lines.append(f"{kind} {name}: {was.get(name)} -> {now.get(name)}")
    return lines


def catalog_main(doc: str, build: Callable[[], dict[str, Any]], path: Path,
                 differences: Callable[[dict[str, Any], dict[str, Any]], list[str]],
                 argv: list[str] | None = None) -> int:
    """``python -m <bridge>.catalog [--write | --check]``: regenerate or compare a catalog."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {path.name}")
    parser.add_argument("--check", action="store_true", help=f"exit 1 if {path.name} differs")
    args = parser.parse_args(argv)
    table = build()
    if args.write:
        path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {path}: {len(table['domains'])} domains, {len(table['left_out'])} left out")
        return 0
    lines = differences(json.loads(path.read_text(encoding="utf-8")), table)
    print("\n".join(lines) or f"{path.name} is up to date")
    return 1 if lines and args.check else 0
