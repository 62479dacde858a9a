"""Sandbox job: build a task's sqlite database from its script, run one query read-only.

Request (stdin JSON): ``{"script": "CREATE TABLE ...; INSERT ...", "query": "SELECT ...",
"max_rows": 20, "max_steps": 200000}``. Reply (last stdout line): ``{"rlhub_job": {"columns":
[...], "rows": [[...]], "more": bool}}`` or ``{"rlhub_job": {"error": "..."}}``.

Read-only is enforced three ways: ``PRAGMA query_only``, an authorizer that allows only reads
(SELECT, column reads, functions, recursive CTEs and a few schema PRAGMAs), and one statement
per query. A progress handler stops runaway queries after ``max_steps`` VM callbacks.
"""

import json
import sqlite3
import sys

READ_PRAGMAS = {"table_info", "table_xinfo", "table_list", "index_list", "index_info",
                "foreign_key_list"}
ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
           getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
CELL_CHARS = 200


def build(script):
    """An in-memory database made by ``script``, then locked against writes."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)
    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(_authorize)
    return conn


def _authorize(action, arg1, arg2, db_name, trigger):
    if action in ALLOWED:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _cell(value):
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, str) and len(value) > CELL_CHARS:
        return value[:CELL_CHARS] + "..."
    return value


def query(conn, sql, max_rows=20, max_steps=200000):
    """Run one read-only statement; return columns, at most ``max_rows`` rows, and ``more``."""
    steps = [0]

    def progress():
        steps[0] += 1
        return 1 if steps[0] > max_steps else 0

    conn.set_progress_handler(progress, 1000)
    try:
        cursor = conn.execute(sql)
        rows = cursor.fetchmany(max_rows + 1)
    except sqlite3.OperationalError as exc:
        if steps[0] > max_steps:
            return {"error": "the query ran too long and was stopped; add filters or a LIMIT"}
        return {"error": str(exc)}
    except (sqlite3.Error, ValueError, OverflowError) as exc:
        return {"error": str(exc)}
    finally:
        conn.set_progress_handler(None, 0)
    columns = [d[0] for d in cursor.description or []]
    return {"columns": columns, "rows": [[_cell(v) for v in row] for row in rows[:max_rows]],
            "more": len(rows) > max_rows}


def main():
    request = json.loads(sys.stdin.read())
    try:
        conn = build(request["script"])
        reply = query(conn, request["query"], int(request.get("max_rows", 20)),
                      int(request.get("max_steps", 200000)))
    except Exception as exc:  # noqa: BLE001 - reported to the caller as data
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + json.dumps({"rlhub_job": reply}) + "\n")


if __name__ == "__main__":
    main()
