"""Guessing dialogues played by real search policies against the rule-based responders."""

import itertools
import re

import pytest

from rlhub_agentic.guessing import score_guess


def binary_search():
    bounds = [1, 1000]

    def policy(observations):
        last = observations[-1]
        hit = re.search(r"Correct: (\d+)", last)
        if hit:
            return f"<answer>{hit.group(1)}</answer>"
        guessed = re.search(r"(higher|lower) than (\d+)", last)
        if guessed:
            direction, value = guessed.group(1), int(guessed.group(2))
            bounds[0 if direction == "higher" else 1] = value + (1 if direction == "higher" else -1)
        return f"<guess>{(bounds[0] + bounds[1]) // 2}</guess>"

    return policy


@pytest.mark.parametrize("index", range(5))
def test_binary_search_finds_the_secret_number_within_the_turn_budget(index, domain, play):
    d = domain("guess-number")
    results = play(d, d.task("train", 0, index), binary_search())
    assert results[-1].score.reward == 1.0 and len(results) <= 11
    assert results[-1].score.components["tool_calls"] == len(results) - 1


def test_a_non_integer_guess_is_explained_and_a_wrong_answer_ends_the_game(domain, play, scripted):
    d = domain("guess-number")
    task = d.task("train", 0, 0)
    wrong = int(task.answer["value"]) % 1000 + 1
    results = play(d, task, scripted(["<guess>fifty</guess>", f"<answer>{wrong}</answer>"]))
    assert "error: expected one integer, found 'fifty'." in results[0].observation
    assert results[1].done and results[1].score.reward == 0.0
    assert results[1].score.feedback == f"The number '{wrong}' is not correct."


def test_guessing_forever_ends_at_max_turns_with_reward_0(domain, play):
    d = domain("guess-number")
    results = play(d, d.task("train", 0, 1), lambda observations: "<guess>0</guess>")
    assert len(results) == 12 and results[-1].done and results[-1].score.reward == 0.0


def splitting_questions(task):
    """Asks the question that best halves the remaining people, then answers."""
    people = list(task.meta["people"])

    def best_question():
        options = []
        for attr in ("age", "height_cm"):
            values = sorted(p[attr] for p in people)
            options.append((f"{attr} <= {values[len(values) // 2 - 1]}",
                            lambda p, a=attr, v=values[len(values) // 2 - 1]: p[a] <= v))
        for attr in ("hair", "eyes", "hat", "glasses"):
            for value in {p[attr] for p in people}:
                options.append((f"{attr} = {value}", lambda p, a=attr, v=value: p[a] == v))
        return min(options, key=lambda o: abs(sum(map(o[1], people)) - len(people) / 2))

    asked = []

    def policy(observations):
        if asked:
            reply = re.search(r"\n(yes|no)\n", observations[-1]).group(1)
            people[:] = [p for p in people if asked[-1](p) == (reply == "yes")]
        if len(people) == 1:
            return f"<answer>{people[0]['name']}</answer>"
        text, test = best_question()
        asked.append(test)
        return f"<ask>{text}</ask>"

    return policy


@pytest.mark.parametrize("index", range(4))
def test_halving_questions_identify_the_secret_person(index, domain, play):
    d = domain("twenty-questions")
    task = d.task("test", 2, index)
    results = play(d, task, splitting_questions(task))
    assert results[-1].score.reward == 1.0 and len(results) <= d.manifest.max_turns


def test_malformed_questions_name_the_expected_form(domain, play, scripted):
    d = domain("twenty-questions")
    task = d.task("train", 0, 0)
    results = play(d, task, scripted(["<ask>is it a cat?</ask>", "<ask>tail = long</ask>",
                                      "<ask>hair > 3</ask>", "<ask>age >= old</ask>",
                                      "<ask>eyes in blue, green</ask>", task.gold]))
    assert "expected 'ATTRIBUTE OP VALUE'" in results[0].observation
    assert "unknown attribute 'tail'; ask about name, hair, eyes" in results[1].observation
    assert "hair is not a number; use =, != or in." in results[2].observation
    assert "age is a number; compare it with a number" in results[3].observation
    secret = next(p for p in task.meta["people"] if p["name"] == task.answer["value"])
    assert ("yes" if secret["eyes"] in ("blue", "green") else "no") in results[4].observation
    assert results[-1].score.reward == 1.0


def consistent_codes():
    """Guesses the first code consistent with every feedback so far (solves 6^4 in a few tries)."""
    candidates = ["".join(c) for c in itertools.product("ABCDEF", repeat=4)]
    history = []

    def policy(observations):
        found = re.search(r"(\w{4}): (\d) exact(?:, (\d) misplaced)?", observations[-1])
        if found and found.group(3) is None:
            return f"<answer>{found.group(1)}</answer>"
        if found:
            history.append((found.group(1), (int(found.group(2)), int(found.group(3)))))
        candidates[:] = [c for c in candidates if all(score_guess(c, g) == f for g, f in history)]
        return f"<guess>{candidates[0]}</guess>"

    return policy


@pytest.mark.parametrize("index", range(4))
def test_consistent_guessing_cracks_the_mastermind_code(index, domain, play):
    d = domain("mastermind")
    results = play(d, d.task("train", 1, index), consistent_codes())
    assert results[-1].score.reward == 1.0 and len(results) <= 9


def test_mastermind_feedback_counts_exact_and_misplaced_letters():
    assert score_guess("AABC", "ABCA") == (1, 3)
    assert score_guess("ABCD", "EEEE") == (0, 0)
    assert score_guess("ABCD", "ABCD") == (4, 0)


def test_a_bad_code_is_explained_and_answers_ignore_spacing(domain, play, scripted):
    d = domain("mastermind")
    task = d.task("train", 0, 0)
    spaced = " ".join(task.answer["value"].lower())
    results = play(d, task, scripted(["<guess>ABZ</guess>", f"<answer>{spaced}</answer>"]))
    assert "expected 4 letters from ABCDEF, found 'ABZ'." in results[0].observation
    assert results[-1].score.reward == 1.0
