"""Bash, SQL and regex domains: exact-output checks, result-set comparison, hidden examples."""

import re

from rlhub import Task
from rlhub_code.sql import _db_failure, same_rows


def block(language: str, code: str) -> str:
    return f"```{language}\n{code}\n```"


def test_a_bash_script_that_prints_the_right_output_without_the_final_newline_passes(domain):
    d = domain("code/bash-csvsum-v2")
    task = d.task("train", 0, 0)
    gold = task.gold.split("\n", 1)[1].rsplit("```", 1)[0]
    score = d.verify(task, block("bash", f"out=$({gold})\nprintf '%s' \"$out\""))
    assert score.passed, score.feedback


def test_a_bash_script_with_the_right_output_but_a_failing_exit_status_fails(domain):
    d = domain("code/bash-wordfreq-v2")
    task = d.task("train", 0, 1)
    gold = task.gold.split("\n", 1)[1].rsplit("```", 1)[0]
    score = d.verify(task, block("bash", gold + "\nexit 3"))
    assert not score.passed and "exit code 3" in score.feedback


def test_a_megabyte_script_is_refused_before_it_costs_the_sandbox_a_run_per_case(domain):
    d = domain("code/bash-csvsum-v2")
    task = d.task("train", 0, 0)
    gold = task.gold.split("\n", 1)[1].rsplit("```", 1)[0]
    padded = gold + "\n" + "# pad\n" * 200_000  # a correct script, 1.2 MB
    score = d.verify(task, block("bash", padded))
    assert (score.reward, score.failure, score.exec) == (0.0, "answer", None)
    assert score.feedback.startswith("The program is 1,2") and "expected at most 65,536" in \
        score.feedback


def test_a_bash_script_that_hits_a_limit_on_one_case_is_not_run_on_the_rest(domain, monkeypatch):
    d = domain("code/bash-csvsum-v2")
    runs = []
    real = d.services.sandboxes.run
    monkeypatch.setattr(d.services.sandboxes, "run", lambda req: runs.append(req) or real(req))
    score = d.verify(d.task("train", 0, 0), block("bash", "yes spam"))
    assert len(runs) == 1 and score.reward == 0.0 and score.components["pass_frac"] == 0.0
    assert score.feedback.startswith("5 of 5 tests failed. First failure: on data.csv: the "
                                     "script ended with status output_limit")


def test_bash_expected_outputs_never_enter_the_sandbox_and_are_never_empty(domain):
    d = domain("code/bash-logfilter-v2")
    for task in d.sample(10):
        for case in task.meta["cases"]:
            assert case["expected"].strip()
            assert case["expected"] not in case["stdin"] + "".join(case["files"].values())


def test_sql_rows_compare_as_a_multiset_unless_the_order_is_asked_for():
    assert same_rows([[1, "a"], [2, "b"]], [[2, "b"], [1, "a"]], ordered=False)
    assert not same_rows([[1, "a"], [2, "b"]], [[2, "b"], [1, "a"]], ordered=True)
    assert not same_rows([[1, "a"]], [[1, "a"], [1, "a"]], ordered=False)


def test_a_different_but_equivalent_sql_query_passes(domain):
    d = domain("code/sql-aggregate-v2")
    task = next(t for t in d.sample(30) if "SUM(budget)" in t.gold)
    score = d.verify(task, block("sql", "SELECT TOTAL(budget), COUNT(id), "
                                        "(SELECT budget FROM projects ORDER BY budget LIMIT 1) "
                                        "FROM projects"))
    assert score.passed, score.feedback


def test_a_query_that_ignores_the_asked_order_fails(domain):
    d = domain("code/sql-filter-v2")
    task = next(t for t in d.sample(30) if t.meta["ordered"] and "salary" in t.gold)
    unordered = task.gold.split("\n")[1].replace("ORDER BY salary DESC, name", "ORDER BY name")
    assert not d.verify(task, block("sql", unordered)).passed


def test_sql_cannot_write_files_in_the_sandbox_or_on_the_host(domain, tmp_path):
    d = domain("code/sql-join-v2")
    task = d.task("train", 0, 0)
    target = tmp_path / "stolen.db"
    score = d.verify(task, block("sql", f"VACUUM INTO '{target}'"))
    assert not score.passed and "authorization denied" in score.feedback
    assert not target.exists()


def test_sql_feedback_shows_rows_only_for_the_sample_database(domain):
    d = domain("code/sql-join-v2")
    task = d.task("train", 0, 2)
    score = d.verify(task, block("sql", "SELECT 1, 2, 3 WHERE 0"))
    assert "on the sample database" in score.feedback and "expected [[" in score.feedback
    hidden = _db_failure(1, {"rows": [[1]]}, [[2]], ordered=False)
    assert hidden == "on hidden database 1 the query returned 1 rows, expected 1"


def test_a_regex_listing_the_shown_examples_fails_the_hidden_ones(domain):
    d = domain("code/regex-formats-v2")
    task = d.task("train", 0, 0)
    shown = task.meta["positives"][:6]
    score = d.verify(task, block("regex", "|".join(map(re.escape, shown))))
    assert not score.passed and 0 < score.components["pass_frac"] < 1


def test_an_invalid_regex_gets_the_compile_error_as_feedback(domain):
    d = domain("code/regex-words-v2")
    score = d.verify(d.task("train", 0, 0), block("regex", "([a-z]"))
    assert not score.passed and score.feedback.startswith("The pattern does not compile")


def test_catastrophic_backtracking_hits_the_wall_clock_and_fails(domain):
    d = domain("code/regex-formats-v2")
    task = Task("t", d.id, "", meta={"language": "regex", "positives": ["a" * 40 + "!"],
                                     "negatives": ["b"]})
    score = d.verify(task, block("regex", "(a+)+$"))
    assert not score.passed and "did not finish (status timeout)" in score.feedback
