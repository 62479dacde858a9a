"""What a bridge checks itself before it pays an upstream scorer's full marks."""

import pytest

from rlhub.bridges import as_number, gold_agrees


@pytest.mark.parametrize("answer, gold, agrees", [
    ("0", "0.98", False),  # reasoning-gym's coin_flip paid a matching prefix in full
    ("0.98", "0.98", True), ("0.984", "0.98", True), ("0.99", "0.98", False),
    ("1,000", "1000", True), ("+01000.00", "1000", True), ("42.4", "42", False),
    ("1/3", "0.3333", True), ("3/7", "3/7", True), ("0.4286", "3/7", False),
    ("2,1", "21", False),  # SkyRL's gsm8k drops the comma of two numbers
    ("seven", "7", False),
    ("[(1, True)]\nYes", "[(1, True)]", False), ("Yes [(1, True)]", "[(1, True)]", False),
    ("unequal", "equal", False), ("equal", "equal", True), ("True.", "True", True),
    ("[(1,True)]", "[(1, True)]", None), ("B", "A", None),
])
def test_a_bridge_reads_numbers_and_superstrings_of_the_gold_itself(answer, gold, agrees):
    assert gold_agrees(answer, gold) is agrees


def test_no_text_denotes_a_number_too_large_to_build():
    assert as_number("1e999") == 10**999 and as_number("1e9999") is None
    assert as_number("9" * 80) is None
