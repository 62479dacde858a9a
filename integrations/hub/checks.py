"""The checks ``rlhub pull`` runs on a bundle's content before installing it, and their report.

Each check is recorded in a :class:`CheckLog` (``rlhub pull --json`` prints it as ``checks``),
passed or with its refusal. On a verified bundle (every hash matches its lock):

* ``domain files``: every ``domains/*.yaml`` is plain YAML data (no tag, no alias bomb) valid
  against the domain-file schema (so ``factory:`` and any unknown key are refused), its dataset
  is a file of the bundle under ``domains/``, and no bundle ships an install record;
* ``identity``: the ids the bundle declares are the ids its files declare: each data-only domain
  of the lock is declared by exactly the file its lock entry names, every domain file's id is in
  the lock, and each manifest file declares the id its entry names;
* ``grading data``: schemas that refer outside themselves and regular expressions RE2 (which runs
  every pattern from data) refuses, in verifier options (:mod:`rlhub.gradingdata`);
* ``datasets``: every dataset read as a domain would read it, under the user's caps
  (:mod:`rlhub.datasets`), with every row's answer checked as grading data.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.errors import RlhubError
from rlhub.integrations.hub.errors import IntegrityError
from rlhub.integrations.hub.fetching import REFUSED, lock_key

if TYPE_CHECKING:
    from rlhub.datasets import DatasetCaps
    from rlhub.integrations.hub.bundle import Bundle

MAX_PROBLEMS = 5


class CheckLog:
    """Each check a pull ran, in order: ``{"check", "ok", "detail"}``."""

    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []

    @contextmanager
    def check(self, name: str) -> Iterator[dict[str, Any]]:
        """Record the check ``name``: passed, or failed with the error that ends the pull. The
        caller may put what it found in the yielded entry's ``detail``."""
        entry: dict[str, Any] = {"check": name, "ok": False, "detail": ""}
        self.results.append(entry)
        try:
            yield entry
        except RlhubError as exc:
            entry["detail"] = str(exc)
            raise
        entry["ok"] = True


def domain_files(bundle: Bundle) -> list[str]:
    """The bundle's domain files discovery reads (``domains/*.yaml``, not deeper)."""
    return [rel for rel in sorted(bundle.lock["files"])
            if rel.startswith("domains/") and rel.endswith((".yaml", ".yml"))
            and rel.count("/") == 1]


def read_domain_files(bundle: Bundle) -> dict[str, dict[str, Any]]:
    """``{rel: parsed file}`` of every domain file, each schema-valid and reading only a dataset
    of the bundle; :class:`IntegrityError` naming the file otherwise."""
    from rlhub.datadomain import read_domain_file
    from rlhub.installs import INSTALL_RECORD

    files = set(bundle.lock["files"])
    forged = sorted(f for f in files if f.split("/")[0] == INSTALL_RECORD)
    if forged:
        raise IntegrityError(f"bundle file {forged[0]}: a bundle may not ship {INSTALL_RECORD}, "
                             f"the record of how rlhub installed it (and whether with trust). "
                             f"{REFUSED}")
    parsed = {}
    for rel in domain_files(bundle):
        try:
            raw = read_domain_file(bundle.root / rel)
        except RlhubError as exc:
            detail = str(exc).removeprefix(f"domain file {bundle.root / rel}").lstrip(",: ")
            raise IntegrityError(f"bundle file {rel}: {detail} {REFUSED}") from None
        _check_dataset(rel, raw["dataset"], files)
        parsed[rel] = raw
    return parsed


def _check_dataset(rel: str, dataset: str, files: set[str]) -> None:
    try:
        target = f"domains/{lock_key(dataset)}"
    except IntegrityError:
        target = None
    if target not in files:
        raise IntegrityError(f"bundle file {rel}: expected its dataset to be a file of the bundle "
                             f"under domains/, found {dataset!r}. {REFUSED}")


def check_identity(bundle: Bundle, parsed: dict[str, dict[str, Any]]) -> list[str]:
    """Refuse a bundle whose lock names other domains than its files declare; the ids."""
    declared = {raw["id"]: rel for rel, raw in parsed.items()}
    problems = []
    for domain_id, entry in sorted(bundle.lock["domains"].items()):
        code = str(entry.get("code") or "")
        if code.startswith("domains/") and declared.get(domain_id) != code:
            found = parsed[code]["id"] if code in parsed else "no such domain file"
            problems.append(f"the lock names domain {domain_id} with the file {code}, which "
                            f"declares {found}")
        problems += _manifest_problem(bundle, domain_id, entry)
    problems += [f"the domain file {rel} declares {raw['id']}, which the lock does not name"
                 for rel, raw in sorted(parsed.items()) if raw["id"] not in bundle.lock["domains"]]
    if problems:
        raise IntegrityError(f"bundle {bundle.name}: expected the ids its lock declares to be the "
                             f"ids its files declare, found: " + "; ".join(problems) + f". "
                             f"{REFUSED}")
    return sorted(bundle.lock["domains"])


def _manifest_problem(bundle: Bundle, domain_id: str, entry: dict[str, Any]) -> list[str]:
    import json

    rel = entry.get("manifest")
    if not isinstance(rel, str) or rel not in bundle.lock["files"]:
        return [f"the lock names domain {domain_id} with no manifest file of the bundle"]
    try:
        found = json.loads((bundle.root / rel).read_text()).get("id")
    except (OSError, ValueError, AttributeError):
        found = "no JSON manifest"
    return [] if found == domain_id else [
        f"the lock names domain {domain_id} with the manifest {rel}, which declares {found}"]


def check_grading_data(parsed: dict[str, dict[str, Any]]) -> None:
    """Refuse a domain file whose verifier options hold a schema or pattern rlhub refuses."""
    from rlhub.gradingdata import spec_problems

    for rel, raw in parsed.items():
        problems = spec_problems(raw["verifier"])
        if problems:
            raise IntegrityError(f"bundle file {rel}, domain {raw['id']!r}: "
                                 + "; ".join(problems[:MAX_PROBLEMS]) + f". {REFUSED}")


def check_datasets(bundle: Bundle, parsed: dict[str, dict[str, Any]], caps: DatasetCaps
                   ) -> dict[str, int]:
    """Read every dataset as its domain would, under ``caps``, checking each row's answer;
    ``{domain id: rows}``."""
    from rlhub.datadomain import columns

    counts = {}
    for rel, raw in parsed.items():
        fields = raw["fields"]
        answers = _AnswerCheck(raw, f"bundle file {rel}, domain {raw['id']!r}, dataset row")
        keys = [fields["answer"]] if "answer" in fields else []
        try:
            rows = _read(bundle.root / "domains", raw["dataset"], columns(fields), caps, keys,
                         answers)
        except RlhubError as exc:
            raise IntegrityError(f"bundle file {rel}, domain {raw['id']!r}: "
                                 f"{_relative(str(exc), bundle.root)} {REFUSED}") from None
        answers.raise_problems()
        counts[raw["id"]] = rows
    return counts


def _read(folder: Path, dataset: str, cols: list[str], caps: DatasetCaps, keys: list[str],
          hook: Any) -> int:
    from rlhub.datasets import read_dataset

    return len(read_dataset(dataset, str(folder), cols, caps, keys, hook if keys else None))


def _relative(message: str, root: Path) -> str:
    return message.replace(f"{root}/", "")


class _AnswerCheck:
    """Collects the grading-data problems of each row's answer as the dataset is read."""

    def __init__(self, raw: dict[str, Any], where: str):
        self.spec, self.where = raw["verifier"], where
        self.answer = raw["fields"].get("answer")
        self.problems: list[str] = []

    def __call__(self, index: int, row: dict[str, Any]) -> None:
        from rlhub.gradingdata import answer_problems

        if len(self.problems) < MAX_PROBLEMS:
            self.problems += answer_problems(self.spec, row[self.answer],
                                             f"{self.where} {index + 1}")

    def raise_problems(self) -> None:
        if self.problems:
            raise IntegrityError("; ".join(self.problems[:MAX_PROBLEMS]) + f". {REFUSED}")
