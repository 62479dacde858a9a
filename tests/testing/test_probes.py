"""The integrity probe classes catch each deliberately gameable domain, and report what they find."""

from __future__ import annotations

import json

import brokenplug
import pytest
import toyplug

from rlhub import Task
from rlhub.testing import inspect_domain
from rlhub.testing.answer_space import answer_slot, document_of, scramble
from rlhub.testing.probes import PROBE_CLASSES, degenerate_probes, hedge_probes
from rlhub.testing.probes_oversized import oversized_probes


@pytest.fixture
def reg(rlhub_hub):
    return rlhub_hub(plugins=[toyplug, brokenplug])


def report(reg, domain_id):
    return inspect_domain(reg.get(domain_id), n=2, across_processes=False)


def classes_with_problems(found):
    return {name for name, r in found.probes.items() if r.problems}


def test_well_behaved_domains_pass_every_probe_class_and_report_each(reg):
    for domain_id in ("toy/reverse-v1", "toy/copy-v1"):
        found = report(reg, domain_id)
        assert found.problems == [] and list(found.probes) == list(PROBE_CLASSES)
        assert all(r.probes > 0 for r in found.probes.values()), domain_id
        assert found.max_probe_reward == 0.0


def test_partial_credit_a_constant_collects_is_reported(reg):
    found = report(reg, "broken/closeness-v1")
    assert classes_with_problems(found) >= {"hedge"}
    assert any("constant '0'" in p and "earned 0." in p and "without passing" in p
               for p in found.problems)
    assert 0 < found.probes["hedge"].max_reward < 1


def test_a_substring_verifier_that_pays_for_hedges_is_reported(reg):
    found = report(reg, "broken/echo-passes-v1")
    hedges = [p for p in found.probes["hedge"].problems if "first and last" in p]
    assert hedges and found.probes["hedge"].max_reward == 1.0


def test_a_format_only_verifier_is_caught_by_the_degenerate_probes(reg):
    found = report(reg, "broken/format-only-v1")
    assert any("the degenerate probe 'prompt words, lowercase'" in p and "must not pass" in p
               for p in found.probes["degenerate"].problems)


def test_a_placeholder_document_that_earns_partial_credit_is_reported(reg):
    found = report(reg, "broken/placeholder-v1")
    assert any("'placeholder document'" in p and "earned 0.5 without passing" in p
               for p in found.problems)


def test_unbounded_work_on_an_oversized_answer_is_reported_not_waited_for(reg):
    found = report(reg, "broken/unbounded-v1")
    assert any("did not finish within verify_timeout_s (1s)" in p
               for p in found.probes["oversized"].problems)


def test_a_hackable_mark_turns_that_classes_problems_into_known_ones(reg):
    found = report(reg, "broken/hedge-known-v1")
    assert found.probes["hedge"].known and found.probes["hedge"].problems
    assert not any("hedge probe" in p for p in found.problems)
    assert any("hedge probe" in p for p in found.known)
    assert found.to_dict()["probes"]["hedge"]["hackable"] is True


def test_a_hackable_mark_no_probe_justifies_must_be_removed(reg):
    found = report(reg, "broken/stale-mark-v1")
    assert found.problems == ["broken/stale-mark-v1: the manifest marks it hackable by "
                              "'oversized' probes, but none found a problem; remove the mark"]


def test_forged_labels_are_refused_for_every_domain_the_kit_checks(reg):
    found = report(reg, "toy/reverse-v1").probes["forged-label"]
    assert found.probes >= 9 and found.passed == 0 and found.max_reward == 0.0


def test_the_answer_slot_is_found_in_tags_answer_lines_boxes_and_short_golds():
    assert answer_slot("<answer>42</answer>").fill("7") == "<answer>7</answer>"
    assert answer_slot("so \\boxed{\\frac{1}{2}} done").answer == "\\frac{1}{2}"
    assert answer_slot("work\nAnswer: Paris").fill("Rome") == "work\nAnswer: Rome"
    assert answer_slot("2024-03-13").answer == "2024-03-13"
    assert answer_slot("```python\ndef f():\n    return 1\n```") is None
    assert answer_slot("A long essay.\nWith lines.") is None


def test_documents_keep_their_shape_with_placeholders_or_scrambled_values():
    doc = document_of('```json\n{"name": "Ada", "n": 36, "ok": true}\n```')
    assert doc is not None and doc.language == "json"
    assert json.loads(doc.render({"name": "x"}).strip("`json\n")) == {"name": "x"}
    assert scramble("2024-03-13") == "5357-36-46" and scramble("Ada") == "Hkh"
    assert document_of("just text") is None


def test_a_hedge_is_sent_with_the_tasks_own_answer_first_and_last():
    task = Task("t", "x/y-v1", "Q", answer="Yes", gold="<answer>Yes</answer>")
    other = Task("u", "x/y-v1", "Q", answer="No", gold="<answer>No</answer>")
    hedges = {h.name: h for h in hedge_probes(task, [task, other])}
    assert hedges["hedge 'YesNo'"].first == "<answer>YesNo</answer>"
    assert hedges["hedge 'YesNo'"].last == "<answer>NoYes</answer>"
    assert "hedge '0123456789'" in hedges


def test_degenerate_probes_wrap_the_prompts_quoted_words_in_every_format():
    task = Task("t", "x/y-v1", 'Write about "kettles" and mention "kettle".', gold=None)
    names = {p.name: p.completion for p in degenerate_probes(task)}
    assert names["prompt words, capitals"] == "KETTLES KETTLE"
    assert names["prompt words, json"] == '{"response": "kettles kettle"}'


def test_oversized_probes_put_expressions_in_the_answer_slot():
    task = Task("t", "x/y-v1", "Q", answer="1", gold="\\boxed{1}")
    probes = {p.name: p.completion for p in oversized_probes(task)}
    assert probes["latex power tower"] == "\\boxed{10^{10^{10^{10}}}}"
    assert len(probes["json array of 1 MB"]) > 1_000_000
