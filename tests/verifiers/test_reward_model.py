"""The ``reward-model`` verifier with a tiny sequence-classification model built and saved here."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest
import rlhub
from rlhub import Task, VerifierError
from rlhub.plugins import Registry
from rlhub.verifiers.reward_model import Mapping

SERVICES = rlhub.registry().services

WORDS = ("the", "a", "is", "are", "plants", "water", "light", "sun", "oxygen", "glucose", "carbon",
         "dioxide", "make", "use", "green", "leaves", "energy", "sugar", "air", "photosynthesis",
         "explain", "how", "do", "what", "why", "good", "bad", "answer")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer BERT reward model (one logit) and a word-level tokenizer, saved to disk."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    vocab = {w: i for i, w in enumerate([*specials, *WORDS])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]",
                                  cls_token="[CLS]", sep_token="[SEP]")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                        num_labels=1, pad_token_id=0)
    model = BertForSequenceClassification(config).eval()
    path = tmp_path_factory.mktemp("tiny-rm")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def rm(model_dir: Path, **options):
    return SERVICES.verifier("reward-model", {"path": str(model_dir), "device": "cpu", **options})


TASK = Task("p1", "toy/rm-v1", "explain how plants make sugar")


def test_the_saved_model_scores_completions_into_the_unit_interval(model_dir):
    v = rm(model_dir)
    a = v.check(TASK, "plants use light water and carbon dioxide to make glucose")
    b = v.check(TASK, "bad answer")
    for verdict in (a, b):
        assert 0.0 < verdict.components["reward_model"] < 1.0
        logit = verdict.components["reward_model_logit"]
        assert verdict.components["reward_model"] == pytest.approx(1 / (1 + math.exp(-logit)))
    assert a.components != b.components
    assert v.check(TASK, "bad answer") == b  # deterministic


def test_concurrent_calls_are_micro_batched_and_match_single_calls(model_dir):
    texts = [" ".join(WORDS[i:i + 3 + i % 7]) for i in range(12)]
    single = [rm(model_dir, batch_size=1).check(TASK, t).components["reward_model_logit"]
              for t in texts]
    v = rm(model_dir, batch_size=8, max_wait_ms=100)
    results: dict[int, float] = {}

    def call(i: int) -> None:
        results[i] = v.check(TASK, texts[i]).components["reward_model_logit"]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(v.service().batches) > 1
    assert [results[i] for i in range(len(texts))] == pytest.approx(single, abs=1e-5)


def test_long_completions_are_truncated_to_max_length(model_dir):
    verdict = rm(model_dir, max_length=64).check(TASK, "plants " * 50_000)
    assert 0.0 <= verdict.components["reward_model"] <= 1.0


@pytest.mark.parametrize(("mapping", "x", "expected"), [
    ({"kind": "sigmoid"}, 0.0, 0.5),
    ({"kind": "sigmoid", "scale": 2.0, "shift": -2.0}, 1.0, 0.5),
    ({"kind": "affine", "scale": 0.25, "shift": 0.5}, 1.0, 0.75),
    ({"kind": "affine", "scale": 1.0}, 5.0, 1.0),
    ({"kind": "clip", "lo": -2.0, "hi": 2.0}, 0.0, 0.5),
    ({"kind": "clip", "lo": -2.0, "hi": 2.0}, -9.0, 0.0),
    ({"kind": "sigmoid"}, float("nan"), 0.0),
    ({"kind": "sigmoid"}, float("inf"), 1.0),
    ({"kind": "sigmoid"}, -1e6, 0.0),
])
def test_mappings_take_any_logit_into_the_unit_interval(mapping, x, expected):
    assert Mapping.parse(mapping)(x) == pytest.approx(expected)


def test_an_affine_mapping_moves_the_score(model_dir):
    verdict = rm(model_dir, mapping={"kind": "affine", "scale": 0.0, "shift": 0.9}).check(TASK, "a")
    assert verdict.components["reward_model"] == pytest.approx(0.9) and verdict.passed


@pytest.mark.parametrize(("options", "message"), [
    ({}, "expected options.path (a trusted manifest), options.endpoint naming a reward-model"),
    ({"path": "x", "mapping": {"kind": "tanh"}}, "expected mapping.kind in sigmoid|affine|clip"),
    ({"path": "x", "mapping": {"kind": "clip", "lo": 1, "hi": 1}}, "clip mapping needs lo < hi"),
])
def test_bad_options_fail_at_construction(options, message):
    with pytest.raises(VerifierError) as err:
        SERVICES.verifier("reward-model", options)
    assert message in str(err.value)


def test_a_missing_model_directory_is_a_clear_recorded_error(tmp_path):
    domain_file = _domain_file(tmp_path, tmp_path / "no-such-model")
    reg = Registry(domain_files=[domain_file], autoload=False)
    d = reg.get("rmtest/answers-v1")
    score = d.verify(d.sample(1)[0], "plants")
    assert score.reward == 0.0
    assert "reward-model: expected a local save_pretrained directory" in score.error


def test_a_data_only_domain_uses_the_reward_model_with_its_default_reward(model_dir, tmp_path):
    reg = Registry(domain_files=[_domain_file(tmp_path, model_dir)], autoload=False)
    d = reg.get("rmtest/answers-v1")
    assert list(d.manifest.components) == ["reward_model"] and d.manifest.data["gold"] is False
    score = d.verify(d.sample(1)[0], "plants use light")
    assert score.error is None and 0.0 < score.reward < 1.0
    assert score.reward == score.components["reward_model"]


def _domain_file(tmp_path: Path, model: Path) -> Path:
    rows = [{"id": str(i), "q": f"explain how plants use {w}"} for i, w in enumerate(WORDS[:6])]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = tmp_path / "rm.yaml"
    path.write_text(f"id: rmtest/answers-v1\ndataset: rows.jsonl\nfields: {{id: id, prompt: q}}\n"
                    "verifier: {name: reward-model, options: "
                    f"{{path: '{model}', device: cpu}}}}\n")
    return path
