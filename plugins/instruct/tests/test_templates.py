"""Task-ignoring templates built from the prompt's visible parts earn nothing: the content gate asks
for prose in the request's language, not counts met with filler."""

import itertools

import pytest

import rlhub
from rlhub.testing.probes_template import template_probes
from rlhub_instruct import text as tx
from rlhub_instruct.domain import MAX_COPIED_SHARE, MIN_FUNCTION_SHARE

IDS = rlhub.registry().match(["instruct/*"])


def numbered_template(topic: str, words: int = 120) -> str:
    """The attack that earned 1.0 on four v2 families: the topic word, then numbered tokens cut
    into three "sentences"."""
    tokens = [topic, *(f"t{i}" for i in range(1, words))]
    third = len(tokens) // 3
    return " ".join(" ".join(tokens[i:i + third]) + "." for i in range(0, len(tokens), third))


@pytest.mark.parametrize("domain_id", IDS)
def test_the_topic_word_with_numbered_filler_earns_nothing(domain_id):
    domain = rlhub.registry().get(domain_id)
    for task in domain.sample(5, seed=11):
        topic = task.meta["request"]["topic"]
        score = domain.verify(task, numbered_template(topic))
        assert score.reward == 0.0, (task.id, score.feedback)
        assert "numbered tokens or identifiers in a row" in score.feedback


@pytest.mark.parametrize("domain_id", IDS)
def test_the_kits_templates_earn_nothing_but_word_salad_on_the_families_marked_for_it(domain_id):
    from rlhub_instruct.plugin import SALAD_PAYS

    domain = rlhub.registry().get(domain_id)
    marked = domain_id.split("/")[1].rsplit("-v", 1)[0] in SALAD_PAYS
    assert domain.manifest.hackable == (["template"] if marked else [])
    salad_pays = marked or "combination" in domain.manifest.tags  # partial credit (README)
    for task in domain.sample(3, seed=12):
        for probe in template_probes(task):
            if not (salad_pays and probe.name.startswith("word salad")):
                assert domain.verify(task, probe.completion).reward == 0.0, (task.id, probe.name)


def test_golds_are_prose_well_inside_every_bound():
    domains = [rlhub.registry().get(i) for i in IDS]
    tasks = list(itertools.chain.from_iterable(d.sample(20, seed=13) for d in domains))
    assert max(tx.longest_coded_run(t.gold) for t in tasks) <= 1
    assert min(tx.function_share(t.gold) for t in tasks) >= MIN_FUNCTION_SHARE + 0.05
    assert max(tx.copied_share(t.gold, t.prompt_text()) for t in tasks) <= MAX_COPIED_SHARE - 0.1
