"""Parsing actions, matching answers, and the bounded calculator and converter."""

import pytest

from rlhub_agentic import answers, calc
from rlhub_agentic.episode import ToolInputError
from rlhub import ToolCall
from rlhub_agentic.protocol import extract_answer, parse_action


def test_an_answer_tag_wins_over_tool_calls_in_the_same_message():
    action = parse_action('<tool name="calculator">1+1</tool> so <answer> 2 </answer>')
    assert action.kind == "answer" and action.answer == "2"


def test_tool_calls_are_found_in_order_across_json_long_short_and_fenced_forms():
    text = ("<sql>SELECT 1</sql>\n```sql\nSELECT 2\n```\n<tool name='SQL'>SELECT 3</tool>\n"
            '<tool_call>{"name": "sql", "arguments": {"query": "SELECT 4"}}</tool_call>')
    action = parse_action(text, raw_params={"sql": "query"}, short_tags=["sql"],
                          fences={"sql": "sql"}, turn=3)
    assert action.calls == [ToolCall("sql", {"query": f"SELECT {k}"}, f"call_3_{k - 1}")
                            for k in (1, 2, 3, 4)]


def test_thinking_is_ignored_so_quoted_actions_do_not_count():
    text = "<think>maybe <answer>7</answer> or <guess>3</guess></think>"
    assert parse_action(text, short_tags=["guess"]).kind == "invalid"
    assert extract_answer(text + "<answer>8</answer>") == "8"


@pytest.mark.parametrize("text, problem", [
    ("", "The message was empty."),
    ("<answer>12", "Found <answer> without a closing </answer>."),
    ('<tool name="calculator">2+2', "Found <tool ...> or <tool_call> that is not a complete"),
    ('<tool_call>{"name": "x"', "Found <tool ...> or <tool_call> that is not a complete"),
    ("just chatting", "No tool call and no <answer>...</answer> was found."),
])
def test_malformed_messages_are_explained_not_raised(text, problem):
    action = parse_action(text)
    assert action.kind == "invalid" and action.problem.startswith(problem)


def test_a_non_string_completion_is_an_invalid_action():
    assert parse_action(None).problem == "Expected the completion as text, found NoneType."


@pytest.mark.parametrize("got, ok", [("1,250", True), ("$1250.004", True), ("1250 kg", True),
                                     ("1251", False), ("about 1250", False), ("nan", False)])
def test_numbers_match_within_the_rounding_tolerance(got, ok):
    assert answers.matches(answers.number_answer(1250.0, 2), got)[0] is ok


def test_lists_match_in_any_order_ignoring_case_but_not_missing_items():
    expected = {"type": "set", "value": ["Ada Costa", "Hugo Novak"]}
    assert answers.matches(expected, "hugo novak,  Ada Costa")[0]
    assert not answers.matches(expected, "Hugo Novak")[0]
    assert not answers.matches(expected, "Hugo Novak, Ada Costa, Ada Costa")[0]


@pytest.mark.parametrize("expression, value", [("2*(3+4)", "14"), ("2^10", "1024"),
                                               ("sqrt(2)", "1.41421356237"), ("7/2", "3.5"),
                                               ("round(2.675*100)", "268"), ("-(-3)", "3")])
def test_the_calculator_evaluates_arithmetic(expression, value):
    assert calc.calculate(expression) == value


@pytest.mark.parametrize("expression, message", [
    ("9**9**9", "exponents are limited"), ("1/0", "division by zero"),
    ("__import__('os')", "unsupported syntax"), ("10**200*10**200", "a value exceeds"),
    ("(" * 240 + "1" + ")" * 240, "too many nested parentheses"), ("2 +", "could not parse"),
    ("sqrt(-1)", "could not evaluate"), ("", "the expression was empty"),
])
def test_the_calculator_refuses_unsafe_or_broken_input_with_a_reason(expression, message):
    with pytest.raises(ToolInputError, match=message):
        calc.calculate(expression)


@pytest.mark.parametrize("request_text, reply", [
    ("3.5 mi to km", "3.5 mi = 5.632704 km"), ("212 F to C", "212 f = 100 c"),
    ("12 in to cm", "12 in = 30.48 cm"), ("2 cups in ml", "2 cup = 473.176473 ml"),
    ("100 km/h to mph", "100 km/h = 62.1371192237 mph"),
])
def test_the_converter_converts_between_units_of_one_dimension(request_text, reply):
    assert calc.convert(request_text) == reply


@pytest.mark.parametrize("request_text, message", [
    ("3 kg to km", "cannot convert mass"), ("3 parsecs to km", "unknown unit 'parsecs'"),
    ("convert three miles", "expected '<number> <unit> to <unit>'"),
    ("5 C to kg", "cannot convert"),
])
def test_the_converter_explains_impossible_requests(request_text, message):
    with pytest.raises(ToolInputError, match=message):
        calc.convert(request_text)


def test_huge_adversarial_messages_are_parsed_quickly():
    import time

    started = time.perf_counter()
    flood = "<tool name=calculator>1" * 8000 + "<answer>x" * 8000
    assert parse_action(flood).problem.startswith(f"The message has {len(flood)} characters")
    assert extract_answer(flood + "</answer>") == "x"
    for unclosed in ("<tool name=calculator>1" * 1700, "<sql>1" * 6600):
        assert parse_action(unclosed[:39_000], short_tags=["sql"]).kind == "invalid"
    assert time.perf_counter() - started < 10.0  # bounded work, on a loaded machine too
