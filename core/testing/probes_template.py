"""The ``template`` probe class: text built from the prompt's visible parts, ignoring the task.

A policy reads its prompt, and it can learn to copy what the prompt shows (quoted words, required
phrases, the numbers it names) and pad the rest to whatever length, sentence and paragraph counts
a content check asks for. On four instruction-following domains the topic word copied from the
prompt, then numbered tokens cut into three "sentences", earned the full reward on every task. So
each template here:

* opens with the quoted phrase the prompt asks to start with (else its first), then the rest of
  its quoted words, and ends with the one it asks to end with (else its last), so a required
  opening or closing phrase is met;
* pads with filler to more words than the largest count the prompt names (at least 60), in
  sentences of eight tokens and as many paragraphs as the largest small count (2-8) it names,
  separated by blank lines or by ``***`` lines;
* fills with numbered tokens (``w1 w2 ...``), in plain, lowercase and capitals, with the
  prompt's own words in a fixed shuffled order, or with word salad: English function words
  alternating with everyday words the prompt does not use (it meets a share of function words,
  many distinct words and few copied ones, and answers nothing).

A template does not do the task, so it must not pass and must earn the range minimum, unless the
task's own final answer appears in it (then it may pass, but earns no partial credit either). The
class runs on every one-shot domain but code domains (the code probes cover them), judged ones
(the judge probes) and games (the players probe).
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Iterator, Sequence

from rlhub.domain import Domain
from rlhub.task import Task
from rlhub.testing.answer_space import answer_slot
from rlhub.testing.probes import Probe, ProbeReport, _norm, cannot_run, is_game, judge_probe

_QUOTED = re.compile(r"\"([^\"\n]{1,80})\"")
_NUMBER = re.compile(r"(?<![\w.])(\d{1,4})(?![\w.])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
SENTENCE = 8
FUNCTION = ("the", "of", "and", "a", "to", "in", "with", "for", "on", "at", "by", "from")
VOCABULARY = tuple("""
    garden river window morning letter market winter island bridge candle valley harbor meadow
    lantern kitchen orchard village forest mountain station library painting blanket ribbon
    basket castle desert engine feather glacier hammer jacket kettle ladder marble needle
    pebble pillow puzzle rocket saddle shovel statue thunder tunnel violin wagon whistle
    anchor bottle button cabinet carpet cotton curtain diamond dolphin eagle fabric fountain
    gravel helmet honey insect jungle lemon magnet mirror monkey museum napkin ocean parrot
    pencil pepper planet pocket potato prairie rabbit rainbow saucer shadow silver spider
    sponge stable summer sunset tiger timber tomato tractor trumpet turtle umbrella velvet
    walnut weather willow wizard yellow zebra acorn almond barrel beacon biscuit bucket cactus
    canyon cereal chimney cliff coffee comet copper crystal dragon drum falcon ferry garlic
    ginger goose granite harvest hedge kitten lobster mango maple melon mushroom nectar olive
    oyster palace peach pigeon pirate quartz quilt raven salmon sandal scarf shell sparrow
    """.split())
SEPARATORS = {"blank lines": "\n\n", "*** lines": "\n***\n"}


def required(prompt: str, quoted: list[str], verbs: str) -> str | None:
    """The quoted phrase the prompt asks to ``verbs`` with ("end your response with "...")."""
    for phrase in quoted:
        if re.search(rf"\b(?:{verbs})\w*\s+(?:\S+\s+){{0,4}}with\s+\"{re.escape(phrase)}\"",
                     prompt, re.IGNORECASE):
            return phrase
    return None


def shape(prompt: str) -> tuple[list[str], int, int]:
    """``(quoted phrases, opening first and closing last, words to write, paragraphs)``."""
    quoted = list(dict.fromkeys(_QUOTED.findall(prompt)))[:8]
    if quoted:
        first = required(prompt, quoted, "start|begin|open") or quoted[0]
        last = required(prompt, quoted, "end|finish|close") or quoted[-1]
        middle = [q for q in quoted if q not in (first, last)]
        quoted = [first, *middle, last] if last != first else [first, *middle]
    counts = [int(n) for n in _NUMBER.findall(prompt) if 1 <= int(n) <= 2000]
    words = min(1200, max(60, int(max(counts, default=40) * 1.25) + 10))
    paragraphs = max([c for c in counts if 2 <= c <= 8], default=3)
    return quoted, words, paragraphs


def numbered() -> Iterator[str]:
    return (f"w{i}" for i in itertools.count(1))


def prompt_words(prompt: str) -> Iterator[str]:
    words = list(dict.fromkeys(_WORD.findall(prompt))) or ["word"]
    random.Random(len(words)).shuffle(words)
    return itertools.cycle(words)


def salad(prompt: str) -> Iterator[str]:
    """Function words alternating with :data:`VOCABULARY` words the prompt does not use."""
    used = {w.casefold() for w in _WORD.findall(prompt)}
    words = [w for w in VOCABULARY if w not in used]
    return (FUNCTION[i // 2 % len(FUNCTION)] if i % 2 == 0 else words[i // 2 % len(words)]
            for i in itertools.count())


def layout(quoted: list[str], filler: Iterator[str], words: int, paragraphs: int,
           separator: str) -> str:
    """The quoted phrases, then ``words`` filler tokens in sentences and paragraphs."""
    tokens = [*quoted[:1], *" ".join(quoted[1:-1]).split(), *itertools.islice(filler, words)]
    sentences = [" ".join(tokens[i:i + SENTENCE]) + "." for i in range(0, len(tokens), SENTENCE)]
    per = math.ceil(len(sentences) / paragraphs)
    text = separator.join(" ".join(sentences[i:i + per]) for i in range(0, len(sentences), per))
    return f"{text} {quoted[-1]}" if len(quoted) > 1 else text


def template_probes(task: Task) -> list[Probe]:
    """The templates of ``task`` (see the module docstring)."""
    prompt = task.prompt_text()
    quoted, words, paragraphs = shape(prompt)
    slot = answer_slot(task.gold)
    probes = []
    for (sep_name, sep), (kind, make) in itertools.product(
            SEPARATORS.items(), (("numbered filler", numbered),
                                 ("prompt words", lambda: prompt_words(prompt)),
                                 ("word salad", lambda: salad(prompt)))):
        text = layout(quoted, make(), words, paragraphs, sep)
        cases = {"": text} if kind != "numbered filler" else {
            "": text, ", lowercase": text.lower(), ", capitals": text.upper()}
        for case, variant in cases.items():
            strict = slot is None or _norm(slot.answer) not in _norm(variant)
            probes.append(Probe(f"{kind}, {sep_name}{case}", variant, strict))
    return probes


ELSEWHERE = {"code": "a code domain: the code probes cover it",
             "judge": "a judged domain: the judge probes cover it"}


def check_template(domain: Domain, tasks: Sequence[Task], space: Sequence[Task]) -> ProbeReport:
    """The ``template`` class on the first two tasks."""
    if is_game(domain):
        return cannot_run("template", "a game: the players probe covers it")
    for tag, reason in ELSEWHERE.items():
        if tag in domain.manifest.tags:
            return cannot_run("template", reason)
    report = ProbeReport("template")
    for task in tasks[:2]:
        for probe in template_probes(task):
            judge_probe(domain, task, probe, report)
    return report
