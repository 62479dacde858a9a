"""Number families: number-theory functions, base conversion, date arithmetic."""

from __future__ import annotations

import datetime
import random

from rlhub_code.families.rand import fill
from rlhub_code.spec import FuncSpec

NUMBER_THEORY = {
    "divisor_sum": ("the sum of the proper divisors of `n` (every positive divisor except `n` "
                    "itself; 0 for n = 1)", '''
        def divisor_sum(n: int) -> int:
            total, d = 0, 1
            while d * d <= n:
                if n % d == 0:
                    total += d + (n // d if d * d != n else 0)
                d += 1
            return total - n
        ''', (1, 5000)),
    "totient": ("Euler's totient of `n`: how many integers in 1..n are coprime to `n`", '''
        def totient(n: int) -> int:
            result, p, m = n, 2, n
            while p * p <= m:
                if m % p == 0:
                    while m % p == 0:
                        m //= p
                    result -= result // p
                p += 1
            if m > 1:
                result -= result // m
            return result
        ''', (1, 5000)),
    "count_primes": ("how many primes are <= `n`", '''
        def count_primes(n: int) -> int:
            if n < 2:
                return 0
            sieve = [True] * (n + 1)
            sieve[0] = sieve[1] = False
            for p in range(2, int(n ** 0.5) + 1):
                if sieve[p]:
                    sieve[p * p::p] = [False] * len(range(p * p, n + 1, p))
            return sum(sieve)
        ''', (0, 3000)),
    "digital_root": ("the digital root of `n` written in base __B__: repeatedly replace the "
                     "number by the sum of its base-__B__ digits until it has a single digit", '''
        def digital_root(n: int) -> int:
            while n >= __B__:
                total = 0
                while n:
                    total += n % __B__
                    n //= __B__
                n = total
            return n
        ''', (0, 10 ** 6)),
}


def number_theory(rng: random.Random) -> FuncSpec:
    """One of several classic integer functions."""
    name = rng.choice(sorted(NUMBER_THEORY))
    phrase, template, (lo, hi) = NUMBER_THEORY[name]
    base = rng.randint(3, 16)
    cases = [(rng.randint(lo, hi),) for _ in range(9)] + [(lo,), (lo + 1,)]
    return FuncSpec(name, f"def {name}(n: int) -> int",
                    f"Return {phrase.replace('__B__', str(base))}. `n` is between {lo} and {hi}.",
                    fill(template, b=base), cases)


DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
TO_BASE = '''
    def to_base(n: int) -> str:
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"
        if n == 0:
            return "0"
        sign, n = ("-", -n) if n < 0 else ("", n)
        out = []
        while n:
            n, r = divmod(n, __B__)
            out.append(digits[r])
        return sign + "".join(reversed(out))
'''
FROM_BASE = '''
    def from_base(s: str) -> int:
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"
        sign, s = (-1, s[1:]) if s.startswith("-") else (1, s)
        value = 0
        for ch in s:
            value = value * __B__ + digits.index(ch)
        return sign * value
'''


def base_conversion(rng: random.Random) -> FuncSpec:
    """Write an integer in base ``b``, or read one back."""
    base = rng.choice([2, 3, 5, 7, 8, 12, 16, 20, 36])
    numbers = [rng.randint(-10 ** 6, 10 ** 6) for _ in range(8)] + [0, base, -1]
    rule = ("Digits above 9 are the lowercase letters a, b, c, ... A negative number is "
            "written with a leading '-'.")
    to_base = fill(TO_BASE, b=base)
    if rng.random() < 0.5:
        return FuncSpec("to_base", "def to_base(n: int) -> str", f"""
            Return the integer `n` written in base {base}, without leading zeros (0 is "0").
            {rule}""", to_base, [(n,) for n in numbers])
    encode = FuncSpec("to_base", "", "", to_base, []).reference()
    return FuncSpec("from_base", "def from_base(s: str) -> int", f"""
        `s` is an integer written in base {base} with lowercase digits. Return its value.
        {rule}""", fill(FROM_BASE, b=base), [(encode(n),) for n in numbers])


DATE_VARIANTS = {
    "add_days": ("def add_days(date: str, days: int) -> str",
                 "Return the ISO date (`YYYY-MM-DD`) that is `days` days after the ISO date "
                 "`date` (`days` may be negative).", '''
        import datetime


        def add_days(date: str, days: int) -> str:
            return (datetime.date.fromisoformat(date) + datetime.timedelta(days=days)).isoformat()
        '''),
    "days_between": ("def days_between(a: str, b: str) -> int",
                     "Return the number of days from ISO date `a` to ISO date `b` (`YYYY-MM-DD`);"
                     " negative when `b` is earlier.", '''
        import datetime


        def days_between(a: str, b: str) -> int:
            return (datetime.date.fromisoformat(b) - datetime.date.fromisoformat(a)).days
        '''),
    "weekday_name": ("def weekday_name(date: str) -> str",
                     "Return the English weekday name (`'Monday'` ... `'Sunday'`) of the ISO date "
                     "`date` (`YYYY-MM-DD`) in the proleptic Gregorian calendar.", '''
        import datetime


        def weekday_name(date: str) -> str:
            names = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
            return names[datetime.date.fromisoformat(date).weekday()]
        '''),
}


def _date(rng: random.Random) -> str:
    start = datetime.date(1900, 1, 1).toordinal()
    return datetime.date.fromordinal(rng.randint(start, start + 200 * 365)).isoformat()


def dates(rng: random.Random) -> FuncSpec:
    """Calendar arithmetic on ISO dates, leap years included."""
    name = rng.choice(sorted(DATE_VARIANTS))
    signature, description, template = DATE_VARIANTS[name]
    if name == "add_days":
        cases = [(_date(rng), rng.randint(-800, 800)) for _ in range(9)] + [("2000-02-28", 1)]
    elif name == "days_between":
        cases = [(_date(rng), _date(rng)) for _ in range(9)] + [("1900-02-28", "1900-03-01")]
    else:
        cases = [(_date(rng),) for _ in range(9)] + [("2000-02-29",)]
    return FuncSpec(name, signature, description, fill(template), cases)
