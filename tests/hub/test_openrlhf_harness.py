"""Run OpenRLHF 0.11.2's own code on a CPU box, with only its GPU stack stubbed.

This file is both a pytest module (checking the stubs themselves) and a script run in a child
process by the other OpenRLHF tests, so the stubs never reach the pytest process::

    python test_openrlhf_harness.py parse '[["--actor.model_name_or_path", ...], ...]'
    python test_openrlhf_harness.py experience outputs.json

``parse`` runs ``openrlhf.cli.train_ppo_ray`` as ``__main__`` (its argparse and every validation
assert) up to ``ray.init`` once per argument list, and prints one JSON result per list: the parsed,
validated arguments, or the exit status and stderr when argparse or an assert refused them. ``experience`` feeds executor outputs through
``SamplesGenerator._process_response_into_experience``, ``Experience.concat_experiences`` and
``split_experience_batch`` and prints what came out.

Stubbed: ``ray``, ``vllm``, ``deepspeed``, ``flash_attn`` and ``peft`` (the GPU training stack that
OpenRLHF imports at module level and that cannot be installed here). Every other module, OpenRLHF's
and ours, is real.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

STUBBED = ("ray", "vllm", "deepspeed", "flash_attn", "peft")
HARNESS = Path(__file__).resolve()


class ReachedRayInit(Exception):
    """Raised by the stub ``ray.init``: argument parsing and validation are over."""


class Stub(type):
    """A class whose attributes, calls and instances are stubs; as a decorator it is a no-op."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Stub(name, (), {})

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return Stub("instance", (), {})


class StubModule(types.ModuleType):
    """A module whose every public attribute is a :class:`Stub`."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Stub(name, (), {})


class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves :class:`StubModule` s for the packages in :data:`STUBBED` and nothing else."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = StubModule(spec.name)
        module.__path__ = []  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ == "ray":
            module.is_initialized = lambda: False  # type: ignore[attr-defined]
            module.init = _raise_reached  # type: ignore[attr-defined]


def _raise_reached(*args: Any, **kwargs: Any) -> None:
    raise ReachedRayInit()


def plain(obj: Any) -> Any:
    """OpenRLHF's nested argparse namespaces as JSON-able dicts."""
    if isinstance(obj, types.SimpleNamespace) or hasattr(obj, "__dict__"):
        return {k: plain(v) for k, v in vars(obj).items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj if isinstance(obj, (str, int, float, bool, type(None))) else repr(obj)


def parse(argv: list[str]) -> dict[str, Any]:
    """Run ``train_ppo_ray`` as ``__main__`` with ``argv``; the validated args at ``ray.init``."""
    import contextlib
    import inspect
    import io
    import runpy

    sys.argv = ["train_ppo_ray.py", *argv]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            runpy.run_module("openrlhf.cli.train_ppo_ray", run_name="__main__")
    except SystemExit as exc:
        return {"reached": "exit", "status": exc.code, "stderr": err.getvalue()[-2000:]}
    except AssertionError as exc:
        return {"reached": "assert", "message": str(exc)}
    except ReachedRayInit:
        train = next(f.frame for f in inspect.trace() if f.function == "train")
        return {"reached": "ray.init", "args": plain(train.f_locals["args"])}
    return {"reached": "end"}


def experience(outputs: list[dict[str, Any]], max_len: int) -> dict[str, Any]:
    """Executor outputs → Experiences → one batch → single samples, as OpenRLHF does."""
    from openrlhf.trainer.ppo_utils.experience import Experience, split_experience_batch
    from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator

    for out in outputs:
        out["action_ranges"] = [tuple(r) for r in out["action_ranges"]]
    items = [SamplesGenerator._process_response_into_experience(None, out, max_len=max_len)
             for out in outputs]
    batch = Experience.concat_experiences(items, pad_token_id=0)
    singles = split_experience_batch(batch)
    return {"samples": len(singles),
            "rewards": [float(e.rewards.flatten()[0]) for e in singles],
            "scores": [float(e.scores.flatten()[0]) for e in singles],
            "action_tokens": [int(e.action_mask.sum()) for e in singles],
            "info_keys": sorted(batch.info)}


def run(command: str, payload: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
    """Run this file as a child process (``parse`` or ``experience``)."""
    return subprocess.run([sys.executable, str(HARNESS), command, payload], capture_output=True, check=False,
                          text=True, timeout=timeout)


def main() -> None:
    sys.meta_path.insert(0, StubFinder())
    command, payload = sys.argv[1], sys.argv[2]
    if command == "parse":
        print(json.dumps([parse(argv) for argv in json.loads(payload)]))
    elif command == "experience":
        data = json.loads(Path(payload).read_text())
        print(json.dumps(experience(data["outputs"], data["max_len"])))
    else:
        raise SystemExit(f"expected the command parse or experience, found {command!r}")


def test_the_stub_finder_serves_only_the_gpu_stack() -> None:
    finder = StubFinder()
    assert finder.find_spec("vllm.inputs", None) is not None
    assert finder.find_spec("deepspeed", None) is not None
    assert finder.find_spec("torch", None) is None
    assert finder.find_spec("openrlhf.utils.agent", None) is None
    assert finder.find_spec("rlhub", None) is None


def test_a_stub_used_as_a_decorator_leaves_the_class_alone() -> None:
    module = StubModule("ray")

    @module.remote
    class Actor:
        pass

    assert Actor.__name__ == "Actor"


if __name__ == "__main__":
    main()
