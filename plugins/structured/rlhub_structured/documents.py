"""YAML and CSV output domains.

* ``yaml-config``: a flat mapping of typed values, several of which only survive YAML parsing
  when quoted (``"1.10"``, ``"02134"``, ``"off"``, dates);
* ``yaml-nested``: nested mappings, a list of strings and a list of mappings;
* ``csv-records``: JSON records to CSV with an exact header, in order, typed cells (two-place
  decimals, ``true``/``false``), text that needs quoting;
* ``csv-generate``: invent N rows under per-column rules (sequential ids, enums, bounded
  decimals, ISO dates inside a year).

YAML is read with ``yaml.safe_load`` once its node graph is known to be small: anchors and
aliases are counted as they would expand, and a document past :data:`MAX_NODES` (a "billion
laughs" of a few hundred bytes) is refused before anything walks, compares or prints it. CSV is
read with the ``csv`` module. The last fenced block
(```yaml / ```csv) is used when there is one, else the whole completion.
"""

from __future__ import annotations

import csv
import io
import json
import random
from typing import Any

from rlhub import Domain, Manifest, Task, Verdict, code_of
from rlhub_structured import vocab
from rlhub_structured.tables import ColumnRule, generate_rules, records_table
from rlhub_structured.verifiers import dotted, resolve, same

Path = list[str | int]
MAX_DOCUMENT = 20_000  # characters; every expected document is well under 2 kB
MAX_NODES = 5_000  # YAML nodes once aliases are expanded; expected documents have under 100

TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean",
              list: "list", dict: "mapping", type(None): "null"}


def type_name(value: Any) -> str:
    return TYPE_NAMES.get(type(value), type(value).__name__)


def leaf_paths(tree: Any, path: Path | None = None) -> list[tuple[Path, Any]]:
    """Every scalar (or list of scalars) in ``tree`` with its path."""
    path = path or []
    if isinstance(tree, dict):
        return [leaf for k, v in tree.items() for leaf in leaf_paths(v, [*path, k])]
    if isinstance(tree, list) and tree and isinstance(tree[0], dict):
        return [leaf for i, v in enumerate(tree) for leaf in leaf_paths(v, [*path, i])]
    return [(path, tree)]


def tree_problems(expected: Any, got: Any, path: Path) -> list[str]:
    """Differences between the expected tree and the parsed document, one line each."""
    where = dotted(path)
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return [f"{where}: expected a mapping, found {type_name(got)}"]
        problems = [f"{dotted([*path, str(k)])}: unexpected key" for k in got if k not in expected]
        for key, value in expected.items():
            if key not in got:
                problems.append(f"{dotted([*path, key])}: missing key")
            else:
                problems += tree_problems(value, got[key], [*path, key])
        return problems
    if isinstance(expected, list) and expected and isinstance(expected[0], dict):
        if not isinstance(got, list) or len(got) != len(expected):
            return [f"{where}: expected a list of {len(expected)} mappings, found {type_name(got)}"]
        return [p for i, (e, g) in enumerate(zip(expected, got))
                for p in tree_problems(e, g, [*path, i])]
    if not same(expected, got):
        return [f"{where}: expected the {type_name(expected)} {json.dumps(expected)}, found the "
                f"{type_name(got)} {str(got)[:80]!r}"]
    return []


def describe_leaf(path: Path, value: Any) -> str:
    """A prompt line naming the path, the type and the value."""
    if isinstance(value, list):
        return f"- {dotted(path)} is a list of strings: {json.dumps(value)}"
    return f"- {dotted(path)} is the {type_name(value)} {json.dumps(value)}"


def config_tree(rng: random.Random) -> dict[str, Any]:
    """A flat service configuration; quoting-sensitive values included on purpose."""
    pool: dict[str, Any] = {
        "name": rng.choice(vocab.WORDS) + "-service",
        "port": rng.randint(1024, 65535),
        "debug": rng.random() < 0.5,
        "timeout_s": round(rng.uniform(0.5, 30), 1),
        "version": f"{rng.randint(1, 3)}.{rng.choice([10, 20, 30, 40])}",
        "owner": f"{rng.choice(vocab.FIRST_NAMES)} {rng.choice(vocab.LAST_NAMES)}",
        "replicas": rng.randint(1, 12),
        "log_level": rng.choice(["off", "info", "warn", "no"]),
        "release_date": f"20{rng.randint(20, 29)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "zip_code": f"0{rng.randint(1000, 9999)}",
        "region": rng.choice(vocab.CITIES).lower(),
    }
    keys = sorted(rng.sample(sorted(pool), rng.randint(5, 7)), key=list(pool).index)
    return {k: pool[k] for k in keys}


def nested_tree(rng: random.Random) -> dict[str, Any]:
    """Nested mappings, a list of strings and a list of mappings."""
    users = [{"name": rng.choice(vocab.FIRST_NAMES).lower(), "role": rng.choice(["admin", "dev", "ops"]),
              "active": rng.random() < 0.5} for _ in range(rng.randint(2, 3))]
    return {
        "server": {"host": f"{rng.choice(vocab.WORDS)}.example.org", "port": rng.randint(1024, 9999)},
        "database": {"name": rng.choice(vocab.WORDS) + "_db", "pool_size": rng.randint(2, 64),
                     "password": f"{rng.randint(100000, 999999)}"},
        "features": rng.sample(vocab.WORDS, rng.randint(2, 4)),
        "users": users,
    }


def parse_yaml(completion: str) -> tuple[Any, str | None]:
    """``(document, None)`` or ``(None, reason)``; safe loading, with libyaml when present."""
    import yaml

    text = code_of(completion, ("yaml", "yml"))
    if len(text) > MAX_DOCUMENT:
        return None, f"the YAML is {len(text)} characters long; these documents need far fewer"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        nodes = expanded_nodes(yaml.compose(text, Loader=loader), MAX_NODES)
        if nodes > MAX_NODES:
            return None, (f"the YAML expands to more than {MAX_NODES} values through its anchors "
                          "and aliases; write the document out plainly")
        return yaml.load(text, Loader=loader), None  # noqa: S506 - a safe loader
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        return None, f"not valid YAML: {str(exc)[:200]}"


def expanded_nodes(root: Any, limit: int) -> int:
    """How many nodes the YAML node graph ``root`` has with every alias expanded (up to past
    ``limit``; a node that contains itself counts as past it). Shared nodes are sized once."""
    import yaml

    size: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)] if root is not None else []
    while stack:
        node, done = stack.pop()
        children = _children(node, yaml)
        if done:
            open_nodes.discard(id(node))
            size[id(node)] = min(limit + 1, 1 + sum(size[id(c)] for c in children))
        elif id(node) in open_nodes:
            return limit + 1  # a recursive alias
        elif id(node) not in size:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack += [(c, False) for c in children if id(c) not in size]
    return size.get(id(root), 0)


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


class YamlDomain(Domain):
    """Write a YAML document holding exactly the described keys, types and values."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.shape = self.params.get("shape")
        if self.shape not in ("config", "nested"):
            raise ValueError(f"domain {self.id!r}: expected params.shape config|nested, "
                             f"found {self.shape!r}")

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        import yaml

        tree = config_tree(rng) if self.shape == "config" else nested_tree(rng)
        lines = [describe_leaf(p, v) for p, v in leaf_paths(tree)]
        prompt = "\n".join([
            "Write a YAML document (a mapping) with exactly these keys, types and values; dotted "
            "names are nested mappings and [i] is the i-th item of a list (from 0):", *lines,
            "Quote strings where YAML would otherwise read them as another type. Add no other "
            "keys. Answer with the YAML only, inside a ```yaml fenced block.",
        ])
        gold = "```yaml\n" + yaml.safe_dump(tree, sort_keys=False) + "```"
        return {"prompt": prompt, "answer": tree, "gold": gold, "meta": {"shape": self.shape}}

    def check(self, task: Task, completion: str) -> Verdict:
        doc, error = parse_yaml(completion)
        if error is not None or not isinstance(doc, dict):
            reason = error or f"expected a YAML mapping at the top level, found {type_name(doc)}"
            return Verdict({"valid": 0.0, "fields": 0.0, "exact": 0.0}, False, reason)
        problems = tree_problems(task.answer, doc, [])
        leaves = leaf_paths(task.answer)
        right = sum(1 for p, v in leaves if same(v, resolve(doc, p)))
        ok = not problems
        return Verdict({"valid": 1.0, "fields": right / len(leaves), "exact": float(ok)}, ok,
                       "" if ok else "\n".join(f"- {p}" for p in problems[:20]))


def parse_csv(completion: str) -> tuple[list[list[str]], str | None]:
    """Non-blank rows with stripped cells, or ``([], reason)``."""
    text = code_of(completion, ("csv",)).strip()
    if len(text) > MAX_DOCUMENT:
        return [], f"the CSV is {len(text)} characters long; these documents need far fewer"
    try:
        reader = csv.reader(io.StringIO(text))
        return [[c.strip() for c in row] for row in reader if any(c.strip() for c in row)], None
    except csv.Error as exc:
        return [], f"not valid CSV: {exc}"


class CsvDomain(Domain):
    """CSV output: ``mode: records`` converts given records, ``mode: generate`` invents rows."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.mode = self.params.get("mode")
        if self.mode not in ("records", "generate"):
            raise ValueError(f"domain {self.id!r}: expected params.mode records|generate, "
                             f"found {self.mode!r}")

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        made = records_table(rng) if self.mode == "records" else generate_rules(rng)
        return {**made, "meta": {"mode": self.mode}}

    def check(self, task: Task, completion: str) -> Verdict:
        header, n = task.answer["header"], task.answer["rows"]
        rows, error = parse_csv(completion)
        if error or not rows or rows[0] != header:
            found = error or (f"header {rows[0]}" if rows else "no rows")
            return Verdict({"header": 0.0, "rows": 0.0, "exact": 0.0}, False,
                           f"expected the header line {','.join(header)}; found {found}")
        body = rows[1:]
        rules = [ColumnRule.from_dict(r) for r in task.answer["rules"]]
        problems = [p for i, row in enumerate(body[:n]) for p in row_problems(rules, row, i, body)]
        bad_rows = {p.split(":")[0] for p in problems}
        if len(body) != n:
            problems.insert(0, f"expected {n} data rows, found {len(body)}")
        ok = not problems
        good = min(len(body), n) - len(bad_rows)
        return Verdict({"header": 1.0, "rows": max(good, 0) / n, "exact": float(ok)}, ok,
                       "" if ok else "\n".join(f"- {p}" for p in problems[:20]))


def row_problems(rules: list[ColumnRule], row: list[str], i: int, body: list[list[str]]) -> list[str]:
    """Problems of data row ``i`` (0-based), each prefixed with ``row N``."""
    if len(row) != len(rules):
        return [f"row {i + 1}: expected {len(rules)} cells, found {len(row)}"]
    return [f"row {i + 1}: {problem}" for rule, cell in zip(rules, row)
            if (problem := rule.problem(cell, i, body)) is not None]


def make_yaml(manifest: Manifest) -> YamlDomain:
    return YamlDomain(manifest)


def make_csv(manifest: Manifest) -> CsvDomain:
    return CsvDomain(manifest)
