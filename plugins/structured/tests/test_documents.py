"""YAML and CSV checkers: true positives and the near misses a policy typically makes."""

import time

import pytest

import rlhub
from rlhub import Task
from rlhub_structured.tables import ColumnRule



def yaml_task(tree):
    return Task("t", "structured/yaml-config-v2", "p", answer=tree)


@pytest.fixture(scope="module")
def yaml_domain():
    return rlhub.registry().get("structured/yaml-config-v2")


@pytest.fixture(scope="module")
def csv_domain():
    return rlhub.registry().get("structured/csv-records-v1")


def test_yaml_with_the_right_keys_types_and_values_passes(yaml_domain):
    task = yaml_task({"version": "1.10", "port": 80, "debug": False, "tags": ["a", "b"]})
    score = yaml_domain.verify(task, "```yaml\nversion: '1.10'\nport: 80\ndebug: no\ntags: [a, b]\n```")
    assert score.passed and score.reward == 1.0


def test_an_unquoted_version_string_parses_as_a_number_and_fails_with_the_path(yaml_domain):
    task = yaml_task({"version": "1.10", "port": 80})
    score = yaml_domain.verify(task, "version: 1.10\nport: 80\n")
    assert not score.passed and score.components["fields"] == 0.5
    assert 'version: expected the string "1.10", found the number' in score.feedback


def test_an_extra_key_keeps_the_field_credit_but_fails_exactness(yaml_domain):
    score = yaml_domain.verify(yaml_task({"a": 1}), "a: 1\nb: 2\n")
    assert score.components == {"valid": 1.0, "fields": 1.0, "exact": 0.0}
    assert "b: unexpected key" in score.feedback


def test_nested_yaml_reports_a_missing_key_inside_a_list_item():
    domain = rlhub.registry().get("structured/yaml-nested-v2")
    task = yaml_task({"users": [{"name": "a", "role": "dev"}, {"name": "b", "role": "ops"}]})
    score = domain.verify(task, "users:\n- {name: a, role: dev}\n- {name: b}\n")
    assert not score.passed and "users[1].role: missing key" in score.feedback


def test_a_yaml_alias_bomb_is_rejected_quickly_without_raising(yaml_domain):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(12))
    started = time.perf_counter()
    score = yaml_domain.verify(yaml_task({"a": 1}), bomb)
    # refused before expanding the aliases (12 levels of 6-fold references)
    assert score.error is None and not score.passed and time.perf_counter() - started < 10.0


def test_a_yaml_bomb_under_an_expected_key_is_refused_before_anything_expands_it(yaml_domain):
    from rlhub.testing.probes_oversized import BILLION_LAUGHS

    started = time.perf_counter()
    score = yaml_domain.verify(yaml_task({"laughs": "text"}), f"```yaml\n{BILLION_LAUGHS}\n```")
    assert time.perf_counter() - started < 5.0  # expanding it would take minutes and gigabytes
    assert score.reward == 0 and score.failure == "answer"
    assert "expands to more than 5000 values through its anchors and aliases" in score.feedback


def test_a_yaml_document_that_contains_itself_is_refused(yaml_domain):
    score = yaml_domain.verify(yaml_task({"a": [1]}), "a: &x [1, *x]\n")
    assert score.reward == 0 and "anchors and aliases" in score.feedback


def records_task(header, cells):
    rules = [{"name": h, "kind": "exact", "values": [row[j] for row in cells]}
             for j, h in enumerate(header)]
    return Task("t", "structured/csv-records-v1", "p",
                answer={"header": header, "rows": len(cells), "rules": rules})


def test_csv_with_quoted_commas_and_exact_cells_passes(csv_domain):
    task = records_task(["id", "name", "score"], [["1", "Moreau, Alice", "7.50"]])
    score = csv_domain.verify(task, '```csv\nid,name,score\n1,"Moreau, Alice",7.50\n```')
    assert score.passed and score.reward == 1.0


def test_an_unquoted_comma_splits_the_cell_and_fails_the_row(csv_domain):
    task = records_task(["id", "name", "score"], [["1", "Moreau, Alice", "7.50"]])
    score = csv_domain.verify(task, "id,name,score\n1,Moreau, Alice,7.50\n")
    assert not score.passed and "row 1: expected 3 cells, found 4" in score.feedback


def test_a_wrong_header_or_row_count_is_named(csv_domain):
    task = records_task(["id", "score"], [["1", "7.50"], ["2", "1.00"]])
    header = csv_domain.verify(task, "id,Score\n1,7.50\n2,1.00\n")
    assert header.reward == 0.0 and "expected the header line id,score" in header.feedback
    short = csv_domain.verify(task, "id,score\n1,7.5\n")
    assert "expected 2 data rows, found 1" in short.feedback
    assert "score should be '7.50', found '7.5'" in short.feedback


@pytest.mark.parametrize("rule,good,bad", [
    (ColumnRule("id", "sequence"), "3", "03"),
    (ColumnRule("c", "enum", options=["x", "y"]), "y", "z"),
    (ColumnRule("p", "decimal", low=1, high=10), "10.00", "10.01"),
    (ColumnRule("d", "date", year=2024), "2024-02-29", "2023-02-28"),
    (ColumnRule("d", "date", year=2023), "2023-12-31", "2023-02-29"),
    (ColumnRule("b", "bool"), "false", "False"),
    (ColumnRule("n", "text"), "Blue lamp", "42"),
])
def test_column_rules_accept_valid_cells_and_reject_near_misses(rule, good, bad):
    row = 2 if rule.kind == "sequence" else 0
    assert rule.problem(good, row, []) is None
    assert rule.problem(bad, row, []).startswith(rule.name)


def test_generated_csv_golds_pass_and_a_broken_id_sequence_fails():
    domain = rlhub.registry().get("structured/csv-generate-v1")
    for seed in range(30):
        task = domain.task("train", seed, 0)
        assert domain.verify(task, task.gold).reward == 1.0
    broken = task.gold.replace("\n1,", "\n7,", 1)
    score = domain.verify(task, broken)
    assert not score.passed and "row 1: id should be 1" in score.feedback
