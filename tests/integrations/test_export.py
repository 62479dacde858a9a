"""`rlhub export`: OpenRLHF prompt rows with exact domain proportions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from rlhub import Task, registry
from rlhub.errors import SchedulerError
from rlhub.integrations.openrlhf.export import export_tasks, largest_remainder, rows, write_jsonl
from rlhub.integrations.server.protocol import parse_label
from typer.testing import CliRunner

MIXTURE = {"strategy": "static", "seed": 4,
           "domains": {"math/arithmetic-l1-v2": 3.0, "instruct/lowercase-v3": 2.0,
                       "structured/json-schema-l1-v2": 2.0}}


@pytest.mark.parametrize(("n", "weights", "expected"), [
    (10, {"a": 1, "b": 1, "c": 1}, {"a": 4, "b": 3, "c": 3}),
    (7, {"a": 0.5, "b": 0.3, "c": 0.2}, {"a": 4, "b": 2, "c": 1}),
    (1000, {"a": 0.5, "b": 0.3, "c": 0.2}, {"a": 500, "b": 300, "c": 200}),
    (3, {"a": 0.0, "b": 1.0}, {"a": 0, "b": 3}),
    (0, {"a": 1.0}, {"a": 0}),
])
def test_largest_remainder_splits_n_exactly_by_weight(n: int, weights: dict,
                                                     expected: dict) -> None:
    counts = largest_remainder(n, weights)
    assert counts == expected and sum(counts.values()) == n


def test_largest_remainder_refuses_weights_without_mass() -> None:
    with pytest.raises(SchedulerError, match="expected non-negative weights with a positive sum"):
        largest_remainder(5, {"a": 0.0})


def test_an_export_has_exact_proportions_and_no_repeated_row() -> None:
    tasks, counts = export_tasks(MIXTURE, 70, registry())
    assert counts == {"math/arithmetic-l1-v2": 30, "instruct/lowercase-v3": 20,
                      "structured/json-schema-l1-v2": 20}
    assert Counter(t.domain for t in tasks) == counts
    assert len({t.id for t in tasks}) == 70


def test_every_row_carries_a_label_the_server_decodes_to_a_task_whose_gold_scores_max() -> None:
    tasks, _ = export_tasks(MIXTURE, 14, registry())
    for row in rows(tasks):
        assert isinstance(row["label"], str) and isinstance(row["prompt"], str)
        domain, task = parse_label(row["label"])
        assert domain == row["datasource"] == task.domain
        assert row["gold"] == task.gold
        score = registry().get(domain).verify(task, row["gold"])
        assert score.reward == registry().manifest(domain).reward_range[1]


def test_chat_prompts_make_every_prompt_a_message_list() -> None:
    plain = Task("x/y-v1:train:0:0", "x/y-v1", "hello")
    chat = Task("x/y-v1:train:0:1", "x/y-v1", [{"role": "system", "content": "s"},
                                               {"role": "user", "content": "u"}])
    prompts = [r["prompt"] for r in rows([plain, chat])]
    assert prompts == [[{"role": "user", "content": "hello"}],
                       [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]]


def test_the_export_command_writes_the_same_file_twice(tmp_path: Path) -> None:
    from rlhub.cli import app

    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps(MIXTURE))
    outs = []
    for name in ("one.jsonl", "two.jsonl"):
        result = CliRunner().invoke(app, ["export", "--mixture", str(mix), "-n", "9",
                                          "--out", str(tmp_path / name), "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout.strip().splitlines()[-1])["rows"] == 9
        outs.append((tmp_path / name).read_text())
    assert outs[0] == outs[1]
    first = json.loads(outs[0].splitlines()[0])
    assert sorted(first) == ["datasource", "gold", "label", "prompt"]


def test_write_jsonl_leaves_no_temporary_file(tmp_path: Path) -> None:
    tasks, _ = export_tasks(MIXTURE, 3, registry())
    assert write_jsonl(tmp_path / "d" / "p.jsonl", tasks) == 3
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["p.jsonl"]


def test_rows_of_a_held_out_split_are_eval_rows_and_train_rows_say_so(tmp_path: Path) -> None:
    from rlhub.cli import app

    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps(MIXTURE))

    def roles(*extra: str) -> set[str]:
        out = tmp_path / "rows.jsonl"
        result = CliRunner().invoke(app, ["export", "--mixture", str(mix), "-n", "4",
                                          "--out", str(out), *extra])
        assert result.exit_code == 0, result.output
        return {json.loads(json.loads(line)["label"])["role"]
                for line in out.read_text().splitlines()}

    assert roles() == {"train"}
    assert roles("--split", "test") == {"eval"}
    assert roles("--split", "test", "--role", "train") == {"train"}


def test_a_label_without_a_role_is_never_a_training_row() -> None:
    from rlhub.integrations.openrlhf.export import label_of, role_of

    task = Task("x/y-v1:train:0:0", "x/y-v1", "hello")  # an id with coordinates
    assert role_of(json.loads(label_of(task, "train"))) == "train"
    assert role_of({"domain": "x/y-v1", "task": task.to_dict()}) == "eval"
    assert role_of("not decoded") == "eval"
    with pytest.raises(SchedulerError, match=r"expected a role in \('train', 'eval'\)"):
        label_of(task, "both")
