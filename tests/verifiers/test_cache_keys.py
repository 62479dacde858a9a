"""Every cache is keyed by the whole content that decides its answer, and the domain and source:
two environments never share an entry (issue 23, route 7)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from rlhub import Registry
from rlhub.errors import ManifestError
from rlhub.manifest import Manifest
from rlhub.verifiers import endpoints

RUBRIC = {"version": "test-1", "criteria": {"correctness": "Facts are right."}}
ROWS = [{"qid": f"q{i}", "question": "Explain photosynthesis in two sentences.",
         "ans": "Plants turn light, water and carbon dioxide into glucose and oxygen."}
        for i in range(4)]


def judged_domain(folder: Path, domain_id: str, url: str, instructions: str) -> Path:
    """A data-only judge domain whose rubric has ``RUBRIC``'s criteria and version."""
    folder.mkdir(parents=True)
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    rubric = {**RUBRIC, "instructions": instructions}
    spec = {"id": domain_id, "dataset": "rows.jsonl", "fields": {"id": "qid", "prompt": "question",
                                                                  "answer": "ans"},
            "verifier": {"name": "judge", "options": {"url": url, "model": "scripted-judge",
                                                      "rubric": rubric, "reference": "answer"}}}
    path = folder / "domain.yaml"
    path.write_text(json.dumps(spec))
    return path


def test_a_copied_rubric_with_extra_instructions_shares_no_judge_entry_with_the_original(
    judge, tmp_path
):
    server = judge()
    honest = judged_domain(tmp_path / "honest", "honest/explain-v1", server.url, "")
    copied = judged_domain(tmp_path / "copied", "copied/explain-v1", server.url,
                           "Give every response 10.")
    registry = Registry(domain_files=[honest, copied], autoload=False)
    completion = "I do not know."
    first = registry.get("copied/explain-v1")
    first.verify(first.task("train", 0, 0), completion)
    second = registry.get("honest/explain-v1")
    task = second.task("train", 0, 0)
    assert task.prompt == first.task("train", 0, 0).prompt
    second.verify(task, completion)
    assert server.judge_calls == 2  # the honest domain asked the judge itself
    second.verify(task, completion)
    assert server.judge_calls == 2  # and its own entry serves it again


def test_the_same_options_for_another_domain_are_another_entry(judge, task, options):
    server = judge()
    verifier = Registry(autoload=False).services.verifier("judge", options(server.url))
    verifier.check(task, "one")
    verifier.check(dataclasses.replace(task, domain="other/explain-v1"), "one")
    assert server.judge_calls == 2


def test_two_registries_share_no_judge_endpoint_and_no_cached_judgement(judge, task, options):
    server = judge()
    one, two = Registry(autoload=False), Registry(autoload=False)
    for registry in (one, two, one):
        registry.services.verifier("judge", options(server.url)).check(task, "one")
    assert server.judge_calls == 2  # one call per registry; the second of ``one`` is cached
    mine, theirs = one.services.judge_endpoints, two.services.judge_endpoints
    assert mine.endpoint(server.url) is mine.endpoint(server.url)
    assert mine.endpoint(server.url) is not theirs.endpoint(server.url)


def test_two_keys_for_one_judge_url_are_two_endpoints_sharing_its_slots(judge, monkeypatch):
    server = judge()
    monkeypatch.setenv("KEY_A", "secret-a")
    monkeypatch.setenv("KEY_B", "secret-b")
    judges = endpoints.JudgeEndpoints()
    a = judges.endpoint(server.url, {"api_key_env": "KEY_A", "concurrency": 2})
    b = judges.endpoint(server.url, {"api_key_env": "KEY_B", "concurrency": 5})
    assert a is not b and (a.config.api_key, b.config.api_key) == ("secret-a", "secret-b")
    assert a._slots is b._slots and b.limit == 2
    assert judges.endpoint(server.url, {"api_key_env": "KEY_A", "concurrency": 2}) is a


def test_a_manifest_of_tuples_is_refused_as_not_json_data():
    raw = {"id": "alpha/task-v1", "version": "1", "summary": "s", "license": "MIT", "tags": (),
           "reward": {"range": [0, 1], "components": {"ok": {"weight": 1.0}}},
           "factory": "x:y"}
    with pytest.raises(ManifestError, match=r"field tags: \(\) is not of type 'array'"):
        Manifest.parse(raw, plugin="alpha", distribution="alpha-dist")
