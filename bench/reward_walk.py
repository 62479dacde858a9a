"""The walk of one ``/get_reward`` sample: rlhub functions and files crossed, and serialisations.

One sample (a gold math answer with its signed label, as OpenRLHF sends it) is posted to the
server app in process (starlette's TestClient, the thread verifier pool); ``sys.setprofile`` and
``threading.setprofile`` trace every Python call made in every thread while that request runs.
Counted: the distinct functions and files of rlhub itself (``core/``, ``integrations/``, ``cli/``), those
of the domain's plugin, and each call of a serialiser (``json.dumps``/``loads``,
``dataclasses.asdict``, a ``to_dict``/``from_dict``) made from rlhub's code, outside another
serialiser. A warm-up request runs
first, so imports and caches are not counted. The figure is a count, not a time: it does not
depend on the machine's load. Issue 24 quotes it before and after its typed-values refactor: the
result keeps :data:`BEFORE` beside the figures measured now.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _util import Row, emit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OURS = tuple(str(ROOT / d) + "/" for d in ("core", "integrations", "cli"))
PLUGINS = str(ROOT / "plugins") + "/"
SERIALISERS = {"dumps", "loads", "asdict", "to_dict", "from_dict"}
DOMAIN = "math/arithmetic-l1-v2"
PROMPT = "<|im_start|>user\nsolve<|im_end|>\n<|im_start|>assistant\n"

#: The walk before issue 24's typed-values refactor: this bench run at commit 6bacc6e (its results
#: file there still held the first count, 74 functions and 127 calls in 15 files with 15
#: serialisations, made at 90961fe before the server's body limits and routing were merged).
BEFORE: dict[str, Any] = {
    "commit": "6bacc6e", "domain": DOMAIN,
    "rlhub": {"functions": 79, "files": 15, "calls": 134},
    "plugin": {"functions": 6, "files": 2, "calls": 6},
    "serialisations": 15,
    "serialised": {
        "Score.to_dict from verify_task": 1, "Task.from_dict from LabelGate._regenerated": 1,
        "Task.from_dict from _task": 1, "Task.from_dict from verify_task": 1,
        "Task.to_dict from LabelGate._regenerated": 1,
        "Task.to_dict from RewardService._verify_once": 1, "dumps from _handle": 1,
        "dumps from canonical": 2, "dumps from jsonable": 1,
        "loads from LabelGate._regenerated": 1, "loads from canonical": 1,
        "loads from jsonable": 1, "loads from parse": 1, "loads from parse_json_object": 1},
}


class Walk:
    """What the profiler saw while ``on``: functions and files, and serialiser calls."""

    def __init__(self) -> None:
        self.on = False
        self.functions: Counter[tuple[str, str]] = Counter()
        self.serialised: Counter[str] = Counter()

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call" or not self.on:
            return
        code, caller = frame.f_code, frame.f_back
        self.functions[(code.co_filename, code.co_qualname)] += 1
        if code.co_name in SERIALISERS and caller is not None \
                and caller.f_code.co_filename.startswith(OURS) \
                and caller.f_code.co_name not in SERIALISERS:  # asdict inside to_dict is one
            self.serialised[f"{code.co_qualname} from {caller.f_code.co_qualname}"] += 1

    def of(self, prefix: str | tuple[str, ...]) -> dict[str, Any]:
        found = [key for key in self.functions if key[0].startswith(prefix)]
        return {"functions": len(found), "files": len({f for f, _ in found}),
                "calls": sum(self.functions[k] for k in found)}


def request(client: Any, body: dict[str, Any]) -> float:
    answer = client.post("/get_reward", json=body)
    assert answer.status_code == 200, answer.text
    return float(answer.json()["rewards"][0])


def main() -> None:
    from starlette.testclient import TestClient

    from rlhub import registry
    from rlhub.integrations.openrlhf.export import label_of
    from rlhub.integrations.server.app import ServerConfig, create_app

    reg = registry()
    task = reg.get(DOMAIN).sample(1, split="train", seed=0)[0]
    body = {"query": [PROMPT + task.gold + "<|im_end|>"], "prompts": [PROMPT],
            "labels": [label_of(task)]}
    walk = Walk()
    threading.setprofile(walk)
    sys.setprofile(walk)
    with TestClient(create_app(ServerConfig(workers=1, allow_domains=(DOMAIN,)), reg)) as client:
        request(client, body)  # warm: imports, caches, the pool's thread
        walk.on = True
        reward = request(client, body)
        walk.on = False
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type]
    result = {"bench": "reward_walk", "domain": DOMAIN, "reward": reward,
              "rlhub": walk.of(OURS), "plugin": walk.of(PLUGINS),
              "serialisations": sum(walk.serialised.values()),
              "serialised": dict(sorted(walk.serialised.items())), "before": BEFORE}
    emit(result, table(result), "A count of one traced request, not a time, after issue 24's "
         f"typed-values refactor; 'before' is the same count at commit {BEFORE['commit']}.")


def walked(counts: dict[str, int]) -> str:
    return f"{counts['functions']} functions in {counts['files']} files ({counts['calls']} calls)"


def table(r: dict[str, Any]) -> list[Row]:
    before = r["before"]
    return [(f"one `/get_reward` sample ({r['domain']}, in process): rlhub functions crossed",
             walked(r["rlhub"]), f"before ({before['commit']}): {walked(before['rlhub'])}; the "
             f"domain's own code: {r['plugin']['functions']} functions"),
            ("serialisations of the task and verdict between the socket and the verifier",
             str(r["serialisations"]), f"before: {before['serialisations']}; bytes must leave "
             "the process only at HTTP")]


if __name__ == "__main__":
    main()
