"""Random input helpers shared by the families; every one draws only from the ``rng`` given."""

from __future__ import annotations

import random
import string
import textwrap

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "so", "vi", "ze", "po", "an", "el", "or", "ub"]


def word(rng: random.Random, lo: int = 1, hi: int = 3) -> str:
    """A pronounceable lowercase word of ``lo``..``hi`` syllables."""
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(lo, hi)))


def words(rng: random.Random, lo: int, hi: int, pool: list[str] | None = None) -> list[str]:
    """``lo``..``hi`` words, drawn from ``pool`` when given (so repeats happen)."""
    return [rng.choice(pool) if pool else word(rng) for _ in range(rng.randint(lo, hi))]


def text(rng: random.Random, lo: int, hi: int, alphabet: str) -> str:
    """A string of ``lo``..``hi`` characters from ``alphabet``."""
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def ints(rng: random.Random, lo: int, hi: int, vlo: int, vhi: int) -> list[int]:
    """``lo``..``hi`` integers in ``vlo``..``vhi``."""
    return [rng.randint(vlo, vhi) for _ in range(rng.randint(lo, hi))]


def fill(template: str, **params: object) -> str:
    """Dedent ``template`` and replace each ``__NAME__`` placeholder by ``repr(params[name])``."""
    code = textwrap.dedent(template).strip() + "\n"
    for name, value in params.items():
        code = code.replace(f"__{name.upper()}__", repr(value))
    return code


PRINTABLE = string.ascii_letters + string.digits + " .,!?-"
