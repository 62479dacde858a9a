"""Data-only domain files: datasets in JSONL, JSONL.GZ, Parquet or fsspec URLs, field mappings,
splits, and clear errors for malformed files."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlhub import ManifestError, Registry
from rlhub.testing import check_domain

ROWS = [{"qid": f"q{i}", "question": f"What is {i} + {i}?", "ans": str(2 * i)} for i in range(40)]


def write_domain(tmp_path, dataset, **extra):
    spec = {"id": "mydata/double-v1", "dataset": dataset,
            "fields": {"id": "qid", "prompt": "question", "answer": "ans"},
            "verifier": "math", **extra}
    path = tmp_path / "double.yaml"
    path.write_text(json.dumps(spec))  # JSON is YAML
    return path


def jsonl(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz", "parquet"])
def test_a_data_only_domain_works_like_a_registered_one(tmp_path, fmt):
    data = tmp_path / "data" / f"rows.{fmt}"
    data.parent.mkdir()
    if fmt == "jsonl":
        data.write_text(jsonl(ROWS))
    elif fmt == "jsonl.gz":
        data.write_bytes(gzip.compress(jsonl(ROWS).encode()))
    else:
        pq.write_table(pa.Table.from_pylist(ROWS), data)
    path = write_domain(tmp_path, f"data/rows.{fmt}")  # relative to the YAML file
    reg = Registry(domain_files=[path], autoload=False)
    domain = reg.get("mydata/double-v1")
    task = domain.task("train", 0, 3)
    assert (task.id, task.answer) == ("mydata/double-v1:q3", "6")
    assert domain.verify(task, "\\boxed{6}").passed
    assert check_domain(domain, n=3, across_processes=False) == []


def test_fsspec_urls_and_the_environment_path_are_honoured(tmp_path, monkeypatch):
    import fsspec

    with fsspec.open("memory://rlhub-test/rows.jsonl", "w") as fh:
        fh.write(jsonl(ROWS))
    path = write_domain(tmp_path, "memory://rlhub-test/rows.jsonl")
    monkeypatch.setenv("RLHUB_DOMAINS_PATH", str(tmp_path))
    reg = Registry(autoload=False)
    assert reg.manifest("mydata/double-v1").plugin == "mydata"
    assert reg.get("mydata/double-v1").task("test", 0, 0).answer == "0"
    assert reg.manifest("mydata/double-v1").source == str(path)


def test_a_test_fraction_holds_rows_out_of_training(tmp_path):
    (tmp_path / "rows.jsonl").write_text(jsonl(ROWS))
    path = write_domain(tmp_path, "rows.jsonl", split={"test_fraction": 0.25})
    domain = Registry(domain_files=[path], autoload=False).get("mydata/double-v1")
    train = {t.id for t in domain.sample(200, split="train")}
    test = {t.id for t in domain.sample(200, split="test")}
    assert train and test and not train & test and len(train | test) == 40


def test_seeds_permute_rows(tmp_path):
    (tmp_path / "rows.jsonl").write_text(jsonl(ROWS))
    domain = Registry(domain_files=[write_domain(tmp_path, "rows.jsonl")],
                      autoload=False).get("mydata/double-v1")
    assert [t.id for t in domain.sample(5, seed=0)] != [t.id for t in domain.sample(5, seed=1)]
    assert domain.sample(5, seed=1) == domain.sample(5, seed=1)


def test_a_malformed_domain_file_is_reported_with_file_and_field(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: mydata/x-v1\ndataset: rows.jsonl\nfields: {question: q}\nverifier: math\n")
    reg = Registry(domain_files=[bad], autoload=False)
    assert reg.ids() == []
    (err,) = reg.errors
    assert err.cause == (f"domain file {bad}, domain 'mydata/x-v1': field fields: 'prompt' is a "
                         "required property; field fields: Additional properties are not allowed "
                         "('question' was unexpected)")
    assert "field fields" in capsys.readouterr().err


def test_a_yaml_syntax_error_is_reported(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: [unclosed\n")
    (err,) = Registry(domain_files=[bad], autoload=False).errors
    assert err.cause.startswith(f"domain file {bad}: expected YAML, found a syntax error")


def test_missing_dataset_columns_are_named(tmp_path):
    (tmp_path / "rows.jsonl").write_text(jsonl([{"qid": "1", "question": "?"}]))
    domain = Registry(domain_files=[write_domain(tmp_path, "rows.jsonl")],
                      autoload=False).get("mydata/double-v1")
    with pytest.raises(ManifestError, match=r"^domain 'mydata/double-v1': dataset .*rows\.jsonl "
                       r"line 1: expected the columns \['ans'\] \(from fields and split\), found "
                       r"\['qid', 'question'\]$"):
        domain.task("train", 0, 0)


def test_python_tests_rows_run_their_check_against_the_entry_point(tmp_path):
    rows = [{"id": "p1", "prompt": "def inc(x):\n    \"\"\"Add one.\"\"\"\n",
             "test": "def check(candidate):\n    assert candidate(1) == 2\n", "fn": "inc",
             "solution": "    return x + 1\n"}]
    (tmp_path / "code.jsonl").write_text(jsonl(rows))
    path = tmp_path / "code.yaml"
    path.write_text(json.dumps({
        "id": "mycode/inc-v1", "dataset": "code.jsonl",
        "fields": {"id": "id", "prompt": "prompt", "tests": "test", "entry_point": "fn",
                   "gold": "solution"},
        "verifier": {"name": "python-tests", "options": {"include_prompt": True}}}))
    domain = Registry(domain_files=[path], autoload=False).get("mycode/inc-v1")
    task = domain.task("train", 0, 0)
    assert domain.verify(task, task.gold).passed
    assert not domain.verify(task, "    return x\n").passed
