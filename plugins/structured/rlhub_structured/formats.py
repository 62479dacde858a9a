"""Regex-constrained formats: dates, ISO timestamps, phone numbers, semantic versions,
identifiers and ISO 8601 durations.

Each task gives a value in loose prose and names a target format; the answer (``<answer>`` tag,
"Answer:" line, ``\\boxed{}`` or the last line, stripped of quotes and backticks) must fully match
the format's regular expression (component ``format``, matched on the linear-time engine) and
equal the converted value (component ``correct``). Feedback says which of the two failed and shows
the pattern. ``format-duration`` is v3: its pattern lost a look-ahead the engine cannot run.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict, final_answer
from rlhub.verifiers.patterns import compile_pattern
from rlhub_structured import vocab

Made = dict[str, Any]
SEMVER = (r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
          r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
          r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?")
DATE_TARGETS = {
    "YYYY-MM-DD (ISO 8601)": ("%Y-%m-%d", r"\d{4}-\d{2}-\d{2}"),
    "DD/MM/YYYY": ("%d/%m/%Y", r"\d{2}/\d{2}/\d{4}"),
    "MM/DD/YYYY": ("%m/%d/%Y", r"\d{2}/\d{2}/\d{4}"),
    "DD.MM.YYYY": ("%d.%m.%Y", r"\d{2}\.\d{2}\.\d{4}"),
}
MAX_ANSWER = 200  # longer answers cannot be in any of these formats; skip the regex
ISO_INSTANT = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:\d{2})"


def task(prompt_value: str, target: str, expected: str, pattern: str) -> Made:
    prompt = (f"{prompt_value} Target format: {target}. Answer with the converted value only, "
              "on a single line, with no other text.")
    return {"prompt": prompt, "answer": {"expected": expected, "pattern": pattern,
                                         "format": target}, "gold": expected}


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def spoken_date(rng: random.Random, d: dt.date) -> str:
    month = vocab.MONTHS[d.month - 1]
    return rng.choice([f"{month} {d.day}, {d.year}", f"{d.day} {month} {d.year}",
                       f"the {ordinal(d.day)} of {month} {d.year}"])


def random_date(rng: random.Random, first: int = 1950, last: int = 2035) -> dt.date:
    start = dt.date(first, 1, 1)
    return start + dt.timedelta(days=rng.randint(0, (dt.date(last, 12, 31) - start).days))


def make_date(rng: random.Random) -> Made:
    d = random_date(rng)
    target = rng.choice(sorted(DATE_TARGETS))
    fmt, pattern = DATE_TARGETS[target]
    return task(f"Rewrite the date {spoken_date(rng, d)}.", target, d.strftime(fmt), pattern)


def offset_text(minutes: int) -> str:
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def make_timestamp(rng: random.Random) -> Made:
    d = random_date(rng, 1990, 2035)
    t = dt.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))
    offset = rng.choice([-480, -300, -210, 0, 60, 120, 330, 540, 600])
    local = dt.datetime.combine(d, t, dt.timezone(dt.timedelta(minutes=offset)))
    clock = local.strftime("%I:%M:%S %p").lstrip("0")
    said = f"Rewrite the moment {clock} on {spoken_date(rng, d)}, local time UTC{offset_text(offset)}."
    if rng.random() < 0.5:
        expected = local.strftime("%Y-%m-%dT%H:%M:%S") + offset_text(offset)
        target = "ISO 8601 with the local time and its UTC offset, YYYY-MM-DDTHH:MM:SS+HH:MM"
    else:
        expected = local.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        target = "ISO 8601 converted to UTC with a Z suffix, YYYY-MM-DDTHH:MM:SSZ"
    return task(said, target, expected, ISO_INSTANT)


PHONE_TARGETS = {
    "E.164, +1 followed by ten digits": ("+1{a}{e}{l}", r"\+1[2-9]\d{2}[2-9]\d{6}"),
    "(XXX) XXX-XXXX": ("({a}) {e}-{l}", r"\([2-9]\d{2}\) [2-9]\d{2}-\d{4}"),
    "XXX-XXX-XXXX": ("{a}-{e}-{l}", r"[2-9]\d{2}-[2-9]\d{2}-\d{4}"),
}


def make_phone(rng: random.Random) -> Made:
    a, e, l = str(rng.randint(201, 989)), str(rng.randint(200, 999)), f"{rng.randint(0, 9999):04d}"
    loose = rng.choice([f"{a}.{e}.{l}", f"{a} {e} {l}", f"({a}){e}{l}", f"1 {a} {e}{l}",
                        f"{a}{e}{l}"])
    target = rng.choice(sorted(PHONE_TARGETS))
    template, pattern = PHONE_TARGETS[target]
    return task(f"Rewrite the US phone number {loose}.", target, template.format(a=a, e=e, l=l),
                pattern)


def make_semver(rng: random.Random) -> Made:
    major, minor, patch = rng.randint(0, 12), rng.randint(0, 30), rng.randint(0, 40)
    target = "a semantic version (SemVer 2.0.0), MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]"
    if rng.random() < 0.5:
        part = rng.choice(["major", "minor", "patch"])
        bumped = {"major": (major + 1, 0, 0), "minor": (major, minor + 1, 0),
                  "patch": (major, minor, patch + 1)}[part]
        return task(f"Give the version that follows {major}.{minor}.{patch} after a {part} "
                    f"release.", target, ".".join(map(str, bumped)), SEMVER)
    pre = rng.choice(["", f"alpha.{rng.randint(1, 9)}", f"rc.{rng.randint(1, 5)}", "beta"])
    build = rng.choice(["", f"build.{rng.randint(1, 999)}", f"{rng.randint(1, 99):03d}"])
    said = (f"Compose the version with major {major}, minor {minor}, patch {patch}, "
            f"pre-release {pre or '(none)'} and build metadata {build or '(none)'}.")
    expected = f"{major}.{minor}.{patch}" + (f"-{pre}" if pre else "") + (f"+{build}" if build else "")
    return task(said, target, expected, SEMVER)


IDENTIFIER_STYLES: dict[str, tuple[Callable[[list[str]], str], str]] = {
    "snake_case": (lambda w: "_".join(w), r"[a-z]+(?:_[a-z]+)*"),
    "SCREAMING_SNAKE_CASE": (lambda w: "_".join(w).upper(), r"[A-Z]+(?:_[A-Z]+)*"),
    "kebab-case": (lambda w: "-".join(w), r"[a-z]+(?:-[a-z]+)*"),
    "camelCase": (lambda w: w[0] + "".join(x.title() for x in w[1:]), r"[a-z]+(?:[A-Z][a-z]+)*"),
    "PascalCase": (lambda w: "".join(x.title() for x in w), r"(?:[A-Z][a-z]+)+"),
}


def make_identifier(rng: random.Random) -> Made:
    pool = list(vocab.WORDS) + [n.lower() for n in vocab.NOUNS]
    words = rng.sample(pool, rng.randint(2, 4))
    shown = " ".join(w.upper() if rng.random() < 0.3 else w for w in words)
    style = rng.choice(sorted(IDENTIFIER_STYLES))
    join, pattern = IDENTIFIER_STYLES[style]
    return task(f'Turn the phrase "{shown}" into an identifier.', style, join(words), pattern)


# No look-ahead (it cannot run on the linear-time engine): a clock part is H[M][S], M[S] or S.
_CLOCK = r"T(?:\d+H(?:\d+M)?(?:\d+S)?|\d+M(?:\d+S)?|\d+S)"
DURATION = rf"P(?:\d+D(?:{_CLOCK})?|{_CLOCK})"


def make_duration(rng: random.Random) -> Made:
    parts = {"days": rng.randint(0, 9), "hours": rng.randint(0, 23), "minutes": rng.randint(0, 59),
             "seconds": rng.choice([0, 0, rng.randint(1, 59)])}
    if not any(parts.values()):
        parts["minutes"] = 30
    said = [f"{n} {unit if n != 1 else unit[:-1]}" for unit, n in parts.items() if n]
    text = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
    clock = "".join(f"{parts[u]}{u[0].upper()}" for u in ("hours", "minutes", "seconds") if parts[u])
    expected = "P" + (f"{parts['days']}D" if parts["days"] else "") + (f"T{clock}" if clock else "")
    return task(f"Rewrite the duration {text}.", "an ISO 8601 duration such as P1DT2H30M (omit "
                "zero parts; no years, months or weeks)", expected, DURATION)


MAKERS: dict[str, Callable[[random.Random], Made]] = {
    "date": make_date, "timestamp": make_timestamp, "phone": make_phone, "semver": make_semver,
    "identifier": make_identifier, "duration": make_duration,
}


def answer_of(completion: str) -> str:
    """The committed answer, without surrounding quotes or backticks."""
    return final_answer(completion).strip().strip("`\"'").strip()


class FormatDomain(Domain):
    """Convert a value to a regex-defined format (``params.format`` names the maker)."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.format = self.params.get("format")
        if self.format not in MAKERS:
            raise ValueError(f"domain {self.id!r}: expected params.format in {sorted(MAKERS)}, "
                             f"found {self.format!r}")

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        return {**MAKERS[self.format](rng), "meta": {"format": self.format}}

    def check(self, task: Task, completion: str) -> Verdict:
        spec = task.answer
        got = answer_of(completion)
        shaped = len(got) <= MAX_ANSWER and compile_pattern(spec["pattern"]).fullmatch(got) \
            is not None
        correct = got == spec["expected"]
        if correct:
            return Verdict({"format": 1.0, "correct": 1.0}, True)
        if not shaped:
            why = (f"The answer {got[:80]!r} is not in the format {spec['format']} "
                   f"(it must fully match the pattern {spec['pattern']}).")
        else:
            why = f"The answer {got!r} has the right format but is not the requested value."
        return Verdict({"format": float(shaped), "correct": 0.0}, False, why)


def make(manifest: Manifest) -> FormatDomain:
    return FormatDomain(manifest)
