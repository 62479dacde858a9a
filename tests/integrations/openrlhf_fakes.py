"""The two fakes the OpenRLHF tests allow: a vLLM engine and Ray, faithful where OpenRLHF looks.

:class:`FakeEngine` stands for ``vllm.AsyncLLMEngine`` behind OpenRLHF's ``RolloutRayActor``. It
answers from a script (the "model", :class:`ScriptedModel`) and ends its output the way vLLM's
v1 detokenizer does (``vllm/v1/engine/detokenizer.py``): when generation stops on a stop token
(the tokenizer's EOS or another ``stop_token_ids`` entry) that token is the last of ``token_ids``
but is left out of ``text``; the text is the ``tokenizers`` library's decode of the ids (vLLM's
``DecodeStream``: no ``clean_up_tokenization_spaces``); an output cut at ``max_tokens`` has
``finish_reason == "length"`` and no stop token.

The fake Ray runs each actor on an event loop of its own thread and pickles every argument and
result on the way through, as Ray serialises them: a ``generate_responses`` call therefore hands
its ``n`` executions one ``sampling_params`` object of its own, exactly as on a cluster.

:func:`install` puts both into ``sys.modules`` (and import-only placeholders for the GPU training
stack OpenRLHF imports but that cannot be installed here: deepspeed, flash_attn, peft). It is only
ever called in a child process (``test_openrlhf_harness.py``), never in the pytest process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.abc
import importlib.machinery
import json
import os
import pickle
import sys
import threading
import types
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: Imported by OpenRLHF's training modules, never called by the code the tests run.
IMPORT_ONLY = ("deepspeed", "flash_attn", "peft")


# -- vLLM ----------------------------------------------------------------------------------------


@dataclass
class SamplingParams:
    """The fields of ``vllm.SamplingParams`` that OpenRLHF sets and the engine reads."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int | None = 16
    min_tokens: int = 0
    skip_special_tokens: bool = True
    logprobs: int | None = None
    stop_token_ids: list[int] | None = None
    include_stop_str_in_output: bool = False


@dataclass
class Logprob:
    logprob: float


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool


@dataclass
class ScriptedModel:
    """Completions by rule: the first rule whose text occurs in the context answers, and its
    ``k``-th entry is used at the ``k``-th assistant turn (counted by ``turn_marker``). An entry
    that is a list is a sampled answer: its items are given in turn, call after call."""

    turn_marker: str
    rules: list[tuple[str, list[Any]]] = field(default_factory=list)
    default: list[Any] = field(default_factory=lambda: ["I do not know."])
    calls: Counter[tuple[int, int]] = field(default_factory=Counter)

    def complete(self, context: str) -> str:
        turn = max(0, context.count(self.turn_marker) - 1)
        rule = next((i for i, (text, _) in enumerate(self.rules) if text in context), -1)
        answers = self.rules[rule][1] if rule >= 0 else self.default
        answer = answers[min(turn, len(answers) - 1)]
        if isinstance(answer, list):
            self.calls[rule, turn] += 1
            answer = answer[(self.calls[rule, turn] - 1) % len(answer)]
        return str(answer)


class FakeEngine:
    """``vllm.AsyncLLMEngine`` for one model folder, answering from a :class:`ScriptedModel`."""

    def __init__(self, model_dir: str, model: ScriptedModel, stop_tokens: list[str] | None = None):
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = model
        names = [self.tokenizer.eos_token, *(stop_tokens or [])]
        self.stop_ids = {self.tokenizer.convert_tokens_to_ids(t) for t in names if t}
        self.inflight = 0
        self.output_processor = types.SimpleNamespace(
            get_num_unfinished_requests=lambda: self.inflight)

    @classmethod
    def from_engine_args(cls, args: Any) -> FakeEngine:
        script = json.loads(open(os.environ["RLHUB_FAKE_MODEL"]).read())  # noqa: SIM115
        model = ScriptedModel(script["turn_marker"], [tuple(r) for r in script["rules"]],
                              script.get("default") or ["I do not know."])
        return cls(args.kwargs["model"], model, script.get("stop_tokens"))

    async def is_sleeping(self) -> bool:
        return False

    async def generate(self, prompt: dict[str, Any], sampling_params: SamplingParams,
                       request_id: str) -> Any:
        self.inflight += 1
        try:
            await asyncio.sleep(0)
            yield self.output(list(prompt["prompt_token_ids"]), sampling_params, request_id)
        finally:
            self.inflight -= 1

    def output(self, prompt_ids: list[int], params: SamplingParams, request_id: str) -> Any:
        """One finished request, ended as vLLM ends it (see the module docstring)."""
        context = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        wanted = self.tokenizer(text=self.model.complete(context),
                                add_special_tokens=False)["input_ids"]
        stop_ids = self.stop_ids | set(params.stop_token_ids or [])
        ids, stopped = _generated(wanted, self.tokenizer.eos_token_id, stop_ids,
                                  params.max_tokens)
        shown = ids[:-1] if stopped and not params.include_stop_str_in_output else ids
        text = self.tokenizer.backend_tokenizer.decode(
            shown, skip_special_tokens=params.skip_special_tokens)
        logprobs = None if params.logprobs is None else [{t: Logprob(-0.5)} for t in ids]
        done = CompletionOutput(0, text, ids, None, logprobs, "stop" if stopped else "length",
                                ids[-1] if stopped and ids[-1] not in self.stop_ids else None)
        return RequestOutput(request_id, prompt_ids, [done], True)


class ActorView:
    """A :class:`FakeEngine` behind the ``generate`` of OpenRLHF's ``RolloutRayActor`` (token ids
    in, the final ``RequestOutput`` out), for tests that run an executor without the actor."""

    def __init__(self, engine: FakeEngine):
        self.engine = engine
        self.calls: list[tuple[list[int], Any]] = []

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any,
                       multi_modal_data: Any = None) -> Any:
        self.calls.append((list(prompt_token_ids), sampling_params))
        final = None
        async for final in self.engine.generate({"prompt_token_ids": prompt_token_ids},
                                                sampling_params, uuid.uuid4().hex):
            pass
        return final


def _generated(wanted: list[int], eos: int, stop_ids: set[int], max_tokens: int | None
               ) -> tuple[list[int], bool]:
    """The ids a model that means ``wanted`` then EOS gets out: up to the first stop token
    (kept), or cut at ``max_tokens``; and whether it stopped on a stop token."""
    ids = list(wanted)
    cut = next((i for i, t in enumerate(ids) if t in stop_ids), None)
    ids = ids[:cut + 1] if cut is not None else ids + [eos]
    if max_tokens is not None and len(ids) > max_tokens:
        return ids[:max_tokens], False
    return ids, True


def _engine_args(*args: Any, **kwargs: Any) -> Any:
    return types.SimpleNamespace(args=args, kwargs=kwargs)


# -- Ray -------------------------------------------------------------------------------------------


def _wire(value: Any) -> Any:
    """``value`` after the round trip through serialisation that Ray gives every argument."""
    return pickle.loads(pickle.dumps(value))


class ObjectRef:
    def __init__(self, future: concurrent.futures.Future[Any]):
        self.future = future


class _Actor:
    """One actor: its instance, lives on an event loop in a thread of its own."""

    def __init__(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.instance = cls.__new__(cls)
        self.call(cls.__init__, args, kwargs).future.result()  # sync or async, on its loop

    def call(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ObjectRef:
        args, kwargs = _wire(args), _wire(kwargs)

        async def run() -> Any:
            result = fn(self.instance, *args, **kwargs)
            return _wire(await result if asyncio.iscoroutine(result) else result)

        return ObjectRef(asyncio.run_coroutine_threadsafe(run(), self.loop))


class ActorHandle:
    def __init__(self, actor: _Actor, cls: type):
        self._actor, self._cls = actor, cls

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._cls, name)
        return types.SimpleNamespace(
            remote=lambda *a, **k: self._actor.call(fn, a, k))


class ActorClass:
    def __init__(self, cls: type):
        self.cls = cls

    def options(self, **_: Any) -> ActorClass:
        return self

    def remote(self, *args: Any, **kwargs: Any) -> ActorHandle:
        return ActorHandle(_Actor(self.cls, args, kwargs), self.cls)


def remote(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 1 and not kwargs and isinstance(args[0], type):
        return ActorClass(args[0])
    return lambda cls: ActorClass(cls)


def get(refs: Any, timeout: float | None = None) -> Any:
    if isinstance(refs, list):
        return [r.future.result(timeout) for r in refs]
    return refs.future.result(timeout)


def wait(refs: list[ObjectRef], num_returns: int = 1, timeout: float | None = None
         ) -> tuple[list[ObjectRef], list[ObjectRef]]:
    concurrent.futures.wait([r.future for r in refs], timeout,
                            concurrent.futures.FIRST_COMPLETED if num_returns == 1
                            else concurrent.futures.ALL_COMPLETED)
    ready = [r for r in refs if r.future.done()][:num_returns]
    return ready, [r for r in refs if r not in ready]


def put(value: Any) -> ObjectRef:
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_result(_wire(value))
    return ObjectRef(future)


def _placement_group(bundles: Any, strategy: str = "PACK", **_: Any) -> Any:
    return types.SimpleNamespace(bundle_specs=bundles, ready=lambda: put(True))


# -- installing ---------------------------------------------------------------------------------


class _ImportOnly(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Empty modules for :data:`IMPORT_ONLY`, and for the parts of Ray and vLLM that OpenRLHF
    imports but the fakes do not provide: every attribute is a placeholder class."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        top = name.split(".")[0]
        if top in IMPORT_ONLY or top in ("ray", "vllm"):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _Placeholders(spec.name)
        module.__path__ = []  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _Placeholders(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {"__init__": lambda self, *a, **k: None})


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = _Placeholders(name)
    module.__path__ = []  # type: ignore[attr-defined]
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def install(ray_init: Any = None) -> None:
    """Fake Ray and vLLM, and the import-only placeholders, in ``sys.modules``.

    ``ray_init`` replaces ``ray.init``, and Ray then reports itself uninitialised so that
    ``train_ppo_ray`` calls it (the ``parse`` command stops there).
    """
    sys.meta_path.insert(0, _ImportOnly())
    os.environ.setdefault("RAY_ADDRESS", "fake")
    ray = _module("ray", remote=remote, get=get, wait=wait, put=put,
                  init=ray_init or (lambda *a, **k: None),
                  is_initialized=lambda: ray_init is None, get_gpu_ids=lambda: [0])
    ray.util = _module("ray.util", placement_group_table=lambda pg: {"bundles_to_node_id": {}})
    _module("ray.util.placement_group", placement_group=_placement_group)
    _module("ray.util.scheduling_strategies",
            PlacementGroupSchedulingStrategy=lambda **k: types.SimpleNamespace(**k))
    _module("ray.util.queue")
    vllm = _module("vllm", __version__="0.29.0", SamplingParams=SamplingParams,
                   AsyncEngineArgs=_engine_args,
                   AsyncLLMEngine=types.SimpleNamespace(from_engine_args=FakeEngine.from_engine_args))
    vllm.inputs = _module("vllm.inputs", TokensPrompt=lambda **k: dict(k))
    vllm.utils = _module("vllm.utils", random_uuid=lambda: uuid.uuid4().hex)
