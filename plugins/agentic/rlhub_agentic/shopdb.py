"""A generated shop database (customers, products, orders) with per-task table and column names.

:func:`make_world` draws the rows from a seeded ``random.Random``; :func:`schema_names` draws the
names (``clients`` instead of ``customers``, ``unit_price`` instead of ``price``, ...), so a model
cannot answer from a memorised schema. :func:`script` renders the world as the SQL script that the
sandbox job (:mod:`rlhub_agentic.jobs.sqldb`) executes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

CATEGORIES = ["garden", "kitchen", "toys", "books", "sports", "office", "music", "tools", "pets"]
CITIES = ["Lyon", "Porto", "Leeds", "Graz", "Turin", "Ghent", "Bergen", "Krakow", "Malmo"]
FIRST = ["Ada", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas",
         "Keiko", "Luis", "Mira", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sami", "Tara"]
LAST = ["Adler", "Brandt", "Costa", "Dufour", "Eriksen", "Fischer", "Garcia", "Horvath", "Ivanov",
        "Jansen", "Kowalski", "Larsen", "Moreau", "Novak", "Olsen", "Petrov", "Rossi", "Silva"]
ADJECTIVES = ["Amber", "Brisk", "Cedar", "Dusky", "Ember", "Frost", "Golden", "Hazel", "Ivory",
              "Jade", "Lunar", "Misty", "Nimble", "Onyx", "Polar", "Rustic", "Solar", "Velvet"]
NOUNS = ["Lamp", "Kettle", "Rake", "Puzzle", "Novel", "Racket", "Stapler", "Ukulele", "Wrench",
         "Leash", "Mug", "Shovel", "Kite", "Atlas", "Helmet", "Binder", "Drum", "Chisel", "Collar"]

NAME_CHOICES: dict[str, list[str]] = {
    "customers": ["customers", "clients", "buyers"],
    "products": ["products", "items", "articles"],
    "orders": ["orders", "purchases", "sales"],
    "price": ["price", "unit_price", "list_price"],
    "category": ["category", "product_group", "kind"],
    "city": ["city", "home_city", "town"],
    "joined": ["signup_year", "joined_year", "member_since"],
    "quantity": ["quantity", "qty", "units"],
    "date": ["order_date", "placed_on", "ordered_at"],
}
SIZES = {"easy": (15, 12, 30), "medium": (24, 20, 60), "hard": (30, 25, 90)}


@dataclass
class World:
    """The rows of one shop: ``products`` (name, category, price), ``customers`` (name, city,
    joined year), ``orders`` (customer id, product id, quantity, ISO date); ids start at 1."""

    products: list[tuple[str, str, float]]
    customers: list[tuple[str, str, int]]
    orders: list[tuple[int, int, int, str]]


def schema_names(rng: random.Random) -> dict[str, str]:
    """One name per table and column role; foreign keys follow the tables' singular names."""
    names = {role: rng.choice(options) for role, options in NAME_CHOICES.items()}
    names["customer_id"] = names["customers"][:-1] + "_id"
    names["product_id"] = names["products"][:-1] + "_id"
    return names


def _unique_pairs(rng: random.Random, left: list[str], right: list[str], n: int) -> list[str]:
    pairs = [f"{a} {b}" for a in left for b in right]
    return rng.sample(pairs, n)


def make_world(rng: random.Random, size: str) -> World:
    """A shop of the given size (``easy``, ``medium`` or ``hard``)."""
    n_products, n_customers, n_orders = SIZES[size]
    categories = rng.sample(CATEGORIES, 4 if size == "easy" else 5)
    cities = rng.sample(CITIES, 4 if size == "easy" else 5)
    products = [(name, rng.choice(categories), round(rng.uniform(3, 250), 2))
                for name in _unique_pairs(rng, ADJECTIVES, NOUNS, n_products)]
    customers = [(name, rng.choice(cities), rng.randint(2015, 2023))
                 for name in _unique_pairs(rng, FIRST, LAST, n_customers)]
    orders = [(rng.randint(1, n_customers), rng.randint(1, n_products), rng.randint(1, 5),
               f"{rng.randint(2022, 2024)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
              for _ in range(n_orders)]
    return World(products, customers, orders)


def _values(rows: list[tuple[Any, ...]]) -> str:
    def literal(value: Any) -> str:
        if isinstance(value, str):
            return "'" + value.replace("'", "''") + "'"
        return repr(value)

    return ",\n  ".join(f"({i}, " + ", ".join(literal(v) for v in row) + ")"
                        for i, row in enumerate(rows, start=1))


def create_statements(n: dict[str, str]) -> str:
    """The CREATE TABLE statements for names ``n`` (shown to the model when the schema is given)."""
    return (f"CREATE TABLE {n['customers']} (id INTEGER PRIMARY KEY, name TEXT, {n['city']} TEXT, "
            f"{n['joined']} INTEGER);\n"
            f"CREATE TABLE {n['products']} (id INTEGER PRIMARY KEY, name TEXT, "
            f"{n['category']} TEXT, {n['price']} REAL);\n"
            f"CREATE TABLE {n['orders']} (id INTEGER PRIMARY KEY, {n['customer_id']} INTEGER "
            f"REFERENCES {n['customers']}(id), {n['product_id']} INTEGER REFERENCES "
            f"{n['products']}(id), {n['quantity']} INTEGER, {n['date']} TEXT);")


def script(world: World, n: dict[str, str]) -> str:
    """The SQL script that creates and fills the database."""
    return (create_statements(n) + "\n"
            f"INSERT INTO {n['customers']} VALUES\n  {_values(world.customers)};\n"
            f"INSERT INTO {n['products']} VALUES\n  {_values(world.products)};\n"
            f"INSERT INTO {n['orders']} VALUES\n  {_values(world.orders)};\n")
