"""Tiny domains: prompts of a few characters that the built-in character model learns on a CPU.

They exist for the embedded training runs: the demo (``rlhub train examples/demo.yaml``: succ,
reverse, count, lambda) and the joint-training mixture (``examples/joint.yaml``, every domain
below but lambda). Each answer is a short procedure of the prompt (copy, reverse, count, carry),
so a small model that learns the procedure generalises to problems it never saw, and held-out
scores mean something. After the joint mixture's warm-up the tiny model finds them in four
kinds, which ``bench/joint_training.py`` uses as groups: saturated (times1, times10, neg, copy),
out of reach (count, parity, mod7, mul: the first three have guessable answers, so their groups
carry reward variance however little the model learns), learnable (succ, pred and add share
their carry; reverse, mirror and rotate move characters), and the interfering pair pick-first
and pick-last, which ask the same prompts and pay for different answers, as two datasets with
clashing answer conventions do.

=======================  =====================  ====================  ===========================
domain                   prompt                 gold completion       verifier
=======================  =====================  ====================  ===========================
math/tiny-succ-v1        ``357+1=``             ``358``               exact, whole completion
math/tiny-pred-v1        ``358-1=``             ``357``               exact, whole completion
math/tiny-add-v1         ``357+4=``             ``361``               exact, whole completion
math/tiny-reverse-v1     ``rev 3821``           ``1283``              exact, whole completion
math/tiny-mirror-v1      ``rev cadj``           ``jdac``              exact, whole completion
math/tiny-rotate-v1      ``rot 3821``           ``8213``              exact, whole completion
math/tiny-count-v1       ``count 7 in 27371``   ``2``                 exact, whole completion
math/tiny-parity-v1      ``parity 1011001110``  ``0``                 exact, whole completion
math/tiny-mod7-v1        ``38211%7=``           ``5``                 exact, whole completion
math/tiny-mul-v1         ``47*83=``             ``3901``              exact, whole completion
math/tiny-times1-v1      ``357*1=``             ``357``               exact, whole completion
math/tiny-times10-v1     ``357*10=``            ``3570``              exact, whole completion
math/tiny-neg-v1         ``-(357)=``            ``-357``              exact, whole completion
math/tiny-copy-v1        ``copy 3821``          ``3821``              exact, whole completion
math/tiny-pick-first-v1  ``pick 3821``          ``3``                 exact, whole completion
math/tiny-pick-last-v1   ``pick 3821``          ``1``                 exact, whole completion
math/tiny-lambda-v1      ``f(x)=3x-2``          ``f=lambda x:3*x-2``  python-tests in the sandbox
=======================  =====================  ====================  ===========================

Train and test are disjoint: a problem's identity (its prompt) is hashed into exactly one split,
one problem in ``TEST_SHARE`` belonging to test, as in :mod:`rlhub_math.domain`. The lambda domain
runs the candidate against hidden tests in the sandbox (the candidate is code); completions that
are not valid Python fail before any sandbox job is started.
"""

from __future__ import annotations

import ast
import hashlib
import random
from collections.abc import Callable
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict

TEST_SHARE = 8
MAX_DRAWS = 400
XS = (-3, 0, 2, 7)

Problem = tuple[str, str]  # (prompt, answer)


def split_of(identity: str) -> str:
    """The split a problem belongs to: the rule of :func:`rlhub_math.domain.split_of`."""
    bucket = int.from_bytes(hashlib.sha256(identity.encode()).digest()[:8], "big") % TEST_SHARE
    return "test" if bucket == 0 else "train"


def succ(rng: random.Random) -> Problem:
    """``n+1=`` for n in 0..999 (carries included)."""
    n = rng.randrange(1000)
    return f"{n}+1=", str(n + 1)


def reverse(rng: random.Random) -> Problem:
    """``rev DIGITS`` for 3 to 5 digits; the answer keeps leading zeros."""
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(3, 5)))
    return f"rev {digits}", digits[::-1]


def count(rng: random.Random) -> Problem:
    """``count D in DIGITS``: how often digit D occurs in five digits (each is D with p = 0.3)."""
    d = rng.choice("0123456789")
    others = [c for c in "0123456789" if c != d]
    digits = "".join(d if rng.random() < 0.3 else rng.choice(others) for _ in range(5))
    return f"count {d} in {digits}", str(digits.count(d))


def affine(rng: random.Random) -> Problem:
    """``f(x)=ax+b`` or ``f(x)=ax-b`` with a in 2..19, b in 1..19; the answer is ``"a b"``."""
    a, b, sign = rng.randint(2, 19), rng.randint(1, 19), rng.choice("+-")
    return f"f(x)={a}x{sign}{b}", f"{a} {b if sign == '+' else -b}"


def _digits(rng: random.Random) -> str:
    """3 to 5 random digits."""
    return "".join(rng.choice("0123456789") for _ in range(rng.randint(3, 5)))


def pred(rng: random.Random) -> Problem:
    """``n-1=`` for n in 1..1000 (borrows included)."""
    n = rng.randint(1, 1000)
    return f"{n}-1=", str(n - 1)


def add(rng: random.Random) -> Problem:
    """``n+k=`` for n in 0..999 and a digit k in 2..9."""
    n, k = rng.randrange(1000), rng.randint(2, 9)
    return f"{n}+{k}=", str(n + k)


def mirror(rng: random.Random) -> Problem:
    """``rev LETTERS`` for 3 to 5 letters a-j: the reverse task on letters instead of digits."""
    letters = "".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 5)))
    return f"rev {letters}", letters[::-1]


def rotate(rng: random.Random) -> Problem:
    """``rot DIGITS`` for 3 to 5 digits: the first digit moved to the end."""
    digits = _digits(rng)
    return f"rot {digits}", digits[1:] + digits[0]


def times1(rng: random.Random) -> Problem:
    """``n*1=`` for n in 0..999: the number itself."""
    n = rng.randrange(1000)
    return f"{n}*1=", str(n)


def times10(rng: random.Random) -> Problem:
    """``n*10=`` for n in 1..999: the number with a zero appended."""
    n = rng.randint(1, 999)
    return f"{n}*10=", str(n * 10)


def neg(rng: random.Random) -> Problem:
    """``-(n)=`` for n in 1..999: the number with a minus sign."""
    n = rng.randint(1, 999)
    return f"-({n})=", str(-n)


def copy(rng: random.Random) -> Problem:
    """``copy DIGITS`` for 3 to 5 digits: the digits themselves."""
    digits = _digits(rng)
    return f"copy {digits}", digits


def parity(rng: random.Random) -> Problem:
    """``parity BITS`` for ten bits: 1 when an odd number of them are 1, else 0."""
    bits = "".join(rng.choice("01") for _ in range(10))
    return f"parity {bits}", str(bits.count("1") % 2)


def mod7(rng: random.Random) -> Problem:
    """``n%7=`` for a five-digit n: its remainder modulo 7."""
    n = rng.randrange(10000, 100000)
    return f"{n}%7=", str(n % 7)


def mul(rng: random.Random) -> Problem:
    """``a*b=`` for two-digit a and b: the four-digit (or three-digit) product."""
    a, b = rng.randint(11, 99), rng.randint(11, 99)
    return f"{a}*{b}=", str(a * b)


def pick_first(rng: random.Random) -> Problem:
    """``pick DIGITS``, paid for the first digit (its twin ``pick-last`` pays for the last)."""
    digits = _digits(rng)
    return f"pick {digits}", digits[0]


def pick_last(rng: random.Random) -> Problem:
    """``pick DIGITS``, paid for the last digit: the same prompts as ``pick-first``."""
    digits = _digits(rng)
    return f"pick {digits}", digits[-1]


GENERATORS: dict[str, Callable[[random.Random], Problem]] = {
    "succ": succ, "reverse": reverse, "count": count, "lambda": affine,
    "pred": pred, "add": add, "mirror": mirror, "rotate": rotate, "times1": times1,
    "times10": times10, "neg": neg, "copy": copy, "parity": parity, "mod7": mod7, "mul": mul,
    "pick-first": pick_first, "pick-last": pick_last,
}


class TinyDomain(Domain):
    """One tiny task family (``params.task``); answers are compared with the whole completion."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        task = str(self.params["task"])
        if task not in GENERATORS:
            raise KeyError(f"{self.id}: expected params.task in {sorted(GENERATORS)}, "
                           f"found {task!r}")
        self._generate = GENERATORS[task]

    def draw(self, rng: random.Random, split: str) -> Problem:
        """A problem of ``split``, redrawn from ``rng`` until its hash puts it there."""
        for _ in range(MAX_DRAWS):
            prompt, answer = self._generate(rng)
            if split_of(prompt) == split:
                return prompt, answer
        raise RuntimeError(f"domain {self.id!r}: found no {split!r} problem in {MAX_DRAWS} draws")

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        prompt, answer = self.draw(rng, split)
        return {"prompt": prompt, "answer": answer, "gold": answer, "meta": {}}


class TinyLambda(TinyDomain):
    """``f(x)=ax+b`` -> a Python definition of ``f``, run against hidden tests in the sandbox."""

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        prompt, answer = self.draw(rng, split)
        a, b = (int(v) for v in answer.split())
        tests = "def check(f):\n" + "".join(
            f"    assert f({x}) == {a * x + b}, 'f({x}) should be {a * x + b}'\n" for x in XS)
        gold = f"f=lambda x:{a}*x{'+' if b >= 0 else '-'}{abs(b)}"
        return {"prompt": prompt, "answer": None, "gold": gold,
                "meta": {"tests": tests, "entry_point": "f", "a": a, "b": b}}

    def check(self, task: Task, completion: str) -> Verdict:
        try:
            ast.parse(completion)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
            # ValueError: NUL bytes; MemoryError/RecursionError: nesting too deep for the parser
            return Verdict({"pass_frac": 0.0, "all_pass": 0.0}, False,
                           f"The completion is not valid Python: {type(exc).__name__}: "
                           f"{str(exc)[:200]}.")
        return super().check(task, completion)


def make(manifest: Manifest) -> TinyDomain:
    """The factory named by the tiny manifests."""
    if manifest.data["params"]["task"] == "lambda":
        return TinyLambda(manifest)
    return TinyDomain(manifest)
