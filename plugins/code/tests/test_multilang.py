"""The multilingual domains: every language's gold through the rendered harness, solutions in
several languages to one stdin/stdout problem, and the forgeries a policy would try."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rlhub import Registry, Task
from rlhub_code.polyglot import DIALECTS, results
from rlhub_code.polyglot_gold import GOLD

SAMPLE = ("python", "javascript", "cpp")  # the dialects make test checks; the rest are slow


@pytest.fixture(scope="module")
def registry() -> Iterator[Registry]:
    made = Registry()
    yield made
    made.services.close()


def task_in(registry: Registry, domain_id: str, language: str, want: str) -> Task:
    """A task of ``domain_id`` in ``language`` whose function is ``want`` (drawn by seed)."""
    domain = registry.get(domain_id)
    for seed in range(200):
        task = domain.sample(1, seed=seed)[0]
        if task.meta["language"] == language and want in task.meta["signature"]:
            return task
    raise AssertionError(f"no {want} task in {language} within 200 seeds")


def dialect_params() -> list[object]:
    return [pytest.param(name, marks=[] if name in SAMPLE else [pytest.mark.slow])
            for name in sorted(DIALECTS)]


@pytest.mark.parametrize("language", dialect_params())
@pytest.mark.parametrize(("domain_id", "function"), [("code/poly-coins-v1", "min_coins"),
                                                     ("code/poly-coins-v1", "coin_ways"),
                                                     ("code/poly-editdist-v1", "edit_distance")])
def test_each_languages_gold_passes_its_rendered_tests(registry: Registry, domain_id: str,
                                                       function: str, language: str) -> None:
    task = task_in(registry, domain_id, language, function)
    score = registry.get(domain_id).verify(task, task.gold)
    assert score.passed and score.reward == 1.0, score.feedback


def test_every_dialect_has_a_gold_for_every_function() -> None:
    assert all(set(golds) == set(DIALECTS) for golds in GOLD.values())


def test_results_printed_twice_or_not_at_all_count_as_failures() -> None:
    out = "@@rlhub 0 5\n@@rlhub 1 3\n@@rlhub 1 4\nnoise\n@@rlhub 3 x y\n"
    assert results(out, 4) == ["5", None, None, "x y"]


def test_printing_every_possible_answer_earns_nothing(registry: Registry) -> None:
    task = task_in(registry, "code/poly-coins-v1", "python", "min_coins")
    guesses = "\n".join(f"print('@@rlhub {i} {v}')" for i in range(12) for v in range(-1, 40))
    forged = f"```python\n{guesses}\ndef min_coins(coins, amount):\n    return 0\n```"
    score = registry.get("code/poly-coins-v1").verify(task, forged)
    assert score.reward == 0.0 and not score.passed


def test_a_candidate_that_exits_before_the_tests_earns_nothing(registry: Registry) -> None:
    task = task_in(registry, "code/poly-editdist-v1", "javascript", "edit_distance")
    quits = "```javascript\nfunction edit_distance(a, b) { return 0; }\nprocess.exit(0);\n```"
    score = registry.get("code/poly-editdist-v1").verify(task, quits)
    assert score.reward == 0.0 and "no single result" in score.feedback


CPP_COINS = """```cpp
#include <bits/stdc++.h>
using namespace std;
int main() {
    int t; cin >> t;
    while (t--) {
        int n; cin >> n; vector<long> c(n); for (auto &x : c) cin >> x;
        long amount; cin >> amount;
        vector<long> best(amount + 1, -1);
        best[0] = 0;
        for (long v = 1; v <= amount; ++v)
            for (long x : c) if (x <= v && best[v - x] >= 0 && (best[v] < 0 || best[v - x] + 1 < best[v]))
                best[v] = best[v - x] + 1;
        cout << best[amount] << "\\n";
    }
}
```"""


def cp_task(registry: Registry, function: str) -> Task:
    domain = registry.get("code/cp-coins-v1")
    for seed in range(100):
        task = domain.sample(1, seed=seed)[0]
        if f"`{function}`" in task.prompt:
            return task
    raise AssertionError(f"no {function} task")


def test_a_cpp_solution_to_a_stdin_problem_is_judged_by_its_fence(registry: Registry) -> None:
    task = cp_task(registry, "min_coins")
    score = registry.get("code/cp-coins-v1").verify(task, CPP_COINS)
    assert score.passed and score.reward == 1.0, score.feedback
    assert score.exec and score.exec["status"] == "ok"


@pytest.mark.slow
def test_a_haskell_solution_to_a_stdin_problem_passes_too(registry: Registry) -> None:
    task = cp_task(registry, "coin_ways")
    haskell = """```haskell
import Data.Array
main :: IO ()
main = do
  (t : rest) <- map read . words <$> getContents
  mapM_ print (go t rest)
go :: Integer -> [Integer] -> [Integer]
go 0 _ = []
go k (n : xs) = let (cs, amount : ys) = splitAt (fromIntegral n) xs in ways cs amount : go (k - 1) ys
ways :: [Integer] -> Integer -> Integer
ways cs amount = foldl step (listArray (0, a) (1 : replicate a 0)) cs ! a
  where
    a = fromIntegral amount
    step arr c = let new = listArray (0, a) [ (arr ! v) + (if v >= fromIntegral c then new ! (v - fromIntegral c) else 0) | v <- [0 .. a]] in new
```"""
    score = registry.get("code/cp-coins-v1").verify(task, haskell)
    assert score.passed, score.feedback


def test_a_fence_naming_no_language_is_the_answers_fault(registry: Registry) -> None:
    task = cp_task(registry, "min_coins")
    score = registry.get("code/cp-coins-v1").verify(task, "```brainfuck\n+++\n```")
    assert score.reward == 0.0 and "no language here" in score.feedback


def test_a_program_that_prints_nothing_or_the_example_earns_nothing(registry: Registry) -> None:
    task = cp_task(registry, "min_coins")
    domain = registry.get("code/cp-coins-v1")
    example = task.prompt.split("Example output:\n```\n")[1].split("```")[0]
    for completion in ("```python\npass\n```",
                       f"```python\nprint({example!r}, end='')\n```"):
        score = domain.verify(task, completion)
        assert score.reward == 0.0, (completion, score)


def test_tasks_are_deterministic_and_draw_several_languages(registry: Registry) -> None:
    domain = registry.get("code/poly-coins-v1")
    first, again = domain.sample(20, seed=3), domain.sample(20, seed=3)
    assert [t.prompt for t in first] == [t.prompt for t in again]
    assert len({t.meta["language"] for t in first}) >= 4


def test_a_solution_over_64_kib_is_refused_unrun_as_the_answers_fault(registry: Registry) -> None:
    """g++ spent its whole 40 s compile budget on the kit's 100 KB of nested parentheses."""
    nested = "(" * 50_000 + "987654321" + ")" * 50_000
    for domain_id, task in (("code/poly-coins-v1", task_in(registry, "code/poly-coins-v1", "cpp",
                                                           "coin_ways")),
                            ("code/cp-coins-v1", cp_task(registry, "min_coins"))):
        score = registry.get(domain_id).verify(task, f"```cpp\n{nested}\n```")
        assert (score.reward, score.trainable, score.exec) == (0.0, True, None), score
        assert "bytes; expected at most 65,536, so it was not run" in score.feedback
