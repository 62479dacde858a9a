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

import hashlib
import random
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.domain import Domain
from rlhub.errors import ManifestError
from rlhub.gradingdata import answer_problems, spec_problems
from rlhub.installs import INSTALL_RECORD, read_record
from rlhub.manifest import Manifest, schema_errors
from rlhub.task import Task, task_id
from rlhub.yamldata import YamlRefused, load_yaml

if TYPE_CHECKING:
    from rlhub.datasets import Rows
    from rlhub.trust import UntrustedEnv

GOLD_FROM_ANSWER = {"exact": "{answer}", "math": "The answer is \\boxed{{{answer}}}."}


def read_domain_file(path: Path) -> dict[str, Any]:
    """Parse and validate a domain file; errors name the file and the field."""
    try:
        raw = load_yaml(path.read_text())
    except YamlRefused as exc:
        raise ManifestError(f"domain file {path}: {exc}") from None
    errors = schema_errors("domainfile", raw)
    if errors:
        domain = raw.get("id", "<no id>") if isinstance(raw, dict) else "<not a mapping>"
        raise ManifestError(f"domain file {path}, domain {domain!r}: " + "; ".join(errors))
    return raw


@dataclass(frozen=True)
class PulledEnv:
    """The pulled environment a domain file belongs to, whether it was pulled with trust, and
    the probe classes its pull found each domain hackable by (``{domain id: [class]}``)."""

    name: str
    trusted: bool
    hackable: dict[str, list[str]] = field(default_factory=dict)


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
    record = read_record(folder)
    marks = record.get("hackable") if isinstance(record.get("hackable"), dict) else {}
    return PulledEnv(str(record.get("name") or folder.parent.name), record.get("trusted") is True,
                     {str(k): [str(c) for c in v] for k, v in marks.items()
                      if isinstance(v, list)})


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
    grading = spec_problems(raw["verifier"])
    if grading:
        raise ManifestError(f"domain file {path}, domain {raw['id']!r}: " + "; ".join(grading))
    verifier = raw["verifier"] if isinstance(raw["verifier"], dict) else {"name": raw["verifier"]}
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
    """A domain whose tasks are the rows of a dataset; see the module docstring.

    The dataset is read once, on first use (:func:`rlhub.datasets.read_dataset`, under the
    user's caps): only the mapped columns are kept, compactly, and the row indices of each split;
    a row becomes Python values only when a task is made from it.
    """

    ORDERS_KEPT = 8  # shuffled orders kept, by (split, seed)

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self._data: Rows | None = None
        self._splits: dict[str, Sequence[int]] = {}
        self._orders: OrderedDict[tuple[str, int], Sequence[int]] = OrderedDict()
        self._lock = threading.Lock()

    def rows(self, split: str) -> Sequence[dict[str, Any]]:
        """The rows of ``split`` (a view: each row is decoded when it is read)."""
        with self._lock:
            if self._data is None:
                self._data = self._read()
        indices = self._splits.get(split, ())
        if not indices:
            raise ValueError(f"domain {self.id!r}: split {split!r} has no rows")
        return _View(self._data, indices)

    def _read(self) -> Rows:
        from rlhub.datasets import DatasetCaps, read_dataset
        from rlhub.userconfig import load_user_config

        spec, fields = self.params["split"], self.params["fields"]
        assign = _SplitAssigner(spec, fields, self.manifest.data["splits"])
        try:
            rows = read_dataset(self.params["dataset"], self.params["base_dir"], columns(fields),
                                DatasetCaps.from_config(load_user_config()), assign.keys,
                                assign if assign.keys else None)
        except ManifestError as exc:
            raise ManifestError(f"domain {self.id!r}: {exc}") from None
        self._splits = assign.splits(len(rows))
        return rows

    def _order(self, split: str, seed: int, n: int) -> Sequence[int]:
        """The shuffled order of ``split`` for ``seed`` (the last few kept)."""
        key = (split, seed)
        with self._lock:
            order = self._orders.get(key)
            if order is not None:
                self._orders.move_to_end(key)
                return order
        order = array("q", range(n))
        if seed:
            random.Random(f"{self.id}/{split}/{seed}").shuffle(order)  # type: ignore[arg-type]
        with self._lock:
            self._orders[key] = order
            while len(self._orders) > self.ORDERS_KEPT:
                self._orders.popitem(last=False)
        return order

    def _check_answer(self, answer: Any, row_id: Any, index: int) -> None:
        """A row's schema that refers outside itself is refused naming the domain and row
        (``rlhub pull`` checks every row, and its patterns too, before installing)."""
        if not isinstance(answer, dict):
            return
        where = f"domain {self.id!r}, row {row_id if row_id is not None else index}"
        problems = answer_problems(self.manifest.data["verifier"], answer, where, patterns=False)
        if problems:
            raise ManifestError("; ".join(problems))

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        raise NotImplementedError  # tasks come from rows; see task()

    def task(self, split: str, seed: int, index: int) -> Task:
        self._check_split(split)
        rows = self.rows(split)
        row = rows[self._order(split, seed, len(rows))[index % len(rows)]]
        f = self.params["fields"]
        answer = row.get(f["answer"]) if "answer" in f else None
        self._check_answer(answer, row.get(f.get("id", "")), index)
        meta = row_tests(row, f, rid_hint=f"{self.id} row {row.get(f.get('id', ''), index)}")
        gold = row.get(f["gold"]) if "gold" in f else None
        template = GOLD_FROM_ANSWER.get(self.manifest.data["verifier"]["name"])
        if gold is None and answer is not None and template:
            gold = template.format(answer=answer)
        rid = f"{self.id}:{row[f['id']]}" if "id" in f else task_id(self.id, split, seed, index)
        return Task(id=rid, domain=self.id, prompt=row[f["prompt"]], answer=answer, gold=gold,
                    meta=meta)


class _View(Sequence[dict[str, Any]]):
    """The rows of one split: ``indices`` into the dataset's rows."""

    def __init__(self, rows: Rows, indices: Sequence[int]):
        self._rows, self._indices = rows, indices

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, index: int) -> dict[str, Any]:  # type: ignore[override]
        return self._rows[self._indices[index]]


class _SplitAssigner:
    """Which split each row goes to, from the columns :attr:`keys` as the dataset is read.

    ``split: all`` (or no mapping): every split has every row. ``{column: C}``: a row goes to the
    split its column C names. ``{test_fraction: f}``: a row goes to ``test`` when the sha256 of
    its id (its index without one) falls below ``f``.
    """

    def __init__(self, spec: Any, fields: dict[str, Any], splits: list[str]):
        self.mode = "all" if spec == "all" or not isinstance(spec, dict) else (
            "column" if "column" in spec else "fraction")
        self.column = spec.get("column") if self.mode == "column" else None
        self.fraction = spec.get("test_fraction", 0.2) if self.mode == "fraction" else 0.0
        self.id_column = fields.get("id")
        self.keys = ([self.column] if self.column else [self.id_column]
                     if self.mode == "fraction" and self.id_column else [])
        self._indices: dict[str, array[int]] = {}
        self._names = splits

    def __call__(self, index: int, row: dict[str, Any]) -> None:
        if self.mode == "column":
            split = str(row[self.column])
        else:
            key = str(row[self.id_column] if self.id_column else index).encode()
            bucket = int.from_bytes(hashlib.sha256(key).digest()[:4], "big") / 2**32
            split = "test" if bucket < self.fraction else "train"
        self._indices.setdefault(split, array("q")).append(index)

    def splits(self, n: int) -> dict[str, Sequence[int]]:
        if self.mode == "all":
            return {s: range(n) for s in self._names}
        if self.mode == "fraction" and not self.keys:  # no id column: by index alone
            for i in range(n):
                self(i, {})
        return dict(self._indices)
