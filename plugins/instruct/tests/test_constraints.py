"""Each constraint checker accepts what satisfies it and rejects near misses, with a reason."""

import pytest

from rlhub_instruct import constraints as c

CASES = [
    # (constraint, satisfying text, violating text, words the reason must contain)
    (c.Topic("kite"), "A Kite flew.", "Kites flew.", "kite"),
    (c.WordCount("at_least", 3), "one two three", "one two --", "at least 3 words, found 2"),
    (c.WordCount("at_most", 3), "one two -- three", "one two three four", "found 4"),
    (c.SentenceCount("at_most", 2), "One. Two!", "One. Two? Three.", "found 3"),
    (c.SentenceCount("at_least", 2), "One.\nTwo", "One and two.", "found 1"),
    (c.CharCount("at_most", 5), "  abcde \n", "abcdef", "found 6"),
    (c.KeywordsInclude(["harbor", "cedar"], 2), "harbor Cedar harbor. cedar!",
     "harbor harbors cedar cedar", '"harbor" appears once'),
    (c.KeywordsExclude(["essay", "story"]), "A storyteller wrote essays.", "My Story.", '"story"'),
    (c.KeywordFrequency("anchor", "exactly", 2), "anchor, ANCHOR", "anchor anchor anchor",
     "appears 3 times; expected exactly 2"),
    (c.KeywordFrequency("anchor", "at_least", 3), "anchor anchor anchor", "anchor anchor",
     "expected at least 3"),
    (c.Uppercase(), "HELLO [NAME] 42!", "HELLO World", "'World'"),
    (c.Lowercase(), "hello [name] 42!", "hello World", "'World'"),
    (c.Paragraphs(2, False), "One.\n\n\nTwo.", "One.\nTwo.", "found 1"),
    (c.Paragraphs(2, True), "One.\n***\nTwo.", "One.\n***\n***\nTwo.", "paragraph 2 is empty"),
    (c.Sections(2), "intro\n## A\ntext\n# B\nmore", "## A\ntext\n## B\n", "has no text"),
    (c.Bullets(2), "* one\n- two\n***\n**bold**", "* one\n*two\n- three\n- four", "found 3"),
    (c.StartsWith("Dear reader"), "  Dear reader: hi", "dear reader: hi", "'dear reader'"),
    (c.EndsWith("Until next time."), "Bye.\nUntil next time.  ", "Until next time. Bye.",
     "instead of"),
    (c.JsonWrap(), '```json\n{"a": 1}\n```', "[1, 2]", "found a JSON list"),
    (c.Placeholders(2), "[name] and [ date ]", "[name] and [ ] and []", "found 1"),
    (c.Title(), "Hi\n  <<My Title>>  \nbody", "The <<title>> inline", "no line"),
    (c.Postscript("P.S."), "Body.\np.s. see you", "P.S. only a postscript", "no line after"),
    (c.NoCommas(), "No commas here.", "One\uff0c two", "found 1 comma"),
    (c.Quotation(), '  "Quoted text."\n', '"unterminated', "double quote"),
    (c.RepeatRequest("Write a note."), "Write a note.\nThe note.", "Write a note. The note.",
     "first line should be exactly"),
    (c.Highlights(2), "*one* and **two**", "*one* and * two\n*", "found 1"),
]


@pytest.mark.parametrize("constraint,good,bad,reason", CASES, ids=[x[0].kind for x in CASES])
def test_checker_accepts_a_satisfying_text_and_explains_a_violation(constraint, good, bad, reason):
    assert constraint.failure(good) is None
    found = constraint.failure(bad)
    assert found is not None and reason in found


@pytest.mark.parametrize("constraint", [case[0] for case in CASES], ids=[x[0].kind for x in CASES])
def test_constraint_survives_a_round_trip_through_its_dict(constraint):
    assert c.from_dict(constraint.to_dict()) == constraint


def test_unknown_kind_names_the_known_kinds():
    with pytest.raises(ValueError, match=r"expected a constraint kind in \[.*'bullets'.*found 'x'"):
        c.from_dict({"kind": "x"})


def test_every_checker_stays_fast_and_total_on_a_hostile_100kb_input():
    hostile = ("<<" + "a" * 50_000 + "\n*" + "[" * 20_000 + "#" * 30_000)
    for constraint, *_ in CASES:
        assert isinstance(constraint.failure(hostile), (str, type(None)))
