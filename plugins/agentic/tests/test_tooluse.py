"""Tool-use episodes: calculator, unit converter, and the sandboxed stateful API."""

import json
import re

from rlhub_agentic import calc


def api_body(observation):
    """The JSON body of the last API result in an observation."""
    return json.loads(re.findall(r"HTTP \d+\n(.*)\n</result>", observation)[-1])


def api(call):
    method, path, body = call
    return f'<tool name="api">{method} {path}{" " + json.dumps(body) if body else ""}</tool>'


def test_a_calculator_call_returns_its_result_and_the_gold_answer_earns_1(domain, play, scripted):
    d = domain("calculator")
    task = d.task("train", 0, 0)
    results = play(d, task, scripted(['<tool name="calculator">(4817 * 23) * (1 - 3.5/100)</tool>',
                                      task.gold]))
    assert f"\n{calc.calculate('(4817 * 23) * (1 - 3.5/100)')}\n" in results[0].observation
    assert results[-1].score.reward == 1.0 and results[-1].info["tool_calls"] == 1


def test_bad_tool_input_and_unknown_tools_are_explained_and_the_episode_goes_on(domain, play,
                                                                               scripted):
    d = domain("unit-convert")
    task = d.task("train", 0, 1)
    results = play(d, task, scripted([
        '<tool name="convert">3 kg to km</tool><tool name="weather">Oslo</tool>'
        '<tool name="calculator">import os</tool>', '<tool name="convert">3.5 mi to km</tool>',
        task.gold]))
    first = results[0].observation
    assert "error: cannot convert mass (kg) to length (km)." in first
    assert "error: unknown tool 'weather'; the tools are calculator, convert." in first
    assert "error: could not parse" in first
    assert "3.5 mi = 5.632704 km" in results[1].observation
    assert results[-1].score.reward == 1.0 and results[-1].score.components["tool_calls"] == 4


def test_the_shop_api_keeps_cart_state_across_turns_and_the_right_order_id_earns_1(domain, play):
    d = domain("shop-api")
    task = d.task("test", 0, 2)
    plan = task.meta["plan"]
    order_ids = []

    def policy(observations):
        turn = len(observations) - 1
        if turn < 2:
            return api(plan[turn])
        if turn == 2:
            return api(["GET", "/cart", None])
        if turn == 3:
            assert len(api_body(observations[-1])["lines"]) == 2
            return api(plan[2])
        order_ids.append(api_body(observations[-1])["order_id"])
        return f"<answer>{order_ids[-1]}</answer>"

    results = play(d, task, policy)
    assert results[-1].score.reward == 1.0 and order_ids == [task.answer["value"]]


def test_checking_out_the_wrong_cart_yields_a_different_order_id_that_scores_0(domain, play):
    d = domain("shop-api")
    task = d.task("test", 0, 2)
    wrong = [list(call) for call in task.meta["plan"]]
    wrong[0][2] = {**wrong[0][2], "qty": wrong[0][2]["qty"] + 1}
    script = [api(wrong[0]), api(wrong[1]), api(wrong[2])]

    def policy(observations):
        turn = len(observations) - 1
        if turn < 3:
            return script[turn]
        return f"<answer>{api_body(observations[3])['order_id']}</answer>"

    results = play(d, task, policy)
    assert results[2].observation.count("order_id") == 1
    assert [r.score.reward for r in results[3:]] == [0.0, 0.0]


def test_api_errors_are_observations_and_every_episode_starts_from_fresh_state(domain):
    d = domain("shop-api")
    task = d.task("train", 4, 0)
    first = d.start(task)
    added = first.step(api(task.meta["plan"][0]))
    assert "HTTP 200" in added.observation
    bad = first.step('<tool name="api">POST /cart {"sku": </tool><tool name="api">FETCH /x</tool>'
                     '<tool name="api">GET /nowhere</tool><tool name="api">POST /checkout '
                     '{"x": 1}</tool>')
    assert "error: the request body is not valid JSON" in bad.observation
    assert "error: expected 'METHOD /path [JSON body]'" in bad.observation
    assert 'HTTP 404\n{"error": "no route GET /nowhere"}' in bad.observation
    assert '"order_id"' in bad.observation
    fresh = d.start(task).step(api(["GET", "/cart", None]))
    assert '{"lines": [], "total": 0}' in fresh.observation


class KvPolicy:
    """Follows the chain by reading values, and unlocks the locked key as its value says."""

    def __init__(self):
        self.current, self.pin_key, self.unlock_key, self.queue = "start", None, None, []

    def __call__(self, observations):
        if len(observations) == 1:
            return self.get("start")
        if self.queue:
            return self.queue.pop(0)
        body = api_body(observations[-1])
        value = str(body.get("value", ""))
        if body.get("key") == self.pin_key:
            self.queue.append(self.get(self.current))
            body = json.dumps({"value": value})
            return f'<tool name="api">PUT /keys/{self.unlock_key} {body}</tool>'
        if value.startswith("treasure: "):
            return f"<answer>{value.removeprefix('treasure: ')}</answer>"
        if value.startswith("locked: "):
            self.pin_key, self.unlock_key = re.findall(r"key '([^']+)'", value)
            return self.get(self.pin_key)
        self.current = value.removeprefix("next: ")
        return self.get(self.current)

    @staticmethod
    def get(key):
        return f'<tool name="api">GET /keys/{key}</tool>'


def test_the_key_value_chain_is_solved_by_following_values_and_unlocking(domain, play):
    d = domain("kv-chain")
    task = d.task("train", 0, 7)
    results = play(d, task, KvPolicy())
    assert results[-1].score.reward == 1.0
    assert any("locked: PUT" in r.observation for r in results[:-1])


def test_the_toolbox_task_combines_paging_conversion_and_arithmetic(domain, play):
    d = domain("toolbox")
    task = d.task("train", 0, 3)
    target = re.search(r"shipments to (\w+)\?", task.prompt).group(1)
    rows, kilos = [], []

    def policy(observations):
        last = observations[-1]
        if len(observations) == 1:
            return f'<tool name="api">GET /shipments?destination={target}&page=1</tool>'
        if "HTTP 200" in last:
            body = api_body(last)
            rows.extend(body["results"])
            if body["page"] < body["pages"]:
                return (f'<tool name="api">GET /shipments?destination={target}'
                        f'&page={body["page"] + 1}</tool>')
        kilos.extend(float(x) for x in re.findall(r"= (\S+) kg", last))
        if len(kilos) < len(rows):
            batch = rows[len(kilos):len(kilos) + 4]
            return "".join(f'<tool name="convert">{r["weight"]} {r["unit"]} to kg</tool>'
                           for r in batch)
        if "calculator" not in last:
            return f'<tool name="calculator">{" + ".join(map(str, kilos))}</tool>'
        total = float(re.search(r"\n(\S+)\n</result>", last).group(1))
        return f"<answer>{total:.2f}</answer>"

    results = play(d, task, policy)
    assert results[-1].score.reward == 1.0
    assert {call for r in results for call in r.info["calls"]} == {"api", "convert", "calculator"}


def test_a_crashing_tool_becomes_an_observation_not_an_exception(domain):
    d = domain("shop-api")
    task = d.task("train", 0, 0)
    broken = type(task)(**{**task.to_dict(), "meta": {}})  # e.g. a task that lost its world
    step = d.start(broken).step('<tool name="api">GET /cart</tool>')
    assert "error: the api tool failed (KeyError: 'world')" in step.observation
    assert not step.done
