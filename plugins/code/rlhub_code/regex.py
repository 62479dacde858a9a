"""Regex synthesis from examples, tested on hidden positives and negatives.

A task's language is a random structured pattern (the gold regex). The prompt shows some strings
it matches and some near misses it rejects; the candidate regex must fully match every hidden
positive and no hidden negative (Python ``re``, ``re.fullmatch``). Matching runs in the sandbox,
so a catastrophically backtracking pattern only hits the wall-clock limit; the pattern crosses as
data and cannot run code.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict, code_of, fresh_nonce, tagged_line
from rlhub_code.families.rand import SYLLABLES
from rlhub_code.verdicts import exec_summary, failed_verdict, manifest_limits, tests_verdict

SHOWN, HIDDEN = 6, 10
MAX_PATTERN = 1000

DRIVER = r'''
import json, re, sys

job = json.loads(sys.stdin.read())
try:
    pattern = re.compile(job["pattern"])
    out = {"matches": [pattern.fullmatch(s) is not None for s in job["strings"]]}
except (re.error, RecursionError, OverflowError, ValueError) as exc:
    out = {"error": f"{type(exc).__name__}: {exc}"[:300]}
sys.stdout.write("\n" + json.dumps({"rlhub_regex": out, "nonce": job["nonce"]}) + "\n")
'''

Segment = tuple[str, Callable[[random.Random], str]]


def _klass(name: str, chars: str, rng: random.Random) -> Segment:
    lo = rng.randint(1, 3)
    hi = lo + rng.choice([0, 0, 1, 2])
    quant = f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"
    return f"{name}{quant}", lambda r: "".join(r.choice(chars) for _ in range(r.randint(lo, hi)))


def _segment(rng: random.Random) -> Segment:
    kind = rng.choice(["upper", "lower", "digit", "digit", "words", "hex"])
    if kind == "upper":
        return _klass("[A-Z]", string.ascii_uppercase, rng)
    if kind == "lower":
        return _klass("[a-z]", string.ascii_lowercase, rng)
    if kind == "digit":
        return _klass(r"\d", string.digits, rng)
    if kind == "hex":
        return _klass("[0-9a-f]", "0123456789abcdef", rng)
    options = sorted(set(rng.sample(SYLLABLES, 3)))
    return f"(?:{'|'.join(options)})", lambda r: r.choice(options)


def formats_language(rng: random.Random) -> list[Segment]:
    """2-4 segments joined by literal separators, one of them maybe optional."""
    segments: list[Segment] = []
    for i in range(rng.randint(2, 4)):
        if i:
            sep = rng.choice("-_.:/#")
            segments.append((re.escape(sep), lambda r, s=sep: s))
        segments.append(_segment(rng))
    if rng.random() < 0.4:
        inner, make = _segment(rng)
        sep = rng.choice("-+")
        segments.append((f"(?:{re.escape(sep)}{inner})?",
                         lambda r, s=sep, m=make: s + m(r) if r.random() < 0.5 else ""))
    return segments


def words_language(rng: random.Random) -> list[Segment]:
    """Lowercase words with a fixed prefix and/or suffix and a bounded middle."""
    prefix, suffix = rng.choice(SYLLABLES), rng.choice(["ing", "ed", "ly", "er", "ous"])
    middle, make = _klass("[a-z]", string.ascii_lowercase, rng)
    parts: list[Segment] = [(prefix, lambda r: prefix), (middle, make)]
    if rng.random() < 0.7:
        parts.append((suffix, lambda r: suffix))
    return parts


LANGUAGES = {"formats": formats_language, "words": words_language}
ALPHABET = string.ascii_letters + string.digits + "-_.:/#+"


def _mutate(rng: random.Random, s: str) -> str:
    i = rng.randrange(len(s) + 1)
    op = rng.choice(["replace", "delete", "insert", "swapcase", "double"])
    if op == "replace" and s:
        i = min(i, len(s) - 1)
        return s[:i] + rng.choice(ALPHABET) + s[i + 1:]
    if op == "delete" and s:
        i = min(i, len(s) - 1)
        return s[:i] + s[i + 1:]
    if op == "swapcase" and s:
        return s.swapcase()
    if op == "double" and s:
        return s + s[-rng.randint(1, len(s)):]
    return s[:i] + rng.choice(ALPHABET) + s[i:]


def _examples(rng: random.Random, segments: list[Segment], gold: re.Pattern[str],
              n: int) -> tuple[list[str], list[str]]:
    positives: list[str] = []
    negatives: list[str] = []
    for _ in range(50 * n):
        if len(positives) < n:
            s = "".join(make(rng) for _, make in segments)
            if s not in positives:
                positives.append(s)
        elif len(negatives) < n:
            s = _mutate(rng, rng.choice(positives))
            if s and not gold.fullmatch(s) and s not in negatives:
                negatives.append(s)
        else:
            break
    return positives, negatives


class RegexDomain(Domain):
    """Write a regex from examples; see the module docstring."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.language = LANGUAGES[self.params["task"]]
        self.limits = manifest_limits(manifest)

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        for _ in range(50):  # redraw languages too small to hold back enough hidden strings
            segments = self.language(rng)
            gold = "".join(pattern for pattern, _ in segments)
            pos, neg = _examples(rng, segments, re.compile(gold), SHOWN + HIDDEN)
            if min(len(pos), len(neg)) >= SHOWN + HIDDEN // 2:
                break
        else:
            raise RuntimeError("no regex language with enough distinct examples in 50 tries")
        prompt = (
            "Write a Python regular expression that fully matches every string of the first list "
            "and none of the second. Hidden tests use more strings drawn the same way, checked "
            "with re.fullmatch, so generalise rather than list the examples.\n\n"
            f"Matches:\n{chr(10).join(pos[:SHOWN])}\n\nDoes not match:\n"
            f"{chr(10).join(neg[:SHOWN])}\n\nAnswer with the pattern alone in a single ```regex "
            "code block.")
        return {"prompt": prompt, "answer": gold, "gold": f"```regex\n{gold}\n```",
                "meta": {"language": "regex", "positives": pos, "negatives": neg}}

    def check(self, task: Task, completion: str) -> Verdict:
        from rlhub import ExecRequest

        pattern = code_of(completion, ("regex", "re", "regexp")).strip("\n")
        if not pattern.strip() or len(pattern) > MAX_PATTERN:
            return failed_verdict(f"Expected one non-empty pattern of at most {MAX_PATTERN} "
                                  f"characters in a ```regex block, found {len(pattern)} "
                                  "characters.")
        strings = task.meta["positives"] + task.meta["negatives"]
        nonce = fresh_nonce()
        job = {"pattern": pattern, "strings": strings, "nonce": nonce}
        result = self.services.sandboxes.run(ExecRequest(
            code=DRIVER, language="python", stdin=json.dumps(job), limits=self.limits))
        out = tagged_line(result.stdout, "rlhub_regex", nonce) if result.exit_code == 0 else None
        if out is None:
            return failed_verdict(f"Matching did not finish (status {result.status}); avoid "
                                  "nested quantifiers that backtrack catastrophically.",
                                  exec_summary(result))
        if "error" in out:
            return failed_verdict(f"The pattern does not compile: {out['error']}",
                                  exec_summary(result))
        n_pos = len(task.meta["positives"])
        failures = [None if got == (i < n_pos) else
                    f"{strings[i]!r} should {'' if i < n_pos else 'not '}match"
                    for i, got in enumerate(out["matches"])]
        return tests_verdict(failures, exec_summary(result))


def make(manifest: Manifest) -> RegexDomain:
    """Factory named by the ``code/regex-*`` manifests."""
    return RegexDomain(manifest)
