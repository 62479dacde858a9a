"""Data-only domains: a YAML file naming a dataset, a field mapping and a named verifier.

Example::

    id: mydata/gsm-v1
    dataset: gsm.jsonl            # .jsonl, .jsonl.gz or .parquet; relative to this file, or a URL
    split: {test_fraction: 0.2}   # or "all", or {column: split}
    fields: {id: id, prompt: question, answer: answer}
    verifier: math                # or {name: python-tests, options: {include_prompt: true}}

The file becomes a manifest (plugin = the id's namespace) whose factory is :class:`DataDomain`;
rows are read only when the domain is first used.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from rlhub.domain import Domain
from rlhub.errors import ManifestError
from rlhub.manifest import Manifest, schema_errors
from rlhub.task import Task, task_id

if TYPE_CHECKING:
    from rlhub.trust import UntrustedEnv

INSTALL_RECORD = ".rlhub-pull.json"  # what `rlhub pull` writes in each installed environment
GOLD_FROM_ANSWER = {"exact": "{answer}", "math": "The answer is \\boxed{{{answer}}}."}


def read_domain_file(path: Path) -> dict[str, Any]:
    """Parse and validate a domain file; errors name the file and the field."""
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ManifestError(f"domain file {path}: expected YAML, found a syntax error: {exc}") from exc
    errors = schema_errors("domainfile", raw)
    if errors:
        domain = raw.get("id", "<no id>") if isinstance(raw, dict) else "<not a mapping>"
        raise ManifestError(f"domain file {path}, domain {domain!r}: " + "; ".join(errors))
    return raw


@dataclass(frozen=True)
class PulledEnv:
    """The pulled environment a domain file belongs to, and whether it was pulled with trust."""

    name: str
    trusted: bool


def pulled_env(path: str | Path, home: Path) -> PulledEnv | None:
    """The environment of a file under ``home/envs/<name>/<revision>/``, else None.

    Trust is what ``rlhub pull`` recorded in the folder's install record; anything else (no
    record, an unreadable one) is untrusted. Links are resolved first, so a file reached through
    one is judged by where it really is.
    """
    envs = (home / "envs").resolve()
    try:
        rel = Path(path).resolve().relative_to(envs)
    except ValueError:
        return None
    if len(rel.parts) < 3:
        return None
    return _recorded(envs / rel.parts[0] / rel.parts[1])


def recorded_env(path: str | Path) -> PulledEnv | None:
    """The environment of a file inside a folder ``rlhub pull`` installed, wherever that folder
    is now (another home, a copy): found by the outermost install record in the file's folders
    (a record a publisher hid deeper in its bundle is not the one ``rlhub pull`` wrote)."""
    for folder in reversed(Path(path).resolve().parents):
        if (folder / INSTALL_RECORD).is_file():
            return _recorded(folder)
    return None


def _recorded(folder: Path) -> PulledEnv:
    """``folder``'s environment, trusted only if its install record says so."""
    try:
        record = json.loads((folder / INSTALL_RECORD).read_text())
    except (OSError, ValueError):
        record = {}
    if not isinstance(record, dict):
        record = {}
    return PulledEnv(str(record.get("name") or folder.parent.name), record.get("trusted") is True)


def manifest_from_file(path: Path, *, untrusted: UntrustedEnv | None = None) -> Manifest:
    """The manifest of a data-only domain file (reads the YAML, not the dataset).

    :param untrusted: The environment the file came from when it is not trusted: the file is
        refused (:class:`ManifestError`) if it declares anything :mod:`rlhub.trust` forbids.
    """
    from rlhub.verifiers import DEFAULT_REWARDS

    path = Path(path)
    raw = read_domain_file(path)
    if untrusted is not None:
        refuse_untrusted(raw, untrusted, f"domain file {path}")
    verifier = raw["verifier"] if isinstance(raw["verifier"], dict) else {"name": raw["verifier"]}
    check_option_patterns(verifier, f"domain file {path}, domain {raw['id']!r}")
    name = verifier["name"]
    reward = raw.get("reward") or DEFAULT_REWARDS.get(name)
    if reward is None:
        raise ManifestError(f"domain file {path}: verifier {name!r} is not built in, so the file "
                            "must declare reward: {range, components}")
    fields = raw["fields"]
    data = {
        "id": raw["id"],
        "version": str(raw.get("version", "1")),
        "summary": raw.get("summary", f"data-only domain from {path.name}"),
        "license": raw.get("license", "NOASSERTION"),
        "tags": raw.get("tags", ["data", "code"] if name == "python-tests" else ["data"]),
        "gold": "gold" in fields or ("answer" in fields and name in GOLD_FROM_ANSWER),
        "reward": reward,
        "verifier": verifier,
        "factory": "rlhub.datadomain:DataDomain",
        "params": {"dataset": raw["dataset"], "base_dir": str(path.parent.resolve()),
                   "split": raw.get("split", "all"), "fields": fields},
    }
    for key in ("sandbox", "turns", "verify_timeout_s", "scoring", "hackable"):
        if key in raw:
            data[key] = raw[key]
    if name == "python-tests" and "verify_timeout_s" not in raw:
        data["verify_timeout_s"] = sandboxed_timeout(verifier.get("options") or {})
    namespace = raw["id"].split("/", 1)[0]
    return Manifest.parse(data, plugin=namespace, distribution=f"domain file {path}",
                          source=str(path))


def check_option_patterns(verifier: dict[str, Any], where: str) -> None:
    """Raise :class:`ManifestError` when a verifier option holds a pattern (``pattern``, or a JSON
    Schema's) that cannot run on the linear-time engine (:mod:`rlhub.verifiers.patterns`)."""
    from rlhub.verifiers.patterns import PatternError, check_pattern, schema_patterns

    try:
        for pattern in schema_patterns(verifier.get("options") or {}):
            check_pattern(pattern, where=f"{where}, verifier {verifier['name']!r}")
    except PatternError as exc:
        raise ManifestError(str(exc)) from None


def sandboxed_timeout(options: dict[str, Any]) -> float:
    """A python-tests domain's default verification deadline: its sandbox job's wall limit
    (python-tests' default 10 s) with room to start the job and read its verdict, so a program
    that spins until the sandbox kills it is the answer's ``timeout``, not a verifier overrun."""
    wall = float((options.get("limits") or {}).get("wall_s", 10))
    return wall * 1.5 + 5


def refuse_untrusted(raw: dict[str, Any], env: UntrustedEnv, where: str) -> None:
    """Raise :class:`ManifestError` listing everything ``raw`` may not declare as untrusted."""
    from rlhub.trust import advice, untrusted_problems

    problems = untrusted_problems(raw, env)
    if problems:
        raise ManifestError(f"{where}, domain {raw.get('id')!r} of the untrusted environment "
                            f"{env.name!r}: " + "; ".join(problems) + ". " + advice(env))


MAX_DATASET_BYTES = 1 << 30  # the most a dataset may expand to in memory (1 GiB)


def read_rows(dataset: str, base_dir: str) -> list[dict[str, Any]]:
    """Every row of a .jsonl, .jsonl.gz or .parquet dataset, local or through fsspec.

    A dataset that would expand beyond :data:`MAX_DATASET_BYTES` (a compression bomb, say) is
    refused before it is expanded.
    """
    import fsspec

    url = dataset if "://" in dataset else str(Path(base_dir, dataset))
    with fsspec.open(url, "rb") as fh:
        data = fh.read(MAX_DATASET_BYTES + 1)
    _check_size(url, len(data), "")
    if url.endswith(".parquet"):
        return _parquet_rows(url, data)
    if url.endswith(".gz"):
        data = _gunzip(url, data)
    rows = []
    for n, line in enumerate(data.decode().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise ManifestError(f"dataset {url} line {n}: expected a JSON object: {exc}") from exc
    return rows


def _check_size(url: str, size: int, how: str) -> None:
    if size > MAX_DATASET_BYTES:
        raise ManifestError(f"dataset {url}: expected at most {MAX_DATASET_BYTES} bytes{how}, "
                            f"found more; split it into several domains")


def _gunzip(url: str, data: bytes) -> bytes:
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
        out = fh.read(MAX_DATASET_BYTES + 1)
    _check_size(url, len(out), " once decompressed")
    return out


def _parquet_rows(url: str, data: bytes) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    from rlhub.parquet import parquet_table

    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    expanded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    _check_size(url, expanded, " once decoded")
    return parquet_table(data).to_pylist()


TEST_FIELDS = ("tests", "entry_point", "asserts", "setup")


def columns(fields: dict[str, Any]) -> list[str]:
    """Every dataset column a field mapping reads (``cases`` may name several)."""
    return [c for v in fields.values() for c in ([v] if isinstance(v, str) else v)]


def row_tests(row: dict[str, Any], fields: dict[str, Any], rid_hint: str) -> dict[str, Any]:
    """A row's tests for ``python-tests``: test code, asserts, setup, stdin/stdout cases."""
    from rlhub.verifiers.pytests import io_cases

    meta = {k: row[fields[k]] for k in TEST_FIELDS if k in fields}
    if "cases" in fields:
        names = fields["cases"] if isinstance(fields["cases"], list) else [fields["cases"]]
        try:
            meta["cases"] = [c for name in names for c in io_cases(row[name])]
        except (ValueError, KeyError, TypeError) as exc:
            raise ManifestError(f"{rid_hint}: field cases ({', '.join(names)}): {exc}") from exc
    return meta


class DataDomain(Domain):
    """A domain whose tasks are the rows of a dataset; see the module docstring."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self._rows: dict[str, list[dict[str, Any]]] | None = None
        self._orders: dict[tuple[str, int], list[int]] = {}
        self._lock = threading.Lock()

    def rows(self, split: str) -> list[dict[str, Any]]:
        with self._lock:
            if self._rows is None:
                rows = read_rows(self.params["dataset"], self.params["base_dir"])
                self._check_rows(rows)
                self._rows = self._split(rows)
        rows = self._rows.get(split, [])
        if not rows:
            raise ValueError(f"domain {self.id!r}: split {split!r} has no rows")
        return rows

    def _check_rows(self, rows: list[dict[str, Any]]) -> None:
        """Refuse a dataset whose answers the verifier cannot use (a pattern for the ``regex``
        verifier that needs backtracking, say): the environment's error, raised at load time."""
        from rlhub.verifiers.patterns import PatternError

        fields = self.params["fields"]
        check = getattr(self.verifier, "check_data", None)
        if check is None or "answer" not in fields:
            return
        for i, row in enumerate(rows):
            where = f"domain {self.id!r}, row {row.get(fields.get('id', ''), i)!r}"
            try:
                check(row.get(fields["answer"]), where)
            except PatternError as exc:
                raise ManifestError(str(exc)) from None

    def _split(self, rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        spec, fields = self.params["split"], self.params["fields"]
        missing = sorted({c for c in columns(fields) for r in rows[:1] if c not in r})
        if missing:
            raise ManifestError(f"domain {self.id!r}: expected dataset columns {missing} "
                                f"(from fields), found {sorted(rows[0]) if rows else []}")
        if spec == "all" or not isinstance(spec, dict):
            return {s: rows for s in self.manifest.data["splits"]}
        if "column" in spec:
            out: dict[str, list[dict[str, Any]]] = {}
            for row in rows:
                out.setdefault(str(row[spec["column"]]), []).append(row)
            return out
        frac = spec.get("test_fraction", 0.2)
        out = {"train": [], "test": []}
        for i, row in enumerate(rows):
            key = str(row.get(fields.get("id", ""), i)).encode()
            bucket = int.from_bytes(hashlib.sha256(key).digest()[:4], "big") / 2**32
            out["test" if bucket < frac else "train"].append(row)
        return out

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        raise NotImplementedError  # tasks come from rows; see task()

    def task(self, split: str, seed: int, index: int) -> Task:
        self._check_split(split)
        rows = self.rows(split)
        order = self._orders.get((split, seed))
        if order is None:
            order = list(range(len(rows)))
            if seed:
                random.Random(f"{self.id}/{split}/{seed}").shuffle(order)
            self._orders[(split, seed)] = order
        row = rows[order[index % len(rows)]]
        f = self.params["fields"]
        answer = row.get(f["answer"]) if "answer" in f else None
        meta = row_tests(row, f, rid_hint=f"{self.id} row {row.get(f.get('id', ''), index)}")
        gold = row.get(f["gold"]) if "gold" in f else None
        template = GOLD_FROM_ANSWER.get(self.manifest.data["verifier"]["name"])
        if gold is None and answer is not None and template:
            gold = template.format(answer=answer)
        rid = f"{self.id}:{row[f['id']]}" if "id" in f else task_id(self.id, split, seed, index)
        return Task(id=rid, domain=self.id, prompt=row[f["prompt"]], answer=answer, gold=gold,
                    meta=meta)
