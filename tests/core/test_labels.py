"""Labels: a reward server verifies only tasks it can re-derive or has signed."""

from __future__ import annotations

import json
import types

import pytest
import toyplug

from rlhub import LabelError, Task, hookimpl
from rlhub.labels import (
    At,
    LabelGate,
    at_from_id,
    canonical,
    label_json,
    load_key,
    make_label,
    sign,
)

KEY = b"0123456789abcdef0123456789abcdef"


@pytest.fixture
def reg(rlhub_registry):
    return rlhub_registry(plugins=[toyplug])


@pytest.fixture
def gate(reg):
    return LabelGate(reg, key=KEY)


def genuine(reg, index=0):
    return reg.get("toy/reverse-v1").task("train", 0, index)


def refused(gate, label) -> str:
    with pytest.raises(LabelError) as exc:
        gate.open(label)
    return str(exc.value)


def test_a_genuine_label_is_accepted_from_its_task_id_or_its_coordinates(reg, gate):
    task = genuine(reg, 3)
    assert gate.open(make_label(task)) == task
    assert gate.open(label_json(task, at=At("train", 0, 3))) == task
    renamed = Task.from_dict({**task.to_dict(), "id": "custom"})
    assert at_from_id(renamed) is None
    assert refused(gate, make_label(renamed, at=At("train", 0, 3))).startswith(
        "label: forged: the task differs")


def test_a_label_carrying_its_own_answer_is_refused_as_forged(reg, gate):
    task, other = genuine(reg, 0), genuine(reg, 1)
    forged = Task.from_dict({**task.to_dict(), "answer": other.answer, "gold": other.gold})
    assert refused(gate, make_label(forged)) == (
        "label: forged: the task differs from the one toy/reverse-v1 generates at (split 'train', "
        "seed 0, index 0)")
    extra = Task.from_dict({**task.to_dict(), "meta": {"tests": "assert True"}})
    assert "forged" in refused(gate, make_label(extra))


def test_signatures_are_checked_with_the_servers_key(reg, gate):
    task = genuine(reg)
    forged = Task.from_dict({**task.to_dict(), "answer": "x"})
    assert gate.open(make_label(forged, key=KEY)).answer == "x"  # the key holder vouched for it
    assert refused(gate, make_label(forged, key=b"another key, not the server's")) == (
        "label: forged: the signature does not match the label's task")
    copied = make_label(forged)
    copied["sig"] = make_label(task, key=KEY)["sig"]
    assert "signature does not match" in refused(gate, copied)
    keyless = LabelGate(gate.registry, key=None)
    assert "holds no label key" in refused(keyless, make_label(task, key=KEY))


def test_a_signature_covers_the_task_as_it_looks_after_json(reg):
    task = genuine(reg)
    label = make_label(task, key=KEY)
    again = json.loads(json.dumps(label))
    assert sign(again["domain"], again["task"], KEY) == label["sig"]


@pytest.mark.parametrize("value", [
    {"b": [1, 2.5, -0.0, 1e300, True, None], "a": {"z": "é\u2603\ud800", "y": []}},
    {"meta": {"tests": "assert f(1) == 2\n", "n": 10**30}, "prompt": [{"role": "user"}]},
])
def test_a_value_parsed_from_json_has_the_same_canonical_bytes_without_the_round_trip(value):
    parsed = json.loads(json.dumps(value))
    assert canonical(parsed, parsed=True) == canonical(parsed) == canonical(value)
    assert sign("d", parsed, KEY, parsed=True) == sign("d", value, KEY)


def test_a_label_sent_as_json_text_is_checked_as_strictly_as_an_object(reg, gate):
    task = genuine(reg, 2)
    for label in (make_label(task, key=KEY), make_label(task)):
        assert gate.open(json.dumps(label)) == task
        label["task"]["answer"] = "x"
        assert "forged" in refused(gate, json.dumps(label))


def test_an_unsigned_label_without_coordinates_cannot_be_rederived(reg, gate):
    task = Task.from_dict({**genuine(reg).to_dict(), "id": "my-own-task"})
    assert refused(gate, make_label(task)) == (
        "label: unsigned and without coordinates ('at' or a domain:split:seed:index task id), "
        "so the task cannot be re-derived")


def test_a_stochastic_domains_labels_must_be_signed(rlhub_registry):
    plugin = types.ModuleType("dice")
    plugin.PLUGIN_NAME = "dice"
    plugin.rlhub_domains = hookimpl(lambda: [{
        **toyplug.manifest("rolls", determinism="stochastic"), "id": "dice/rolls-v1"}])
    reg = rlhub_registry(plugins=[plugin])
    task = reg.get("dice/rolls-v1").task("train", 0, 0)
    gate = LabelGate(reg, key=KEY)
    assert "is stochastic" in refused(gate, make_label(task))
    assert gate.open(make_label(task, key=KEY)) == task


def test_domains_outside_the_served_set_are_refused(reg):
    gate = LabelGate(reg, key=KEY, domains={"toy/copy-v1"})
    assert refused(gate, make_label(genuine(reg))) == (
        "label: domain 'toy/reverse-v1' is not served here (1 domains are); the operator can "
        "add it with --allow-domain")
    assert refused(gate, {"domain": "nope/x-v1", "task": {"id": "a", "domain": "nope/x-v1",
                                                          "prompt": "p"}}).startswith(
        "label: domain 'nope/x-v1' is not served")


@pytest.mark.parametrize("label", [
    None, 7, "{bad json", "[1, 2]", {"task": "x"}, {"domain": "toy/reverse-v1"},
    {"domain": "toy/copy-v1", "task": {"id": "a", "domain": "toy/reverse-v1", "prompt": "p"}},
    {"task": {"id": 1, "domain": "toy/reverse-v1", "prompt": "p"}},
    {"task": {"id": "toy/reverse-v1:train:0:0", "domain": "toy/reverse-v1", "prompt": "p"},
     "at": {"split": "train", "seed": "0", "index": 0}},
    {"task": {"id": "toy/reverse-v1:train:0:0", "domain": "toy/reverse-v1", "prompt": "p"},
     "sig": 5},
    '{"task": ' + "[" * 100_000 + "]" * 100_000 + "}",
])
def test_malformed_labels_are_refused_with_a_label_error_never_a_crash(gate, label):
    assert refused(gate, label).startswith("label: ")


def test_a_label_nested_deeper_than_the_encoder_can_go_is_refused(reg, gate):
    deep: object = "x"
    for _ in range(100_000):
        deep = [deep]
    task = {**genuine(reg).to_dict(), "meta": {"x": deep}}
    assert "not a well-formed task" in refused(gate, {"task": task})


def test_regenerated_tasks_are_cached_per_coordinates(reg, gate):
    task = genuine(reg)
    for _ in range(5):
        gate.open(make_label(task))
    assert gate._regenerate.cache_info().hits >= 4


def test_an_admitted_label_text_is_remembered_and_a_refused_one_is_checked_every_time(reg, gate):
    task = genuine(reg, 4)
    text = label_json(task)
    assert gate.recall(text) is None
    admitted = gate.admitted(text)
    assert gate.recall(text) == admitted and gate.recall(make_label(task)) is None
    forged = json.loads(text)
    forged["task"]["answer"] = "x"
    for _ in range(2):
        assert "forged" in refused(gate, json.dumps(forged))
        assert gate.recall(json.dumps(forged)) is None
    signed = label_json(task, key=b"another key, not the server's")
    assert "signature does not match" in refused(gate, signed) and gate.recall(signed) is None


def test_remembered_labels_are_bounded_in_characters_oldest_first(reg):
    texts = [label_json(genuine(reg, i)) for i in range(80)]
    budget = 64 * max(map(len, texts))
    gate = LabelGate(reg, key=KEY, remember_chars=budget)
    for text in texts:
        gate.open(text)
    kept = [text for text in texts if gate.recall(text) is not None]
    assert texts[0] not in kept and kept == texts[-len(kept):]
    assert budget - max(map(len, texts)) < sum(map(len, kept)) <= budget
    longest = max(texts, key=len)
    stingy = LabelGate(reg, key=KEY, remember_chars=budget - 64)  # it is over a 64th of that
    stingy.open(longest)
    assert stingy.recall(longest) is None


def test_the_label_key_comes_from_a_file_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("RLHUB_LABEL_KEY", raising=False)
    assert load_key() is None
    monkeypatch.setenv("RLHUB_LABEL_KEY", "from-the-environment")
    assert load_key() == b"from-the-environment"
    path = tmp_path / "key"
    path.write_bytes(b"short\n")
    with pytest.raises(LabelError, match="expected at least 16 bytes of secret, found 5"):
        load_key(path)
    path.write_bytes(KEY + b"\n")
    assert load_key(path) == KEY
