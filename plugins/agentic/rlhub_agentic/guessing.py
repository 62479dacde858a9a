"""Guessing dialogues with rule-based responders: a secret number, a secret person, a secret code.

* ``guess-number``: ``<guess>N</guess>`` is answered "higher", "lower" or "correct";
* ``twenty-questions`` (Guess-Who style): a table of people is shown; ``<ask>hair = red</ask>``,
  ``<ask>age > 40</ask>`` or ``<ask>eyes in blue, green</ask>`` is answered yes or no;
* ``mastermind``: ``<guess>ABCD</guess>`` is answered with exact and misplaced counts.

The secret is drawn from the task's seeded generator and kept in ``task.answer``; the responders are
pure functions of the task and the action, so every episode is deterministic.
"""

from __future__ import annotations

import operator
import random
import re
from collections import Counter
from typing import Any

from rlhub import Task, Tool, Verdict, tool

from rlhub_agentic import answers, shopdb
from rlhub_agentic.episode import AgenticDomain, EpisodeState, ToolInputError

ANSWER_AFTER_HIT = "now give your final answer with <answer>{}</answer>."


class GuessNumberDomain(AgenticDomain):
    """Find a secret integer in ``[params.low, params.high]`` from higher/lower hints."""

    short_tags = ("guess",)

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        low, high = int(self.params.get("low", 1)), int(self.params.get("high", 1000))
        secret = rng.randint(low, high)
        text = (f"I am thinking of an integer between {low} and {high}, inclusive. Guess it: after "
                "each guess I say whether the secret number is higher or lower.")
        prompt = self.compose(text, ["<guess>N</guess> (or <tool name=\"guess\">N</tool>): guess "
                                       "the integer N."], "give only the secret number.")
        return {"prompt": prompt, "answer": answers.number_answer(float(secret)),
                "gold": f"<answer>{secret}</answer>", "meta": {"low": low, "high": high}}

    def tools(self) -> list[Tool]:
        return [tool(self.respond, name="guess", raw="number")]

    def respond(self, ctx: EpisodeState, number: str) -> str:
        """Guess the secret integer; the reply says whether it is higher or lower.

        number: your guess
        """
        state, text = ctx, number
        guess = answers.parse_number(text)
        if guess is None or not guess.is_integer():
            raise ToolInputError(f"expected one integer, found {text.strip()[:40]!r}.")
        secret = int(state.task.answer["value"])
        if guess < secret:
            return f"The secret number is higher than {int(guess)}."
        if guess > secret:
            return f"The secret number is lower than {int(guess)}."
        return f"Correct: {secret} is the secret number; " + ANSWER_AFTER_HIT.format(secret)


# -- twenty questions (Guess Who) -----------------------------------------------------------------

PEOPLE_ATTRIBUTES: dict[str, list[Any]] = {
    "hair": ["black", "brown", "blond", "red", "gray"],
    "eyes": ["blue", "green", "brown"],
    "hat": ["yes", "no"],
    "glasses": ["yes", "no"],
}
NUMERIC = ("age", "height_cm")
_QUESTION = re.compile(r"^\s*([a-z_]+)\s*(=|==|!=|<=|>=|<|>|\bin\b)\s*(.+?)\s*\??\s*$", re.I)
_OPS = {"=": operator.eq, "==": operator.eq, "!=": operator.ne, "<": operator.lt,
        "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def make_people(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """``count`` people with distinct names and distinct attribute rows."""
    people: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    names = rng.sample(shopdb.FIRST, count)
    while len(people) < count:
        person = {attr: rng.choice(values) for attr, values in PEOPLE_ATTRIBUTES.items()}
        person["age"], person["height_cm"] = rng.randint(18, 80), rng.randint(150, 200)
        row = tuple(person.values())
        if row not in seen:
            seen.add(row)
            people.append({"name": names[len(people)], **person})
    return people


def people_table(people: list[dict[str, Any]]) -> str:
    columns = list(people[0])
    lines = [" | ".join(columns)] + [" | ".join(str(p[c]) for c in columns) for p in people]
    return "\n".join(lines)


def answer_question(person: dict[str, Any], text: str) -> bool:
    """Whether ``person`` satisfies the question ``text``; raise a helpful error if malformed."""
    match = _QUESTION.match(text)
    if not match:
        raise ToolInputError(f"expected 'ATTRIBUTE OP VALUE' (e.g. hair = red, age > 40, eyes in "
                             f"blue, green), found {text.strip()[:60]!r}.")
    attr, op, raw = match.group(1).lower(), match.group(2).lower(), match.group(3)
    if attr not in person:
        raise ToolInputError(f"unknown attribute {attr!r}; ask about {', '.join(person)}.")
    if op == "in":
        return answers.fold(str(person[attr])) in {answers.fold(v) for v in raw.split(",")}
    if attr in NUMERIC:
        value = answers.parse_number(raw)
        if value is None:
            raise ToolInputError(f"{attr} is a number; compare it with a number, not {raw!r}.")
        return bool(_OPS[op](person[attr], value))
    if op not in ("=", "==", "!="):
        raise ToolInputError(f"{attr} is not a number; use =, != or in.")
    return bool(_OPS[op](answers.fold(str(person[attr])), answers.fold(raw)))


class TwentyQuestionsDomain(AgenticDomain):
    """Identify the secret person of a shown table by yes/no questions about attributes."""

    short_tags = ("ask",)

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        people = make_people(rng, int(self.params.get("people", 16)))
        secret = rng.choice(people)
        text = ("One of these people is the secret person. Find out who by asking yes/no "
                f"questions about their attributes.\n{people_table(people)}")
        tool = ("<ask>ATTRIBUTE OP VALUE</ask> (or <tool name=\"ask\">...</tool>): ask whether the "
                "secret person matches, e.g. <ask>hair = red</ask>, <ask>age >= 40</ask>, "
                "<ask>eyes in blue, green</ask>; the reply is yes or no.")
        prompt = self.compose(text, [tool], "give only the person's name.")
        return {"prompt": prompt, "answer": {"type": "text", "value": secret["name"]},
                "gold": f"<answer>{secret['name']}</answer>",
                "meta": {"people": people}}

    def tools(self) -> list[Tool]:
        return [tool(self.respond, name="ask", raw="question")]

    def respond(self, ctx: EpisodeState, question: str) -> str:
        """Ask whether the secret person matches; the reply is yes or no.

        question: 'ATTRIBUTE OP VALUE', e.g. hair = red, age >= 40, eyes in blue, green
        """
        state, text = ctx, question
        secret = next(p for p in state.task.meta["people"]
                      if p["name"] == state.task.answer["value"])
        return "yes" if answer_question(secret, text) else "no"


# -- mastermind ------------------------------------------------------------------------------------

def normalize_code(text: str) -> str:
    """A code as upper-case letters only (``"a b, c d"`` -> ``"ABCD"``)."""
    return re.sub(r"[^A-Z]", "", text.upper())


def score_guess(secret: str, guess: str) -> tuple[int, int]:
    """Mastermind feedback: (right letter in the right place, right letter in the wrong place)."""
    exact = sum(a == b for a, b in zip(secret, guess))
    common = sum((Counter(secret) & Counter(guess)).values())
    return exact, common - exact


class MastermindDomain(AgenticDomain):
    """Find a secret code of ``params.length`` letters from the first ``params.colors`` letters."""

    short_tags = ("guess",)

    def __init__(self, manifest: Any):
        super().__init__(manifest)
        self.length = int(self.params.get("length", 4))
        self.letters = "ABCDEFGHIJ"[: int(self.params.get("colors", 6))]

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        secret = "".join(rng.choice(self.letters) for _ in range(self.length))
        text = (f"Find my secret code: {self.length} letters, each one of "
                f"{', '.join(self.letters)} "
                "(letters may repeat). After each guess I tell you how many letters are right and "
                "in the right place (exact) and how many are right but in the wrong place "
                "(misplaced).")
        tool = (f"<guess>{self.letters[:self.length].ljust(self.length, self.letters[0])}</guess> "
                "(or <tool name=\"guess\">...</tool>): try a code.")
        prompt = self.compose(text, [tool], "give only the code.")
        return {"prompt": prompt, "answer": {"type": "text", "value": secret},
                "gold": f"<answer>{secret}</answer>", "meta": {"letters": self.letters}}

    def tools(self) -> list[Tool]:
        return [tool(self.respond, name="guess", raw="code")]

    def respond(self, ctx: EpisodeState, code: str) -> str:
        """Try a code; the reply counts exact and misplaced letters.

        code: the letters of your guess
        """
        state, text = ctx, code
        guess = normalize_code(text)
        if len(guess) != self.length or any(ch not in self.letters for ch in guess):
            raise ToolInputError(f"expected {self.length} letters from {self.letters}, found "
                                 f"{text.strip()[:40]!r}.")
        secret = state.task.answer["value"]
        exact, misplaced = score_guess(secret, guess)
        if exact == self.length:
            return f"{guess}: {exact} exact, that is the code; " + ANSWER_AFTER_HIT.format(guess)
        return f"{guess}: {exact} exact, {misplaced} misplaced."

    def judge(self, task: Task, answer: str) -> Verdict:
        ok = normalize_code(answer) == task.answer["value"]
        return Verdict({"correct": float(ok)}, ok,
                       "" if ok else f"{answer[:40]!r} is not the secret code.")
