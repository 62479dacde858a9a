"""The integrity probe classes catch each deliberately gameable domain, and report what they find."""

from __future__ import annotations

import json

import brokenplug
import pytest
import toyplug

from rlhub import Task
from rlhub.testing import inspect_domain
from rlhub.testing.answer_space import answer_candidates, answer_slot, document_of, scramble
from rlhub.testing.probes import PROBE_CLASSES, degenerate_probes, hedge_probes
from rlhub.testing.probes_oversized import oversized_probes
from rlhub.testing.probes_template import template_probes


@pytest.fixture
def reg(rlhub_registry):
    return rlhub_registry(plugins=[toyplug, brokenplug])


def report(reg, domain_id):
    return inspect_domain(reg.get(domain_id), n=2, across_processes=False)


def classes_with_problems(found):
    return {name for name, r in found.probes.items() if r.problems}


def test_well_behaved_domains_pass_every_probe_class_and_report_each(reg):
    for domain_id in ("toy/reverse-v1", "toy/copy-v1"):
        found = report(reg, domain_id)
        assert found.problems == [] and list(found.probes) == list(PROBE_CLASSES)
        ran = {name for name, r in found.probes.items() if r.ran}
        assert ran == set(PROBE_CLASSES) - {"players"}, domain_id
        assert all(found.probes[name].probes > 0 for name in ran), domain_id
        assert found.max_probe_reward == 0.0


def test_a_class_that_cannot_run_says_so_and_why_instead_of_passing(reg):
    found = report(reg, "toy/reverse-v1").to_dict()["probes"]["players"]
    assert found["ran"] is False and found["probes"] == 0
    assert found["reason"] == "not a game: its constant, hedge and template probes apply"
    game = report(reg, "broken/fair-doors-v1").to_dict()["probes"]
    assert {name for name, r in game.items() if not r["ran"]} == {
        "constant", "hedge", "template", "degenerate"}
    assert game["constant"]["reason"] == "a game: its players probe plays constant moves"


def test_partial_credit_a_constant_collects_is_reported(reg):
    found = report(reg, "broken/closeness-v1")
    assert classes_with_problems(found) >= {"constant"}
    assert any("constant '0'" in p and "earned 0." in p and "without passing" in p
               for p in found.problems)
    assert 0 < found.probes["constant"].max_reward < 1


def test_one_answer_paid_on_tasks_with_different_golds_is_a_hack_even_when_it_passes(reg):
    found = report(reg, "broken/prefix-credit-v1").probes["constant"]
    flagged = [p for p in found.problems if "whose gold answers differ" in p]
    assert any("the constant probe \"constant '0'\" earned reward on" in p for p in flagged)
    assert found.max_reward == 1.0


def test_text_built_from_the_prompts_visible_parts_is_caught_by_the_template_probes(reg):
    found = report(reg, "broken/template-pays-v1").probes["template"]
    assert any("the template probe 'numbered filler, blank lines'" in p and "must not pass" in p
               for p in found.problems)
    assert found.passed > 0 and found.max_reward == 1.0


def test_a_game_won_by_a_fixed_move_is_paid_more_than_chance_and_reported(reg):
    rigged = report(reg, "broken/rigged-doors-v1").probes["players"]
    assert any("the constant player earned 1.00 of the range on average over 8 games, more "
               "than chance" in p for p in rigged.problems)
    fair = report(reg, "broken/fair-doors-v1").probes["players"]
    assert fair.ran and fair.probes == 32 and fair.problems == []


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


def test_the_constant_candidates_come_from_the_domains_own_answers():
    found = answer_candidates(["0.98", "0.98", "0.25", "17"])
    assert found[:3] == ["0.98", "0.25", "17"]
    assert {"0", "0.", "0.9", "1", "-", "Yes", "A", ""} <= set(found)
    assert len(found) <= 72


def test_templates_open_and_close_with_the_quoted_phrases_and_meet_the_counts():
    task = Task("t", "x/y-v1", 'Start with "Dear reader" and end with "Bye now". Use "kettle". '
                "Write at least 120 words in 4 paragraphs.", gold=None)
    probes = {p.name: p.completion for p in template_probes(task)}
    text = probes["numbered filler, blank lines"]
    assert text.startswith("Dear reader kettle w1") and text.endswith("w160. Bye now")
    assert len(text.split()) >= 160 and len(text.split("\n\n")) == 4
    assert probes["numbered filler, *** lines, capitals"].count("\n***\n") == 3
    assert all(p.strict for p in template_probes(task))


def test_word_salad_meets_a_prose_gates_counts_without_a_word_of_the_request():
    from rlhub.testing.probes_template import FUNCTION

    task = Task("t", "x/y-v1", "Write about a garden for gardeners in at least 80 words.", gold=None)
    text = {p.name: p.completion for p in template_probes(task)}["word salad, blank lines"]
    words = [w.strip(".").casefold() for w in text.split()]
    assert len(words) >= 100 and "garden" not in words and "gardeners" not in words
    assert sum(w in FUNCTION for w in words) / len(words) >= 0.45
    assert len(set(words)) / len(words) > 0.4  # many distinct words, no numbered tokens
    assert not any(ch.isdigit() for ch in text)


def test_word_salad_is_found_on_the_instruct_families_marked_for_it():
    found = inspect_domain("instruct/word-count-v3", n=2, across_processes=False).to_dict()
    assert found["ok"] and found["known"] == [p for p in found["known"] if "'word salad," in p]
    assert any("passed with reward 1" in p for p in found["known"])


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


def test_every_repo_probe_patch_applies_to_files_without_a_final_newline(tmp_path):
    """A probe whose patch does not apply earns the minimum for the wrong reason (the domain
    refused a malformed patch, not the attack), so every ``repo`` probe must apply with git to a
    repository whose files end without a newline, as real projects' files sometimes do."""
    import re
    import subprocess

    from rlhub.testing.probes_repo import repo_probes

    files = {"pkg/__init__.py": "VERSION = 1", "pkg/core.py": "def f(x):\n    return x",
             "tests/test_core.py": "from pkg.core import f\n\n\ndef test_f():\n"
                                   "    assert f(1) == 1",
             "pyproject.toml": "[project]\nname = \"pkg\""}
    task = Task("t-0", "swe/probe-target-v1", "fix it",
                meta={"files": files, "packages": ["pkg/"]})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    probes = repo_probes(task)
    assert len(probes) >= 12
    for probe in probes:
        patch = re.fullmatch(r"```diff\n(.*)```", probe.completion, re.S).group(1)
        applied = subprocess.run(["git", "apply", "--check", "-"], cwd=tmp_path, input=patch,
                                 capture_output=True, text=True)
        assert applied.returncode == 0, f"{probe.name}: {applied.stderr}"
