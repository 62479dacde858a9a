"""Word problems for the calculator and unit-conversion domains.

Each template draws its numbers from a seeded ``random.Random`` and returns the question text and
the expected answer; answers that involve units are computed with
:func:`rlhub_agentic.calc.convert_value`, the code behind the ``convert`` tool, so the tool and the
answer key always agree.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from rlhub_agentic.answers import number_answer
from rlhub_agentic.calc import convert_value

Problem = tuple[str, dict[str, Any]]


def factory_yield(rng: random.Random) -> Problem:
    per_day, days, fail = rng.randint(1200, 9800), rng.randint(11, 47), rng.randint(2, 9) + 0.5
    value = per_day * days * (1 - fail / 100)
    return (f"A factory makes {per_day} widgets per day for {days} days, and {fail}% of all "
            "widgets fail inspection. How many widgets pass inspection? Round to the nearest "
            "whole number.",
            number_answer(value, 0))


def compound_interest(rng: random.Random) -> Problem:
    principal, rate, years = rng.randint(1500, 48000), rng.choice([2.5, 3.25, 4.1, 5.75, 6.2]), \
        rng.randint(4, 19)
    value = principal * (1 + rate / 100) ** years
    return (f"A deposit of {principal} dollars earns {rate}% interest per year, compounded yearly. "
            f"What is the balance after {years} years, in dollars? Round to 2 decimal places.",
            number_answer(value, 2))


def taxed_order(rng: random.Random) -> Problem:
    n1, p1, n2, p2 = rng.randint(3, 40), rng.randint(199, 8999) / 100, rng.randint(2, 30), \
        rng.randint(199, 8999) / 100
    tax = rng.choice([5.5, 7.25, 8.875, 19.0, 21.0])
    value = (n1 * p1 + n2 * p2) * (1 + tax / 100)
    return (f"An order has {n1} notebooks at ${p1:.2f} each and {n2} pens at ${p2:.2f} each. Sales "
            f"tax of {tax}% is added to the whole order. What is the total in dollars? Round to 2 "
            "decimal places.", number_answer(value, 2))


def sum_of_squares(rng: random.Random) -> Problem:
    low = rng.randint(10, 400)
    high = low + rng.randint(150, 3000)
    value = sum(i * i for i in range(low, high + 1))
    return (f"What is the sum of the squares of all integers from {low} to {high}, inclusive?",
            number_answer(float(value)))


def big_product(rng: random.Random) -> Problem:
    a, b, c = rng.randint(10**5, 10**6), rng.randint(10**4, 10**5), rng.randint(10**6, 10**7)
    return (f"Compute {a} * {b} - {c} * 7.", number_answer(float(a * b - c * 7)))


def runner_speed(rng: random.Random) -> Problem:
    miles, minutes = rng.randint(30, 262) / 10, rng.randint(25, 240)
    value = convert_value(miles, "mi", "km") / convert_value(minutes, "min", "h")
    return (f"A runner covered {miles} miles in {minutes} minutes. What was the average speed in "
            "kilometers per hour? Round to 2 decimal places.", number_answer(value, 2))


def scaled_recipe(rng: random.Random) -> Problem:
    cups, serves, people = rng.randint(3, 14) / 2, rng.choice([2, 4, 6]), rng.randint(3, 25)
    value = convert_value(cups * people / serves, "cup", "ml")
    return (f"A recipe for {serves} people needs {cups} US cups of milk. How many milliliters of "
            f"milk are needed for {people} people? Round to 1 decimal place.",
            number_answer(value, 1))


def parcel_weight(rng: random.Random) -> Problem:
    pounds, ounces, count = rng.randint(1, 60), rng.randint(1, 15), rng.randint(2, 12)
    value = count * (convert_value(pounds, "lb", "kg") + convert_value(ounces, "oz", "kg"))
    return (f"Each of {count} parcels weighs {pounds} pounds {ounces} ounces. What is their total "
            "weight in kilograms? Round to 3 decimal places.", number_answer(value, 3))


def oven_temperature(rng: random.Random) -> Problem:
    fahrenheit, drop = rng.randint(250, 500), rng.randint(10, 60)
    value = convert_value(fahrenheit, "f", "c") - drop
    return (f"An oven is set to {fahrenheit} degrees Fahrenheit, then lowered by {drop} degrees "
            "Celsius. What is the new setting in degrees Celsius? Round to 1 decimal place.",
            number_answer(value, 1))


def fuel_economy(rng: random.Random) -> Problem:
    gallons = rng.randint(15, 80) / 10
    value = convert_value(gallons, "gal", "l") / convert_value(100, "mi", "km") * 100
    return (f"A car uses {gallons} US gallons of fuel per 100 miles. How many liters does it use "
            "per 100 kilometers? Round to 2 decimal places.", number_answer(value, 2))


CALCULATOR: list[Callable[[random.Random], Problem]] = [
    factory_yield, compound_interest, taxed_order, sum_of_squares, big_product]
UNITS: list[Callable[[random.Random], Problem]] = [
    runner_speed, scaled_recipe, parcel_weight, oven_temperature, fuel_economy]
