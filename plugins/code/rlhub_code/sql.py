"""SQL over generated SQLite databases, judged by result set.

Every task has one schema and three databases with different random rows: the prompt shows the
schema and a few rows of the first; the candidate's single SELECT runs on all three in the
sandbox, through a driver that builds each database in memory and allows only reads (an SQLite
authorizer denies ATTACH, PRAGMA, VACUUM and every write). The gold query's result, computed here,
is the reference: rows are compared as a multiset unless the question asks for an order, numbers
are compared to 6 decimals, and column names do not matter.
"""

from __future__ import annotations

import json
import random
import sqlite3
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict, code_of, fresh_nonce, tagged_line
from rlhub_code.families.rand import word
from rlhub_code.sqlq import QUESTIONS, SCHEMA, Question
from rlhub_code.verdicts import exec_summary, failed_verdict, manifest_limits, tests_verdict

DATABASES = 3
SHOWN_ROWS = 3
MAX_ROWS = 2000

DRIVER = r'''
import json, sqlite3, sys

ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
           getattr(sqlite3, "SQLITE_RECURSIVE", 33)}


def authorize(action, *args):
    return sqlite3.SQLITE_OK if action in ALLOWED else sqlite3.SQLITE_DENY


def plain(value):
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return round(float(value), 6)
    return value.hex() if isinstance(value, bytes) else str(value)


def run(script, query, max_rows):
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)
    conn.set_authorizer(authorize)
    try:
        cursor = conn.execute(query)
        rows = cursor.fetchmany(max_rows + 1)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:400]}
    if len(rows) > max_rows:
        return {"error": f"the query returned more than {max_rows} rows"}
    return {"rows": [[plain(v) for v in row] for row in rows]}


job = json.loads(sys.stdin.read())
results = [run(script, job["query"], job["max_rows"]) for script in job["databases"]]
sys.stdout.write("\n" + json.dumps({"rlhub_sql": results, "nonce": job["nonce"]}) + "\n")
'''


def _plain(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return round(float(value), 6)
    return value


def run_local(script: str, query: str) -> list[list[Any]]:
    """Our own (gold) query on a database built from ``script``, in this process."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(script)
        return [[_plain(v) for v in row] for row in conn.execute(query).fetchall()]
    finally:
        conn.close()


def same_rows(got: list[list[Any]], want: list[list[Any]], ordered: bool) -> bool:
    """Result sets equal as lists (``ordered``) or as multisets of rows."""
    if ordered:
        return got == want
    return sorted(map(json.dumps, got)) == sorted(map(json.dumps, want))


def _db_script(rng: random.Random) -> str:
    rows = SCHEMA.rows(rng, word)
    inserts = [f"INSERT INTO {table} VALUES ({', '.join(map(_sql_literal, row))});"
               for table, table_rows in rows.items() for row in table_rows]
    return SCHEMA.ddl + "\n" + "\n".join(inserts) + "\n"


def _sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def _shown_rows(script: str) -> str:
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)
    parts = []
    for table in SCHEMA.tables:
        rows = conn.execute(f"SELECT * FROM {table} LIMIT {SHOWN_ROWS}").fetchall()
        parts.append(f"-- {table}: " + "; ".join(map(repr, rows)))
    conn.close()
    return "\n".join(parts)


def _informative(question: Question, scripts: list[str]) -> bool:
    results = [run_local(s, question.gold) for s in scripts]
    return bool(results[0]) and sum(bool(r) for r in results) >= 2 \
        and len({json.dumps(r) for r in results}) > 1


class SqlDomain(Domain):
    """Answer a question with one SQLite SELECT; see the module docstring."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.questions = QUESTIONS[self.params["task"]]
        self.limits = manifest_limits(manifest)

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        for _ in range(50):
            question = rng.choice(self.questions)(rng)
            scripts = [_db_script(rng) for _ in range(DATABASES)]
            if _informative(question, scripts):
                break
        else:
            raise RuntimeError("no question with informative results in 50 tries")
        order = ("The order of rows matters." if question.ordered else
                 "Rows may come in any order.")
        prompt = (f"A SQLite database has this schema:\n\n```sql\n{SCHEMA.ddl}```\n\nSample rows "
                  f"(the real tables have more):\n{_shown_rows(scripts[0])}\n\n"
                  f"Question: {question.text}\n\nWrite one SQLite SELECT statement that answers "
                  f"it on any database with this schema. {order} Column names do not matter, "
                  "column order does; numbers are compared to 6 decimal places. Answer with the "
                  "query in a single ```sql code block.")
        expected = [run_local(s, question.gold) for s in scripts]
        return {"prompt": prompt, "answer": None, "gold": f"```sql\n{question.gold}\n```",
                "meta": {"language": "sql", "databases": scripts, "expected": expected,
                         "ordered": question.ordered}}

    def check(self, task: Task, completion: str) -> Verdict:
        from rlhub import ExecRequest

        query = code_of(completion, ("sql", "sqlite")).strip()
        nonce = fresh_nonce()
        job = {"databases": task.meta["databases"], "query": query, "max_rows": MAX_ROWS,
               "nonce": nonce}
        result = self.services.sandboxes.run(ExecRequest(
            code=DRIVER, language="python", stdin=json.dumps(job), limits=self.limits))
        results = tagged_line(result.stdout, "rlhub_sql", nonce) if result.exit_code == 0 else None
        if results is None:
            return failed_verdict(f"The query did not finish (status {result.status}).",
                                  exec_summary(result))
        failures = [_db_failure(i, got, want, task.meta["ordered"])
                    for i, (got, want) in enumerate(zip(results, task.meta["expected"]))]
        return tests_verdict(failures, exec_summary(result))


def _db_failure(index: int, got: dict[str, Any], want: list[list[Any]],
                ordered: bool) -> str | None:
    where = "the sample database" if index == 0 else f"hidden database {index}"
    if "error" in got:
        return f"on {where} the query failed: {got['error']}"
    rows = got["rows"]
    if same_rows(rows, want, ordered):
        return None
    message = f"on {where} the query returned {len(rows)} rows, expected {len(want)}"
    if index == 0:  # the sample database is in the prompt; hidden ones stay hidden
        message += f"; first rows returned {json.dumps(rows[:3])}, expected {json.dumps(want[:3])}"
    return message


def make(manifest: Manifest) -> SqlDomain:
    """Factory named by the ``code/sql-*`` manifests."""
    return SqlDomain(manifest)
