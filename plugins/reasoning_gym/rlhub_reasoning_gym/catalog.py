"""The static table of reasoning-gym datasets, the manifests made from it, and its generator.

Listing domains must not import reasoning_gym (about a second, plus sympy), so the plugin reads
``catalog.json``, generated from the installed reasoning-gym by::

    python -m rlhub_reasoning_gym.catalog --write    # regenerate catalog.json
    python -m rlhub_reasoning_gym.catalog --check    # exit 1 and print the differences

Each row records a dataset's ``name``, ``category`` (reasoning-gym's own: the package the dataset
class lives in), a one-line ``summary`` from its docstring, whether its entries carry a ``gold``
answer, and whether it is ``seeded``: the same items in every process, whatever the hash seed
and whatever was generated before (some generators iterate over sets of strings, codeio's
snippets use the global ``random`` module). Datasets that cannot be scored are
listed under ``excluded`` with the reason. Building the table generates two items per dataset,
plus eight in each of two fresh interpreters for the fingerprints: about a minute.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

NAMESPACE = "rg"
# v2: exact-only. reasoning-gym's own partial credit (a superstring's length ratio, numeric
# closeness, 0.01 for any non-empty answer) was collected by constant and hedged answers.
# v3: full marks are a pass only when the answer agrees with the gold (coin_flip's scorer paid
# "0" in full for every probability below one).
VERSION = "3.0.0"
MAJOR = VERSION.split(".", 1)[0]
TABLE = "catalog.json"
PROBE_SEED = 20250101
FINGERPRINT_ITEMS = 8
NOT_AN_ANSWER = "rlhub probe: this text is not an answer to the question"


@functools.cache
def load() -> dict[str, Any]:
    """The shipped table: ``{"reasoning_gym": version, "datasets": [...], "excluded": {...}}``."""
    text = resources.files("rlhub_reasoning_gym").joinpath(TABLE).read_text(encoding="utf-8")
    return json.loads(text)


def manifest(row: dict[str, Any]) -> dict[str, Any]:
    """The rlhub manifest of one table row."""
    return {
        "id": f"{NAMESPACE}/{row['name']}-v{MAJOR}",
        "version": VERSION,
        "summary": f"reasoning-gym {row['name']}: {row['summary']}"[:300],
        "license": "Apache-2.0",
        "tags": ["reasoning-gym", row["category"]],
        "gold": row["gold"],
        "determinism": "seeded" if row["seeded"] else "stochastic",
        "size": None,
        "reward": {"range": [0, 1], "components": {
            "correct": {"weight": 1.0, "range": [0, 1],
                        "description": "1 when reasoning-gym's own score_answer gives full marks"},
            "score": {"weight": 0.0, "range": [0, 1],
                      "description": "reasoning-gym's own score_answer, logged only"},
            "format": {"weight": 0.0, "range": [0, 1],
                       "description": "1 when the answer is inside <answer></answer> tags"},
        }},
        "scoring": {"kind": "exact"},
        "factory": "rlhub_reasoning_gym.domain:make",
        "params": {"dataset": row["name"]},
        "verify_timeout_s": 5,
    }


def left_out() -> list[dict[str, str]]:
    """The reasoning-gym datasets the table excludes, each with the id it would have and why."""
    return [{"id": f"{NAMESPACE}/{name}-v{MAJOR}", "reason": reason, "source": name}
            for name, reason in sorted(load()["excluded"].items())]


def manifests() -> list[dict[str, Any]]:
    """Every domain's manifest, in table order."""
    return [manifest(row) for row in load()["datasets"]]


# -- building the table from the installed reasoning-gym (imports it) --------------------------


def build(*, seeded: dict[str, bool] | None = None) -> dict[str, Any]:
    """The table for the installed reasoning-gym; ``seeded`` defaults to :func:`measure_seeded`."""
    from importlib import metadata

    from reasoning_gym.factory import DATASETS

    rows, excluded = [], {}
    for name in sorted(DATASETS):
        row, reason = _describe(name)
        if reason:
            excluded[name] = reason
        else:
            rows.append(row)
    flags = measure_seeded() if seeded is None else seeded
    for row in rows:
        row["seeded"] = flags[row["name"]]
    return {"reasoning_gym": metadata.version("reasoning-gym"), "datasets": rows,
            "excluded": excluded}


def category(dataset_cls: type) -> str:
    """reasoning-gym's category of a dataset class, as ``ProceduralDataset.category`` has it."""
    parts = dataset_cls.__module__.split(".")
    return parts[1] if len(parts) >= 3 else "other"


def summary(dataset_cls: type) -> str:
    """The first line of the class docstring, without a trailing full stop."""
    doc = (dataset_cls.__doc__ or "").strip()
    line = doc.splitlines()[0].strip().rstrip(".") if doc else ""
    return line or f"{dataset_cls.__name__} tasks"


def _describe(name: str) -> tuple[dict[str, Any], str]:
    """A row for ``name`` (without ``seeded``), or the reason it cannot be a domain."""
    import reasoning_gym
    from reasoning_gym.factory import DATASETS

    cls = DATASETS[name][0]
    try:
        dataset = reasoning_gym.create_dataset(name, size=2, seed=PROBE_SEED)
        items = [dataset[0], dataset[1]]
    except Exception as exc:  # noqa: BLE001 - e.g. composite without a config
        return {}, f"cannot be created with its default config ({type(exc).__name__}: {exc})"
    if any(_safe_score(dataset, NOT_AN_ANSWER, item) >= 1.0 for item in items):
        return {}, ("its score_answer gives the maximum score to an answer that is not one "
                    f"({NOT_AN_ANSWER!r}), so it cannot tell right from wrong")
    row = {"name": name, "category": category(cls), "summary": summary(cls),
           "gold": all(item["answer"] is not None for item in items)}
    return row, ""


def _safe_score(dataset: Any, answer: str, item: dict[str, Any]) -> float:
    try:
        return float(dataset.score_answer(answer=answer, entry=item))
    except Exception:  # noqa: BLE001 - a raising scorer does not accept the answer
        return 0.0


def fingerprints(names: list[str], reverse: bool = False) -> dict[str, str]:
    """A digest of each dataset's first items at a fixed seed, to compare across processes.

    ``reverse`` generates the datasets and their items in the opposite order, which exposes
    generators that read global random state (codeio's snippets call the ``random`` module).
    """
    import reasoning_gym

    out = {}
    for name in reversed(names) if reverse else names:
        dataset = reasoning_gym.create_dataset(name, size=FINGERPRINT_ITEMS, seed=PROBE_SEED)
        order = range(FINGERPRINT_ITEMS)
        items = {i: dataset[i] for i in (reversed(order) if reverse else order)}
        blob = json.dumps([items[i] for i in order], sort_keys=True, default=repr)
        out[name] = hashlib.sha256(blob.encode()).hexdigest()
    return out


# Datasets whose items follow PYTHONHASHSEED for only some indices, which two interpreters can
# miss; found by the contract kit's cross-process check.
KNOWN_STOCHASTIC = {
    "intermediate_integration": "sympy prints some integrals in an order that follows the hash seed",
    "list_functions": "one of its generators draws odd numbers from the global random module",
}


def measure_seeded(names: list[str] | None = None) -> dict[str, bool]:
    """Whether each dataset gives the same items in two fresh interpreters that differ in
    ``PYTHONHASHSEED`` and in the order they generate items."""
    if names is None:
        from reasoning_gym.factory import DATASETS

        names = sorted(n for n in DATASETS if n != "composite")
    with tempfile.TemporaryDirectory() as tmp:
        children = [_start_fingerprints(names, Path(tmp), run) for run in (0, 1)]
        runs = [_finish_fingerprints(*child) for child in children]
    return {name: runs[0][name] == runs[1][name] and name not in KNOWN_STOCHASTIC
            for name in names}


def _start_fingerprints(names: list[str], tmp: Path, run: int) -> tuple[Any, Path]:
    """Start :func:`fingerprints` in a fresh interpreter; the result travels through a file,
    since some generators print to stdout."""
    code = ("import json, sys; from rlhub_reasoning_gym.catalog import fingerprints; "
            "names, reverse, path = json.loads(sys.argv[1]), sys.argv[2] == '1', sys.argv[3]; "
            "open(path, 'w').write(json.dumps(fingerprints(names, reverse)))")
    result = tmp / f"fingerprints-{run}.json"
    env = {**os.environ, "PYTHONHASHSEED": str(run + 1)}
    child = subprocess.Popen([sys.executable, "-c", code, json.dumps(names), str(run), str(result)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    return child, result


def _finish_fingerprints(child: Any, result: Path) -> dict[str, str]:
    _, stderr = child.communicate(timeout=900)
    if child.returncode or not result.exists():
        raise RuntimeError("fingerprinting reasoning-gym datasets in a fresh interpreter "
                           f"failed:\n{stderr[-2000:]}")
    return json.loads(result.read_text())


def differences(shipped: dict[str, Any], built: dict[str, Any]) -> list[str]:
    """One line per disagreement between two tables (empty when they agree)."""
    lines = []
    if shipped.get("reasoning_gym") != built.get("reasoning_gym"):
        lines.append(f"reasoning-gym version: table {shipped.get('reasoning_gym')}, "
                     f"installed {built.get('reasoning_gym')}")
    old = {row["name"]: row for row in shipped["datasets"]}
    new = {row["name"]: row for row in built["datasets"]}
    for name in sorted(old.keys() | new.keys()):
        if old.get(name) != new.get(name):
            lines.append(f"dataset {name}: table {old.get(name)}, installed {new.get(name)}")
    if shipped["excluded"].keys() != built["excluded"].keys():
        lines.append(f"excluded: table {sorted(shipped['excluded'])}, "
                     f"installed {sorted(built['excluded'])}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlhub_reasoning_gym.catalog",
                                     description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help=f"regenerate {TABLE}")
    action.add_argument("--check", action="store_true", help="compare with the installed version")
    args = parser.parse_args(argv)
    built = build()
    if args.write:
        path = Path(__file__).with_name(TABLE)
        path.write_text(json.dumps(built, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path}: {len(built['datasets'])} datasets, {len(built['excluded'])} excluded")
        return 0
    lines = differences(load(), built)
    print("\n".join(lines) or "catalog.json matches the installed reasoning-gym")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
