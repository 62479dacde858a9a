"""Run OpenRLHF 0.11.2's own code on a CPU box, with only vLLM's engine and Ray faked.

This file is both a pytest module (checking the fakes themselves) and a script run in a child
process by the other OpenRLHF tests, so the fakes never reach the pytest process::

    python test_openrlhf_harness.py parse '[["--actor.model_name_or_path", ...], ...]'
    python test_openrlhf_harness.py experience outputs.json
    python test_openrlhf_harness.py rollout spec.json

``parse`` runs ``openrlhf.cli.train_ppo_ray`` as ``__main__`` (its argparse and every validation
assert) up to ``ray.init``, once per argument list. ``experience`` feeds executor outputs through
``SamplesGenerator._process_response_into_experience``, ``Experience.concat_experiences`` and
``split_experience_batch``. ``rollout`` runs OpenRLHF's rollout as its trainer does: the prompt
and eval datasets through ``PromptDataset`` with the tokenizer from ``get_tokenizer``, the engines
from ``create_vllm_engines`` (whose ``RolloutRayActor`` loads the agent with
``_load_agent_executor``), one ``SamplesGenerator.generate_samples`` batch (dynamic filtering
included) whose experiences go through ``RemoteExperienceMaker.split_rollout_samples`` and
``compute_advantages_and_returns``, and ``generate_eval_samples`` scored by ``compute_eval_metrics``.
Faked (:mod:`openrlhf_fakes`): the vLLM engine and Ray; deepspeed, flash_attn and peft are
import-only placeholders (imported by OpenRLHF's trainer modules, never called here).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

HERE = Path(__file__).resolve().parent
HARNESS = Path(__file__).resolve()
sys.path.insert(0, str(HERE))


class ReachedRayInit(Exception):
    """Raised by ``ray.init`` in ``parse``: argument parsing and validation are over."""


def _raise_reached(*args: Any, **kwargs: Any) -> None:
    raise ReachedRayInit()


def plain(obj: Any) -> Any:
    """OpenRLHF's nested argparse namespaces as JSON-able dicts."""
    if isinstance(obj, NS) or hasattr(obj, "__dict__"):
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


# -- rollout --------------------------------------------------------------------------------------


def rollout_args(spec: dict[str, Any]) -> Any:
    """The parts of ``train_ppo_ray``'s arguments that the rollout path reads."""
    band = spec.get("filter")
    return NS(
        data=NS(input_key="prompt", label_key="label", apply_chat_template=True,
                image_key="images", max_len=spec.get("max_len", 2048)),
        rollout=NS(batch_size=spec.get("batch", 2), n_samples_per_prompt=spec.get("n", 2),
                   micro_batch_size=64, vllm_generate_batch_size=None,
                   max_new_tokens=None),
        eval=NS(n_samples_per_prompt=spec.get("eval_n", 2), temperature=0.6),
        vllm=NS(enable_sleep=False),
        train=NS(dynamic_batch_enable=False),
        reward=NS(clip_range=(-10.0, 10.0), overlong_buffer_len=None,
                  stop_properly_penalty_coef=None),
        algo=NS(dynamic_filtering_enable=band is not None,
                dynamic_filtering_range=tuple(band or (0.0, 1.0)),
                advantage=NS(estimator=spec.get("estimator", "group_norm"),
                             is_correction_level="off", gamma=1.0, lambd=1.0,
                             no_std_norm=False)))


def loader(path: str | None, tokenizer: Any, strategy: Any) -> Any:
    """A dataset file as OpenRLHF's dataloader of prompts (batch 1, in file order)."""
    if not path:
        return None
    from datasets import load_dataset
    from openrlhf.datasets import PromptDataset
    from torch.utils.data import DataLoader

    data = PromptDataset(load_dataset("json", data_files=path)["train"], tokenizer, strategy)
    return DataLoader(data, batch_size=1, shuffle=False, collate_fn=data.collate_fn)


def describe(experiences: list[Any], tokenizer: Any) -> list[dict[str, Any]]:
    """What the tests look at in each single-sample experience."""
    rows = []
    for e in experiences:
        mask = e.action_mask.bool()
        adv = e.advantages[mask] if e.advantages is not None else None
        rows.append({
            "prompt": e.prompts[0], "label": e.labels[0],
            "reward": float(e.rewards.flatten()[0]),
            "score": None if e.scores is None else float(e.scores.flatten()[0]),
            "max_abs_advantage": None if adv is None else float(adv.abs().max()),
            "text": tokenizer.decode(e.sequences[e.attention_mask.bool()].tolist(),
                                     skip_special_tokens=False),
            "info": {k: float(v.flatten()[0]) for k, v in e.info.items()
                     if hasattr(v, "flatten") and v.numel()}})
    return rows


def advantages(rollout: list[Any], args: Any, tokenizer: Any) -> list[Any]:
    """OpenRLHF's reward shaping and group advantages over one rollout batch (no KL)."""
    import torch
    from openrlhf.trainer.ppo_utils.experience import split_experience_batch
    from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    from openrlhf.trainer.ppo_utils.kl_controller import FixedKLController

    maker = RemoteExperienceMaker.__new__(RemoteExperienceMaker)
    maker.strategy, maker.args, maker.tokenizer = NS(args=args), args, tokenizer
    maker.advantage_estimator, maker.kl_ctl = args.algo.advantage.estimator, FixedKLController(0.0)
    batches = maker.split_rollout_samples(rollout)
    for batch in batches:
        batch.kl = torch.zeros_like(batch.action_mask, dtype=torch.float32)
    return [one for batch in maker.compute_advantages_and_returns(batches)
            for one in split_experience_batch(batch)]


def rollout(spec: dict[str, Any]) -> dict[str, Any]:
    """One training batch and one evaluation, as OpenRLHF's trainer runs them (see the top)."""
    import os

    from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator
    from openrlhf.trainer.ray.vllm_engine import create_vllm_engines
    from openrlhf.utils.utils import get_tokenizer

    os.environ.update(spec.get("env", {}))
    args = rollout_args(spec)
    strategy = NS(args=args, print=lambda *a, **k: None, is_rank_0=lambda: True)
    tokenizer = get_tokenizer(spec["model_dir"], None, "left", strategy)
    kwargs = {"do_sample": True, "max_len": args.data.max_len, "max_new_tokens": None,
              "temperature": 1.0, "top_p": 1.0}
    out: dict[str, Any] = {}
    try:
        engines = create_vllm_engines(1, 1, spec["model_dir"], 0, False, False, True,
                                      args.data.max_len, agent_func_path=spec["agent"])
        gen = SamplesGenerator(strategy, loader(spec.get("train"), tokenizer, strategy),
                               loader(spec.get("eval"), tokenizer, strategy), tokenizer, engines)
        if spec.get("train"):
            samples, rate, consumed, _ = gen.generate_samples(**kwargs)
            out["train"] = {"samples": describe(advantages(samples, args, tokenizer), tokenizer)
                            if samples else [], "filter_pass_rate": rate,
                            "prompts_consumed": consumed}
        if spec.get("eval"):
            out["eval"] = evaluate(gen, args, kwargs, tokenizer)
    except Exception as exc:  # noqa: BLE001 - the test reads what stopped the job
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def evaluate(gen: Any, args: Any, kwargs: dict[str, Any], tokenizer: Any) -> dict[str, Any]:
    """``PPOTrainer.evaluate``'s generation and metrics."""
    from openrlhf.trainer.ppo_trainer import compute_eval_metrics

    n = args.eval.n_samples_per_prompt
    samples = gen.generate_eval_samples(**{**kwargs, "temperature": args.eval.temperature,
                                           "n_samples_per_prompt": n})
    return {"logs": compute_eval_metrics(gen.eval_dataloader, samples, n),
            "samples": describe(samples, tokenizer)}


def run(command: str, payload: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
    """Run this file as a child process (``parse``, ``experience`` or ``rollout``)."""
    return subprocess.run([sys.executable, str(HARNESS), command, payload], capture_output=True,
                          check=False, text=True, timeout=timeout)


def run_json(command: str, payload: str) -> Any:
    """The child's JSON answer (its last line); the child's stderr when it failed."""
    done = run(command, payload)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    import openrlhf_fakes

    command, payload = sys.argv[1], sys.argv[2]
    openrlhf_fakes.install(ray_init=_raise_reached if command == "parse" else None)
    if command == "parse":
        print(json.dumps([parse(argv) for argv in json.loads(payload)]))
    elif command == "experience":
        data = json.loads(Path(payload).read_text())
        print(json.dumps(experience(data["outputs"], data["max_len"])))
    elif command == "rollout":
        print(json.dumps(rollout(json.loads(Path(payload).read_text()))))
    else:
        raise SystemExit(f"expected the command parse, experience or rollout, found {command!r}")


# -- the fakes, checked against vLLM's behaviour ---------------------------------------------


def _engine(tokenizer_dir: str, completion: str) -> Any:
    from openrlhf_fakes import FakeEngine, ScriptedModel

    return FakeEngine(tokenizer_dir, ScriptedModel("assistant", default=[completion]))


def test_the_fake_engine_keeps_the_stop_token_in_the_ids_and_out_of_the_text(
        tmp_path: Path) -> None:
    import offline_tokenizers
    from openrlhf_fakes import SamplingParams

    folder = offline_tokenizers.build("qwen2", tmp_path / "qwen2")
    engine = _engine(str(folder), "x <")
    out = engine.output([1, 2], SamplingParams(max_tokens=50, skip_special_tokens=False), "r")
    done = out.outputs[0]
    im_end = engine.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert done.finish_reason == "stop" and done.token_ids[-1] == im_end
    assert done.text == "x <"
    cut = engine.output([1], SamplingParams(max_tokens=2, skip_special_tokens=False), "r")
    assert cut.outputs[0].finish_reason == "length" and im_end not in cut.outputs[0].token_ids


def test_the_fake_engine_stops_at_the_first_stop_token_the_model_emits(tmp_path: Path) -> None:
    import offline_tokenizers
    from openrlhf_fakes import SamplingParams

    folder = offline_tokenizers.build("llama3", tmp_path / "llama3")
    engine = _engine(str(folder), "ok<|eot_id|>and more")
    done = engine.output([1], SamplingParams(max_tokens=50, skip_special_tokens=False), "r")
    assert done.outputs[0].text == "ok"
    assert engine.tokenizer.decode(done.outputs[0].token_ids) == "ok<|eot_id|>"


def test_fake_ray_hands_each_call_its_own_copy_of_the_arguments() -> None:
    from openrlhf_fakes import ActorClass, get

    class Keeper:
        def __init__(self) -> None:
            self.last: Any = None

        async def same_as_last(self, value: Any) -> bool:
            same, self.last = value is self.last, value
            return same

    actor = ActorClass(Keeper).remote()
    shared = {"x": 1}
    assert get([actor.same_as_last.remote(shared), actor.same_as_last.remote(shared)]) == \
        [False, False]


if __name__ == "__main__":
    main()
