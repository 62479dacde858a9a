"""SQL exploration episodes driven by scripted policies, against the real sandbox."""

import re

import pytest

from rlhub_agentic import answers


def names_of(task):
    """The table names of the task's database, read from its CREATE statements."""
    return re.findall(r"CREATE TABLE (\w+)", task.meta["script"])


@pytest.mark.parametrize("name", ["sql-easy", "sql-medium", "sql-hard", "sql-explore"])
def test_running_the_reference_query_shows_the_answer_then_answering_earns_1(name, domain, play,
                                                                             scripted):
    d = domain(name)
    task = d.task("test", 3, 5)
    results = play(d, task, scripted([f"<sql>{task.meta['solution_sql']}</sql>", task.gold]))
    first, last = results
    assert not first.done and first.score.reward == 0 and first.info["calls"] == ["sql"]
    shown = answers.render(task.answer).split(", ")[0]
    assert shown in first.observation or str(task.answer["value"]).rstrip("0") in first.observation
    assert last.done and last.score.reward == 1.0 and last.score.passed
    assert last.info == {"action": "answer", "attempt": True, "turn": 2, "repair": 0, "tool_calls": 1,
                         "invalid_actions": 0, "calls": []}
    assert last.score.components["tool_calls"] == 1.0


def test_the_schema_is_shown_for_plain_variants_and_hidden_for_explore(domain, play, scripted):
    plain = domain("sql-medium").task("train", 0, 0)
    hidden = domain("sql-explore").task("train", 0, 0)
    assert "CREATE TABLE" in plain.prompt and "CREATE TABLE" not in hidden.prompt
    results = play(domain("sql-explore"), hidden,
                   scripted(["```sql\nSELECT name FROM sqlite_master WHERE type = 'table'\n```",
                             "<answer>no idea</answer>", "<answer>no idea</answer>"]))
    for table in names_of(hidden):
        assert table in results[0].observation


def test_writes_are_refused_and_leave_the_data_unchanged(domain, play, scripted):
    d = domain("sql-easy")
    task = d.task("train", 0, 1)
    customers = names_of(task)[0]
    count = f"<sql>SELECT COUNT(*) FROM {customers}</sql>"
    results = play(d, task, scripted([f"<sql>DELETE FROM {customers}</sql>",
                                      f"<sql>DROP TABLE {customers}</sql>", count, task.gold]))
    assert "not authorized" in results[0].observation
    assert "not authorized" in results[1].observation
    assert "\n12\n" in results[2].observation  # the easy shop has 12 customers


def test_large_results_are_truncated_and_runaway_queries_stopped(domain, play, scripted):
    d = domain("sql-hard")
    task = d.task("train", 0, 2)
    orders = names_of(task)[2]
    runaway = ("<sql>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
               "SELECT COUNT(*) FROM c</sql>")
    results = play(d, task, scripted([f"<sql>SELECT * FROM {orders}</sql>", runaway,
                                      "<sql>SELECT 1; SELECT 2</sql>", task.gold]))
    table = results[0].observation
    assert "showing the first 20 rows" in table and len(table.splitlines()) < 30
    assert "the query ran too long and was stopped" in results[1].observation
    assert "You can only execute one statement at a time" in results[2].observation


def test_a_wrong_answer_gets_feedback_and_one_repair_then_the_episode_ends(domain, play, scripted):
    d = domain("sql-easy")
    task = d.task("train", 0, 3)
    results = play(d, task, scripted(["<answer>-1</answer>", "<answer>-2</answer>"]))
    assert [r.done for r in results] == [False, True]
    assert "not correct" in results[0].observation
    assert "1 more answer attempt" in results[0].observation
    assert [r.info["repair"] for r in results] == [0, 1]
    assert [r.score.reward for r in results] == [0.0, 0.0]


def test_a_repaired_answer_is_accepted_and_reports_its_repair_index(domain, play, scripted):
    d = domain("sql-easy")
    task = d.task("train", 0, 3)
    results = play(d, task, scripted(["<answer>-1</answer>", task.gold]))
    assert results[-1].score.reward == 1.0 and results[-1].info["repair"] == 1


def test_a_malformed_turn_explains_the_syntax_and_is_counted(domain, play, scripted):
    d = domain("sql-easy")
    task = d.task("train", 0, 4)
    results = play(d, task, scripted(["I would look at the customers table.", task.gold]))
    assert "No tool call and no <answer>" in results[0].observation
    assert "<sql>...</sql>" in results[0].observation and results[0].info["action"] == "invalid"
    assert results[1].score.components["invalid_actions"] == 1.0 and results[1].score.reward == 1


def test_the_episode_ends_at_max_turns_without_an_answer(domain, play):
    d = domain("sql-easy")
    task = d.task("train", 0, 5)
    results = play(d, task, lambda observations: "<sql>SELECT 1</sql>")
    assert len(results) == d.manifest.max_turns == 6
    assert results[-1].done and results[-1].score.reward == 0.0
    assert results[-1].score.feedback.startswith("The episode ended after 6 turns")
    assert "last turn" in results[-2].observation
    again = d.start(task)
    for _ in range(6):
        final = again.step("<sql>SELECT 1</sql>")
    assert again.step("<answer>1</answer>").info["error"] == "the episode is over; start a new one"
    assert final.done


def test_episodes_on_the_same_task_replay_identically(domain):
    d = domain("sql-medium")
    task = d.task("train", 9, 9)
    actions = [f"<sql>{task.meta['solution_sql']}</sql>", "<sql>SELECT * FROM sqlite_master</sql>"]
    first, second = d.start(task), d.start(d.task("train", 9, 9))
    assert [first.step(a).observation for a in actions] == [second.step(a).observation
                                                             for a in actions]
