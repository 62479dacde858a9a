"""SQL exploration: query a generated shop database in the sandbox, then answer a question.

Difficulties (``params.difficulty``): ``easy`` asks about one table, ``medium`` needs GROUP BY or
one join, ``hard`` joins all three tables; ``params.show_schema: false`` hides the schema, so the
model must discover it (``sqlite_master``, ``PRAGMA table_info``). Each question's answer is
computed at generation time by running its reference query on the same database with the same job
code the sandbox runs; questions whose answer would be ambiguous (ties, empty results) are redrawn.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlhub import Task, Tool, tool

from rlhub_agentic import answers, shopdb
from rlhub_agentic.episode import AgenticDomain, EpisodeState, ToolInputError
from rlhub_agentic.jobs import sqldb
from rlhub_agentic.sandboxed import JobFailed, run_job

MAX_QUERY_CHARS = 4000
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]


@dataclass
class Question:
    """A question, its reference query, and how to read the answer from the query's rows.

    ``kind`` is ``scalar`` (the first cell), ``top`` (the first cell of the first row, which must
    beat the second row's score in column 2) or ``set`` (the first column of 1-6 rows).
    """

    text: str
    sql: str
    kind: str
    decimals: int | None = None


Template = Callable[[random.Random, shopdb.World, dict[str, str]], Question]


def _category(rng: random.Random, w: shopdb.World) -> str:
    return rng.choice(sorted({p[1] for p in w.products}))


def _city(rng: random.Random, w: shopdb.World) -> str:
    return rng.choice(sorted({c[1] for c in w.customers}))


def _orders_join(n: dict[str, str]) -> str:
    return (f"FROM {n['orders']} o JOIN {n['customers']} c ON o.{n['customer_id']} = c.id "
            f"JOIN {n['products']} p ON o.{n['product_id']} = p.id")


def easy_count(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    cat = _category(rng, w)
    return Question(f"How many products are in the category '{cat}'?",
                    f"SELECT COUNT(*) FROM {n['products']} WHERE {n['category']} = '{cat}'",
                    "scalar")


def easy_priciest(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    cat = _category(rng, w)
    return Question(f"What is the name of the most expensive product in the category '{cat}'?",
                    f"SELECT name, {n['price']} FROM {n['products']} "
                    f"WHERE {n['category']} = '{cat}' "
                    "ORDER BY 2 DESC LIMIT 2", "top")


def easy_city_count(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    city, year = _city(rng, w), rng.randint(2017, 2021)
    return Question(f"How many customers live in {city} and signed up in {year} or earlier?",
                    f"SELECT COUNT(*) FROM {n['customers']} WHERE {n['city']} = '{city}' "
                    f"AND {n['joined']} <= {year}", "scalar")


def easy_average(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    cat = _category(rng, w)
    return Question(f"What is the average price of the products in the category '{cat}'? "
                    "Round to 2 decimal places.",
                    f"SELECT AVG({n['price']}) FROM {n['products']} "
                    f"WHERE {n['category']} = '{cat}'",
                    "scalar", 2)


def easy_list(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    city = _city(rng, w)
    return Question(f"List the names of all customers who live in {city}.",
                    f"SELECT name FROM {n['customers']} WHERE {n['city']} = '{city}'", "set")


def medium_big_category(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    return Question("Which category has the most products?",
                    f"SELECT {n['category']}, COUNT(*) FROM {n['products']} GROUP BY 1 "
                    "ORDER BY 2 DESC LIMIT 2", "top")


def medium_big_city(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    return Question("Which city has the most customers?",
                    f"SELECT {n['city']}, COUNT(*) FROM {n['customers']} GROUP BY 1 "
                    "ORDER BY 2 DESC LIMIT 2", "top")


def medium_units(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    product = w.products[rng.choice(w.orders)[1] - 1][0]
    return Question(f"How many units of the product '{product}' were ordered in total?",
                    f"SELECT SUM(o.{n['quantity']}) FROM {n['orders']} o JOIN {n['products']} p "
                    f"ON o.{n['product_id']} = p.id WHERE p.name = '{product}'", "scalar")


def medium_month(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    year, month = rng.choice(w.orders)[3].split("-")[:2]
    return Question(f"How many orders were placed in {MONTHS[int(month) - 1]} {year}?",
                    f"SELECT COUNT(*) FROM {n['orders']} "
                    f"WHERE substr({n['date']}, 1, 7) = '{year}-{month}'", "scalar")


def medium_dear_category(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    return Question("Which category has the highest average product price?",
                    f"SELECT {n['category']}, AVG({n['price']}) FROM {n['products']} GROUP BY 1 "
                    "ORDER BY 2 DESC LIMIT 2", "top")


def hard_top_spender(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    return Question("Which customer spent the most money in total (quantity times price, summed "
                    "over all of their orders)? Give the customer's name.",
                    f"SELECT c.name, SUM(o.{n['quantity']} * p.{n['price']}) {_orders_join(n)} "
                    "GROUP BY c.id ORDER BY 2 DESC LIMIT 2", "top")


def hard_revenue(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    cat, year = _category(rng, w), rng.randint(2022, 2024)
    return Question(f"What was the total revenue (quantity times price) from products in the "
                    f"category '{cat}' ordered in {year}? Round to 2 decimal places.",
                    f"SELECT SUM(o.{n['quantity']} * p.{n['price']}) {_orders_join(n)} "
                    f"WHERE p.{n['category']} = '{cat}' AND substr(o.{n['date']}, 1, 4) = '{year}'",
                    "scalar", 2)


def hard_reach(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    city, cat = _city(rng, w), _category(rng, w)
    return Question(f"How many different customers from {city} ordered at least one product in "
                    f"the category '{cat}'?",
                    f"SELECT COUNT(DISTINCT c.id) {_orders_join(n)} "
                    f"WHERE c.{n['city']} = '{city}' AND p.{n['category']} = '{cat}'", "scalar")


def hard_never_ordered(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    return Question("List the names of the products that were never ordered.",
                    f"SELECT name FROM {n['products']} WHERE id NOT IN "
                    f"(SELECT {n['product_id']} FROM {n['orders']})", "set")


def hard_city_buyer(rng: random.Random, w: shopdb.World, n: dict[str, str]) -> Question:
    city = _city(rng, w)
    return Question(f"Which customer from {city} ordered the largest number of units in total?",
                    f"SELECT c.name, SUM(o.{n['quantity']}) {_orders_join(n)} "
                    f"WHERE c.{n['city']} = '{city}' GROUP BY c.id ORDER BY 2 DESC LIMIT 2", "top")


TEMPLATES: dict[str, list[Template]] = {
    "easy": [easy_count, easy_priciest, easy_city_count, easy_average, easy_list],
    "medium": [medium_big_category, medium_big_city, medium_units, medium_month,
               medium_dear_category],
    "hard": [hard_top_spender, hard_revenue, hard_reach, hard_never_ordered, hard_city_buyer],
}


def expected_answer(question: Question, rows: list[list[Any]]) -> dict[str, Any] | None:
    """The expected answer read from the reference query's rows, or None when it is ambiguous."""
    if not rows or rows[0][0] is None:
        return None
    if question.kind == "set":
        return {"type": "set", "value": [r[0] for r in rows]} if len(rows) <= 6 else None
    if question.kind == "top" and len(rows) > 1 and rows[0][1] == rows[1][1]:
        return None
    value = rows[0][0]
    if isinstance(value, str):
        return {"type": "text", "value": value}
    return answers.number_answer(float(value), question.decimals) if value else None


def draw_question(rng: random.Random, difficulty: str, script: str, world: shopdb.World,
                  names: dict[str, str]) -> tuple[Question, dict[str, Any]]:
    """A question with an unambiguous answer on this database (redrawn up to 50 times)."""
    conn = sqldb.build(script)
    templates = TEMPLATES[difficulty]
    for _ in range(50):
        question = rng.choice(templates)(rng, world, names)
        reply = sqldb.query(conn, question.sql, max_rows=7)
        if "error" in reply:
            raise RuntimeError(f"reference query failed: {reply['error']}: {question.sql}")
        expected = expected_answer(question, reply["rows"])
        if expected is not None:
            return question, expected
    raise RuntimeError(f"no unambiguous {difficulty} question found in 50 draws")


def render_rows(reply: dict[str, Any], max_rows: int) -> str:
    """Query results as a pipe-separated table with a row count."""
    if "error" in reply:
        return f"SQL error: {reply['error']}"
    if not reply["columns"]:
        return "The statement returned no columns."
    lines = [" | ".join(reply["columns"])]
    for row in reply["rows"]:
        lines.append(" | ".join("NULL" if v is None else f"{v:.10g}" if isinstance(v, float)
                                else str(v) for v in row))
    count = len(reply["rows"])
    if reply["more"]:
        lines.append(f"(showing the first {max_rows} rows; there are more: add a LIMIT, filters "
                     "or an aggregate)")
    else:
        lines.append(f"({count} row{'' if count == 1 else 's'})")
    return "\n".join(lines)


ANSWER_DOCS = {"scalar": "give only the number.", "top": "give only the name.",
               "set": "give every name, separated by commas, in any order."}
SQL_DOC = ("<sql>SELECT ...</sql> (or a ```sql fenced block, or <tool name=\"sql\">...</tool>): "
           "run one read-only SQLite query; you see at most {rows} result rows.")


class SqlDomain(AgenticDomain):
    """See the module docstring.

    Params: ``difficulty``, ``show_schema``, ``max_rows`` (rows shown per query), ``max_steps``
    (a query's budget, in thousands of SQLite VM instructions).
    """

    short_tags = ("sql",)
    fences = {"sql": "sql", "sqlite": "sql"}

    def __init__(self, manifest: Any):
        super().__init__(manifest)
        self.difficulty = self.params.get("difficulty", "easy")
        if self.difficulty not in TEMPLATES:
            raise ValueError(f"{self.id}: expected params.difficulty in {sorted(TEMPLATES)}, "
                             f"found {self.difficulty!r}")
        self.show_schema = bool(self.params.get("show_schema", True))
        self.max_rows = int(self.params.get("max_rows", 20))

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        names = shopdb.schema_names(rng)
        world = shopdb.make_world(rng, self.difficulty)
        db_script = shopdb.script(world, names)
        question, expected = draw_question(rng, self.difficulty, db_script, world, names)
        return {"prompt": self._prompt(question, names), "answer": expected,
                "gold": f"<answer>{answers.render(expected)}</answer>",
                "meta": {"script": db_script, "solution_sql": question.sql,
                         "difficulty": self.difficulty, "kind": question.kind}}

    def _prompt(self, question: Question, names: dict[str, str]) -> str:
        if self.show_schema:
            schema = "Its schema:\n" + shopdb.create_statements(names)
        else:
            schema = ("Its schema is not given: discover the tables and columns yourself (for "
                      "example SELECT name, sql FROM sqlite_master).")
        text = (f"You are exploring the SQLite database of a small online shop. {schema}\n\n"
                f"Question: {question.text}")
        return self.compose(text, [SQL_DOC.format(rows=self.max_rows)],
                              ANSWER_DOCS[question.kind])

    def tools(self) -> list[Tool]:
        return [tool(self.run_sql, name="sql", raw="query")]

    def run_sql(self, ctx: EpisodeState, query: str) -> str:
        """Run one read-only SQLite query against the shop's database (in the sandbox).

        query: one SELECT statement
        """
        state, query = ctx, query.strip()
        if not query:
            raise ToolInputError("the query was empty; write one SELECT statement.")
        if len(query) > MAX_QUERY_CHARS:
            raise ToolInputError(f"the query has {len(query)} characters; the limit is "
                                 f"{MAX_QUERY_CHARS}.")
        task: Task = state.task
        payload = {"script": task.meta["script"], "query": query, "max_rows": self.max_rows,
                   "max_steps": int(self.params.get("max_steps", 20000))}
        try:
            reply = run_job(self.services.sandboxes, "sqldb", payload, backend=self.params.get("sandbox_backend"))
        except JobFailed as exc:
            return f"error: {exc}"
        return render_rows(reply, self.max_rows)
