"""String families: letter shifts, word transforms, counting, parsing, run-length encoding and
roman numerals."""

from __future__ import annotations

import random

from rlhub_code.families.rand import PRINTABLE, fill, text, word, words
from rlhub_code.spec import FuncSpec


def caesar(rng: random.Random) -> FuncSpec:
    """Shift letters ``k`` places with wrap-around, keeping case and other characters."""
    k = rng.randint(1, 25)
    solution = fill('''
        def shift_letters(text: str) -> str:
            out = []
            for ch in text:
                if "a" <= ch <= "z":
                    out.append(chr((ord(ch) - 97 + __K__) % 26 + 97))
                elif "A" <= ch <= "Z":
                    out.append(chr((ord(ch) - 65 + __K__) % 26 + 65))
                else:
                    out.append(ch)
            return "".join(out)
    ''', k=k)
    cases = [(text(rng, 3, 14, PRINTABLE),) for _ in range(8)] + [("",), ("xyz XYZ",), ("7 a-Z",)]
    return FuncSpec("shift_letters", "def shift_letters(text: str) -> str", f"""
        Shift every ASCII letter of `text` {k} places forward in the alphabet, wrapping around
        from z to a, and keep its case (uppercase stays uppercase). Every other character
        (digits, spaces, punctuation) is left unchanged.""", solution, cases)


WORD_VARIANTS = {
    "reverse_each_word": (
        "Reverse the letters of every word of `sentence` and keep the words in their order. "
        "Words are separated by single spaces.",
        '''
        def reverse_each_word(sentence: str) -> str:
            return " ".join(w[::-1] for w in sentence.split(" "))
        '''),
    "dedupe_words": (
        "Return `sentence` with every repeated word removed, keeping only the first occurrence; "
        "two words are the same when they are equal ignoring case. Words are separated by single "
        "spaces and the kept words keep their original spelling.",
        '''
        def dedupe_words(sentence: str) -> str:
            seen, kept = set(), []
            for w in sentence.split(" "):
                if w.lower() not in seen:
                    seen.add(w.lower())
                    kept.append(w)
            return " ".join(kept)
        '''),
    "capitalize_long_words": (
        "Uppercase every word of `sentence` that has at least __L__ characters and lowercase "
        "every other word. Words are separated by single spaces.",
        '''
        def capitalize_long_words(sentence: str) -> str:
            return " ".join(w.upper() if len(w) >= __L__ else w.lower()
                            for w in sentence.split(" "))
        '''),
}


def word_transform(rng: random.Random) -> FuncSpec:
    """One of several word-level rewrites of a space-separated sentence."""
    name = rng.choice(sorted(WORD_VARIANTS))
    description, template = WORD_VARIANTS[name]
    length = rng.randint(3, 6)
    pool = [word(rng).capitalize() if rng.random() < 0.3 else word(rng) for _ in range(6)]
    cases = [(" ".join(words(rng, 2, 8, pool)),) for _ in range(8)] + [("a",), ("Ab ab AB",)]
    return FuncSpec(name, f"def {name}(sentence: str) -> str",
                    description.replace("__L__", str(length)), fill(template, l=length), cases)


COUNT_VARIANTS = {
    "palindrome": ("reads the same forwards and backwards", "w == w[::-1]"),
    "vowel_start": ("starts with a vowel (a, e, i, o or u)", "w[0] in 'aeiou'"),
    "distinct_letters": ("has no repeated letter", "len(set(w)) == len(w)"),
}


def count_words(rng: random.Random) -> FuncSpec:
    """Count the words at least ``n`` long that have a property."""
    prop = rng.choice(sorted(COUNT_VARIANTS))
    phrase, test = COUNT_VARIANTS[prop]
    minimum = rng.randint(2, 5)
    solution = fill(f'''
        def count_words(words: list[str]) -> int:
            return sum(1 for w in words if len(w) >= __N__ and {test})
    ''', n=minimum)
    extra = ["abba", "level", "aba", "otto", "anna", "ele", "abcba", "oxo", "iti"]
    cases = [(words(rng, 0, 9, [word(rng) for _ in range(5)] + extra),) for _ in range(9)]
    return FuncSpec("count_words", "def count_words(words: list[str]) -> int", f"""
        Return how many strings in `words` have at least {minimum} characters and
        {phrase}. All words are lowercase.""", solution, cases + [([],)])


def parse_pairs(rng: random.Random) -> FuncSpec:
    """Parse ``key=value`` records with random separators into a dict, summing duplicates."""
    sep, eq = rng.choice([(";", "="), (",", ":"), ("&", "="), ("|", "->")])
    solution = fill('''
        def parse_pairs(text: str) -> dict[str, int]:
            totals: dict[str, int] = {}
            for item in text.split(__SEP__):
                item = item.strip()
                if not item:
                    continue
                key, _, value = item.partition(__EQ__)
                key = key.strip()
                totals[key] = totals.get(key, 0) + int(value.strip())
            return totals
    ''', sep=sep, eq=eq)
    keys = [word(rng, 1, 2) for _ in range(4)]

    def record() -> str:
        items = [f"{rng.choice(keys)}{' ' * rng.randint(0, 1)}{eq}{rng.randint(-20, 99)}"
                 for _ in range(rng.randint(1, 6))]
        return sep.join(items) + (sep if rng.random() < 0.3 else "")

    cases = [(record(),) for _ in range(9)] + [("",)]
    return FuncSpec("parse_pairs", "def parse_pairs(text: str) -> dict[str, int]", f"""
        `text` holds records `key{eq}value` separated by `{sep}`; values are integers (possibly
        negative). Spaces around keys and values are ignored, and empty records (for instance
        after a trailing `{sep}`) are skipped. Return a dict from each key to the sum of its
        values, with keys in order of first appearance.""", solution, cases)


RLE_VARIANTS = {
    "rle_encode": ("Run-length encode `text`: each maximal run of one character becomes the run "
                   "length followed by the character (`'aaab'` becomes `'3a1b'`).", '''
        def rle_encode(text: str) -> str:
            out, i = [], 0
            while i < len(text):
                j = i
                while j < len(text) and text[j] == text[i]:
                    j += 1
                out.append(f"{j - i}{text[i]}")
                i = j
            return "".join(out)
        '''),
    "rle_decode": ("Decode a run-length encoding: `code` is a sequence of a positive count (one "
                   "or more digits) followed by one non-digit character, e.g. `'3a12b'` decodes "
                   "to three `a` then twelve `b`.", '''
        def rle_decode(code: str) -> str:
            out, count = [], ""
            for ch in code:
                if ch.isdigit():
                    count += ch
                else:
                    out.append(ch * int(count))
                    count = ""
            return "".join(out)
        '''),
}


def _runs(rng: random.Random) -> str:
    return "".join(rng.choice("abcxyz.-") * rng.randint(1, 13) for _ in range(rng.randint(0, 6)))


def _rle(text_: str) -> str:
    out, i = [], 0
    while i < len(text_):
        j = i
        while j < len(text_) and text_[j] == text_[i]:
            j += 1
        out.append(f"{j - i}{text_[i]}")
        i = j
    return "".join(out)


def run_length(rng: random.Random) -> FuncSpec:
    """Run-length encode or decode."""
    name = rng.choice(sorted(RLE_VARIANTS))
    description, template = RLE_VARIANTS[name]
    raw = [_runs(rng) for _ in range(9)] + ["", "q"]
    cases = [(r,) for r in raw] if name == "rle_encode" else [(_rle(r),) for r in raw]
    return FuncSpec(name, f"def {name}({'text' if name == 'rle_encode' else 'code'}: str) -> str",
                    description, fill(template), cases)


ROMAN_TO = '''
    def to_roman(n: int) -> str:
        table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                 (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
        out = []
        for value, letters in table:
            while n >= value:
                out.append(letters)
                n -= value
        return "".join(out)
'''
ROMAN_FROM = '''
    def from_roman(s: str) -> int:
        values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
        total = 0
        for i, ch in enumerate(s):
            if i + 1 < len(s) and values[ch] < values[s[i + 1]]:
                total -= values[ch]
            else:
                total += values[ch]
        return total
'''


def roman(rng: random.Random) -> FuncSpec:
    """Convert to or from standard roman numerals (1..3999)."""
    numbers = [rng.randint(1, 3999) for _ in range(8)] + [4, 9, 3999]
    if rng.random() < 0.5:
        return FuncSpec("to_roman", "def to_roman(n: int) -> str", """
            Return the standard (subtractive) roman numeral for `n`, 1 <= n <= 3999, in
            uppercase: 4 is `'IV'`, 1994 is `'MCMXCIV'`.""", fill(ROMAN_TO),
                        [(n,) for n in numbers])
    encode = FuncSpec("to_roman", "", "", fill(ROMAN_TO), []).reference()
    return FuncSpec("from_roman", "def from_roman(s: str) -> int", """
        Return the integer value of the standard (subtractive) uppercase roman numeral `s`
        (between 1 and 3999): `'IV'` is 4, `'MCMXCIV'` is 1994.""", fill(ROMAN_FROM),
                    [(encode(n),) for n in numbers])
