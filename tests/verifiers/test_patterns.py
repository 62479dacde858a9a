"""Patterns from data run on the linear-time engine: the regex verifier, JSON Schemas' pattern
and patternProperties, and data-only domains whose patterns the engine refuses at load time."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rlhub import Registry, Task
from rlhub.errors import ManifestError
from rlhub.verifiers.basic import JsonSchema, Regex
from rlhub.jsonschemas import validator
from rlhub.verifiers.patterns import PatternError, compile_pattern

EVIL = "(a+)+$"  # backtracks for minutes on forty a's and a '!' in Python's re
VICTIM = "a" * 40 + "!"


def finishes(fn: Any, seconds: float = 20.0) -> Any:
    """``fn()``'s result; fails when it has not returned within ``seconds`` (a daemon thread, so
    a backtracking ``re`` cannot hang the suite)."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"still running after {seconds:g} s"
    return box[0]


def task(answer: Any) -> Task:
    return Task("t-1", "mydata/p-v1", "Say it.", answer=answer, gold=None)


def test_a_backtracking_pattern_from_a_row_is_matched_in_linear_time():
    verdict = finishes(lambda: Regex({}).check(task(EVIL), VICTIM))
    assert not verdict.passed and verdict.components == {"match": 0.0}
    assert Regex({}).check(task(EVIL), "aaaa").passed


def test_json_schema_patterns_and_pattern_properties_are_matched_in_linear_time():
    schema = {"type": "object", "additionalProperties": False,
              "properties": {"s": {"type": "string", "pattern": "(x+x+)+y"}},
              "patternProperties": {EVIL: {"type": "integer"}}}
    check = JsonSchema({"schema": schema}).check
    verdict = finishes(lambda: check(task(None), json.dumps({"s": "x" * 40})))
    assert not verdict.passed and "does not match '(x+x+)+y'" in verdict.feedback
    verdict = finishes(lambda: check(task(None), json.dumps({VICTIM: 1})))
    assert not verdict.passed and f"{VICTIM!r} was unexpected" in verdict.feedback
    assert JsonSchema({"schema": schema}).check(task(None), '{"s": "xxy", "aaa": 2}').passed
    extra = JsonSchema({"schema": schema}).check(task(None), '{"s": "xxy", "b": 2}')
    assert not extra.passed and "'b' was unexpected" in extra.feedback
    typed = JsonSchema({"schema": schema}).check(task(None), '{"aa": "not an integer"}')
    assert not typed.passed and "is not of type 'integer'" in typed.feedback


@pytest.mark.parametrize("pattern, why", [
    ("(?<=a)b", "invalid perl operator: (?<="),
    (r"(\w)\1", "invalid escape sequence: \\1"),
    ("a{2000}", "invalid repetition size: {2000}"),
])
def test_a_pattern_the_engine_cannot_run_is_refused_with_the_reason(pattern, why):
    with pytest.raises(PatternError) as caught:
        Regex({"pattern": pattern})
    assert str(caught.value) == (f"pattern {pattern!r} is not accepted by RE2 (linear-time "
                                 f"matching): {why}; rewrite it without backreferences, "
                                 "look-around or repetitions above 1000")


def test_python_flags_and_the_end_of_text_escape_keep_their_meaning():
    assert compile_pattern("abc", "i").fullmatch("ABC")
    assert compile_pattern("^b$", "m").search("a\nb\nc")
    assert compile_pattern("a.b", "s").fullmatch("a\nb")
    assert compile_pattern(r"ab\Z").search("xab") and not compile_pattern(r"ab\Z").search("ab\n")
    assert compile_pattern(r"a\\Z").fullmatch("a\\Z")
    with pytest.raises(PatternError, match="verbose patterns are not supported"):
        compile_pattern("a b", "x")


def test_a_schema_pairing_unevaluated_with_pattern_properties_is_refused():
    with pytest.raises(PatternError, match="may not combine unevaluatedProperties"):
        validator({"patternProperties": {"^a": {}}, "unevaluatedProperties": False})


def write_domain(root: Path, rows: list[dict[str, Any]], verifier: Any) -> Path:
    (root / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = root / "patterns.yaml"
    path.write_text(json.dumps({"id": "mydata/patterns-v1", "dataset": "rows.jsonl",
                                "fields": {"id": "qid", "prompt": "q", "answer": "a"}, "split": "all",
                                "verifier": verifier}))
    return path


def test_a_domain_file_whose_option_pattern_the_engine_refuses_fails_when_read(tmp_path):
    path = write_domain(tmp_path, [{"qid": 1, "q": "?", "a": "x"}],
                        {"name": "regex", "options": {"pattern": "(?=a)a"}})
    registry = Registry(domain_files=[path], autoload=False)
    assert len(registry.errors) == 1
    message = str(registry.errors[0])
    assert message.startswith(f'error loading plugin "patterns.yaml" from domain file {path}: '
                              f"domain file {path}, domain 'mydata/patterns-v1': field "
                              "verifier.options.pattern: pattern '(?=a)a' is not accepted by RE2 "
                              "(linear-time matching): invalid perl operator: (?=")


def test_a_row_whose_pattern_the_engine_refuses_is_refused_as_it_is_read_naming_the_row(tmp_path):
    rows = [{"qid": 1, "q": "?", "a": "ab+"}, {"qid": 2, "q": "?", "a": r"(a)\1"}]
    registry = Registry(domain_files=[write_domain(tmp_path, rows, "regex")], autoload=False)
    domain = registry.get("mydata/patterns-v1")
    with pytest.raises(ManifestError) as caught:
        [domain.task("train", 0, i) for i in range(2)]
    assert str(caught.value).startswith("domain 'mydata/patterns-v1', row 2: answer: pattern "
                                        "'(a)\\\\1' is not accepted by RE2")


def test_an_untrusted_data_domain_of_nested_quantifiers_verifies_in_linear_time(tmp_path):
    rows = [{"qid": i, "q": "Say the word.", "a": "(a|aa)+$" if i % 2 else EVIL} for i in range(4)]
    registry = Registry(domain_files=[write_domain(tmp_path, rows, "regex")], autoload=False)
    domain = registry.get("mydata/patterns-v1")
    tasks = domain.sample(4, seed=0)
    started = time.perf_counter()
    scores = finishes(lambda: [domain.verify(t, VICTIM) for t in tasks])
    assert [s.reward for s in scores] == [0.0] * 4 and all(s.trainable for s in scores)
    assert time.perf_counter() - started < 20


def test_the_duration_format_accepts_what_its_look_ahead_pattern_accepted():
    from rlhub_structured.formats import DURATION

    old = re.compile(r"P(?=\d|T\d)(?:\d+D)?(?:T(?=\d)(?:\d+H)?(?:\d+M)?(?:\d+S)?)?")
    parts = ["", "1D", "12D"]
    clocks = ["", "T", "T1H", "T2M", "T3S", "T1H2M", "T1H3S", "T2M3S", "T1H2M3S", "TH", "T1X"]
    for text in [f"P{d}{c}" for d in parts for c in clocks] + ["P", "PT", "1D", "P1DT"]:
        assert bool(old.fullmatch(text)) == bool(compile_pattern(DURATION).fullmatch(text)), text
