"""``rlhub export``: a mixture as one OpenRLHF prompt dataset (JSONL) with exact proportions.

Each row is::

    {"prompt": ..., "label": "{\"domain\": ..., \"role\": \"train\", \"task\": {...}, \"sig\": ...}",
     "datasource": DOMAIN, "gold": REFERENCE_OR_NULL}

for ``--data.input_key prompt --data.label_key label`` (add ``--data.apply_chat_template``).
``label`` is a JSON *string* so that every row has the same column type (HF ``datasets`` refuses
to align a str column with a dict one); ``rlhub serve`` and the agent module decode it.
``datasource`` gives OpenRLHF's per-source eval metrics; ``gold`` is ignored by OpenRLHF.
The label's ``role`` says what the row is for: ``train`` rows may be replaced by a task of the
server's scheduler in the OpenRLHF agent module (``RLHUB_SCHEDULE=1``) and their groups feed the
scheduler; ``eval`` rows are always played as written and never observed by it, so OpenRLHF's
``eval_<datasource>_pass1`` measures held-out tasks under their own domain names. A label without
a role counts as ``eval``.

Labels carry the task with its answer, so ``rlhub serve`` trusts one only when it can re-derive
it (the ``domain:split:seed:index`` task id every sampled task has) or when it carries a signature
made with the server's key (``--label-key-file``, :mod:`rlhub.labels`). Export signs the labels
when given a key; a task whose id has no coordinates (a data-only domain's own row ids) or a
stochastic domain's task needs one.

Domain ``d`` gets exactly ``n_d`` rows, the largest-remainder rounding of ``N × w_d`` with the
mixture's starting weights ``w`` (ties go to the domain listed first), and each row appears once.
One pre-mixed file avoids ``--data.prompt_probs``, whose ``interleave_datasets(...,
"all_exhausted")`` oversamples small datasets with replacement. Prompts are all strings, or all
chat message lists when any task has a chat prompt (one column type again). Rows are shuffled
with the mixture's seed, so the file is the same on every run.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub import labels
from rlhub.errors import LabelError, SchedulerError
from rlhub.task import Task

if TYPE_CHECKING:
    from rlhub.plugins import Registry


def largest_remainder(n: int, weights: dict[str, float]) -> dict[str, int]:
    """Integer counts summing to ``n``, each within one of ``n × w / sum(w)``."""
    if n < 0:
        raise SchedulerError(f"export: expected n >= 0, found {n}")
    total = sum(weights.values())
    if not weights or total <= 0 or not all(math.isfinite(w) and w >= 0 for w in weights.values()):
        raise SchedulerError(f"export: expected non-negative weights with a positive sum, found "
                             f"{weights}")
    exact = {d: n * w / total for d, w in weights.items()}
    counts = {d: math.floor(x) for d, x in exact.items()}
    order = sorted(weights, key=lambda d: -(exact[d] - counts[d]))  # stable: config order on ties
    for d in order[: n - sum(counts.values())]:
        counts[d] += 1
    return counts


ROLES = ("train", "eval")


def label_of(task: Task, role: str = "train", key: bytes | None = None, *,
             stochastic: bool = False) -> str:
    """The label string of a task (see the module docstring), signed when ``key`` is given.

    The signature covers the domain and the task; ``role`` only steers the agent module's
    scheduling, never what is verified.
    """
    if role not in ROLES:
        raise SchedulerError(f"export: expected a role in {ROLES}, found {role!r}")
    if key is None and (stochastic or labels.at_from_id(task) is None):
        why = "is stochastic" if stochastic else f"gave task {task.id!r} an id without coordinates"
        raise LabelError(f"export: domain {task.domain} {why}, so a server cannot re-derive the "
                         "task; export with --label-key-file and serve with the same key")
    label = {**labels.make_label(task, key=key), "role": role}
    return json.dumps(label, ensure_ascii=False, sort_keys=True)


def role_of(label: Any) -> str:
    """The role of a decoded label (a dict): ``train`` only when it says so, else ``eval``."""
    return "train" if isinstance(label, dict) and label.get("role") == "train" else "eval"


def default_role(split: str) -> str:
    """Rows of the train split are for training; every other split is held out."""
    return "train" if split == "train" else "eval"


def as_messages(prompt: Any) -> list[dict[str, str]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [{"role": str(m.get("role", "user")), "content": str(m.get("content", ""))}
            for m in prompt]


def rows(tasks: list[Task], role: str = "train", key: bytes | None = None,
         stochastic: frozenset[str] = frozenset()) -> Iterator[dict[str, Any]]:
    """OpenRLHF prompt rows for ``tasks`` (see the module docstring for the prompt type and the
    labels); ``stochastic`` names domains whose tasks cannot be regenerated."""
    chat = any(not isinstance(t.prompt, str) for t in tasks)
    for task in tasks:
        yield {"prompt": as_messages(task.prompt) if chat else task.prompt,
               "label": label_of(task, role, key, stochastic=task.domain in stochastic),
               "datasource": task.domain, "gold": task.gold}


def stochastic_domains(tasks: list[Task], registry: Registry) -> frozenset[str]:
    """The domains of ``tasks`` whose manifests say their sampling cannot be repeated."""
    return frozenset(d for d in {t.domain for t in tasks}
                     if registry.manifest(d).data["determinism"] != "seeded")


def export_tasks(mixture: str | os.PathLike[str] | dict[str, Any], n: int, registry: Registry,
                 split: str | None = None, seed: int | None = None,
                 start: int = 0) -> tuple[list[Task], dict[str, int]]:
    """The tasks of an export and the per-domain counts (see the module docstring)."""
    from rlhub.scheduler import Scheduler, load_mixture

    config = load_mixture(mixture, registry)
    weights = Scheduler.from_config(config, registry).weights()
    counts = largest_remainder(n, weights)
    split = split or config["split"]
    seed = config["seed"] if seed is None else seed
    tasks: list[Task] = []
    for domain_id, k in counts.items():
        if k:
            tasks += registry.get(domain_id).sample(k, split=split, seed=seed, start=start)
    random.Random(f"rlhub-export/{seed}/{split}/{n}").shuffle(tasks)
    return tasks, counts


def write_jsonl(path: str | os.PathLike[str], tasks: list[Task], role: str = "train",
                key: bytes | None = None, stochastic: frozenset[str] = frozenset()) -> int:
    """Write the rows atomically (a temp file renamed into place); returns the row count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    count = 0
    with open(tmp, "w", encoding="utf-8") as fh:
        for row in rows(tasks, role, key, stochastic):
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    os.replace(tmp, path)
    return count
