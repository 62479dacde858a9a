"""The TextArena bridge: isolated randomness, observation options, listing, versions."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from dataclasses import replace

import pytest

import rlhub
from rlhub.provenance import verifier_code_hash
from rlhub_textarena import catalog

REG = rlhub.registry()
BLACKJACK = "textarena/blackjack-long-v1"  # draws a card from the global random module each move


def blackjack_line(task: rlhub.Task, interleave: bool = False) -> list[str]:
    """The observations of a fixed line of play, optionally disturbing global random between."""
    episode, seen = REG.get(BLACKJACK).start(task), []
    for move in ["[Hit]", "[Stand]"] * 10:
        if interleave:
            random.seed(99)
            REG.get(BLACKJACK).start(task).step("[Hit]")
        result = episode.step(move)
        seen.append(result.observation or result.score.feedback)
        if result.done:
            break
    return seen


def test_an_episode_replays_the_same_whatever_else_uses_the_global_random_module():
    task = REG.get(BLACKJACK).task("train", 0, 0)
    assert blackjack_line(task) == blackjack_line(task, interleave=True)


def test_episodes_played_in_threads_replay_as_played_alone():
    tasks = REG.get(BLACKJACK).sample(6, seed=5)
    alone = [blackjack_line(t) for t in tasks]
    together: list[list[str] | None] = [None] * len(tasks)

    def run(i: int) -> None:
        together[i] = blackjack_line(tasks[i])
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(tasks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert together == alone


def test_playing_a_game_leaves_the_callers_random_state_alone():
    random.seed(1234)
    before = random.getstate()
    blackjack_line(REG.get(BLACKJACK).task("train", 0, 1))
    assert random.getstate() == before


def test_what_textarena_prints_goes_to_stderr_so_json_output_stays_json():
    out = subprocess.run([sys.executable, "-m", "rlhub", "sample", "textarena/rush-hour-v1",
                          "-n", "2", "--json"], capture_output=True, text=True, check=True)
    assert [json.loads(line)["domain"] for line in out.stdout.splitlines()] == [
        "textarena/rush-hour-v1"] * 2
    assert "Generated puzzle" in out.stderr


def test_train_and_test_splits_never_deal_the_same_game():
    domain = REG.get("textarena/minesweeper-v1")
    train = {t.meta["seed"] for t in domain.sample(50, split="train")}
    test = {t.meta["seed"] for t in domain.sample(50, split="test")}
    assert not train & test and all(s % 2 == 0 for s in train) and all(s % 2 for s in test)


@pytest.mark.parametrize("mode", ["full", "train"])
def test_textarenas_wrapper_variants_are_options_of_the_same_domain(mode):
    domain = REG.get("textarena/guess-the-number-v1")
    task = domain.task("train", 0, 0)
    chat = domain.start(task).step("[10]").observation
    other = domain.start(replace(task, meta={**task.meta, "observation": mode})).step("[10]")
    assert "The target number is" in chat and "The target number is" in other.observation
    assert other.observation != chat
    assert domain.manifest.data["params"]["observations"][mode].startswith("GuessTheNumber-v0")


def test_an_unknown_observation_option_is_refused_naming_the_options():
    domain = REG.get("textarena/guess-the-number-v1")
    task = domain.task("train", 0, 0)
    with pytest.raises(ValueError, match=r"expected task.meta\['observation'\] in \['chat', "
                                         r"'full', 'train'\], found 'html'"):
        domain.start(replace(task, meta={**task.meta, "observation": "html"}))


def test_a_move_after_the_game_ended_changes_nothing():
    domain = REG.get("textarena/three-card-monte-v1")
    episode = domain.start(domain.task("train", 0, 0))
    final = episode.step("[0]")
    again = episode.step("[1]")
    assert final.done and again.done and again.score == final.score
    assert again.info["error"] == "the game is over; start a new episode"


def test_listing_reads_the_catalog_without_importing_textarena():
    code = ("import sys, rlhub; ids = rlhub.registry().ids(); "
            "print(sum(i.startswith('textarena/') for i in ids), 'textarena' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(len(catalog.load()["domains"])), "False"]


def test_rlhub_list_all_shows_every_left_out_environment_with_its_reason():
    out = subprocess.run([sys.executable, "-m", "rlhub", "list", "--all", "--json",
                          "--plugin", "textarena"], capture_output=True, text=True, check=True)
    rows = {r["id"]: r for r in json.loads(out.stdout)}
    left = {i: r["left_out"] for i, r in rows.items() if "left_out" in r}
    assert len(left) == len(catalog.load()["left_out"])
    assert "NLTK corpus 'words'" in left["textarena/wordle-v1"]
    assert "two or more players" in left["textarena/stratego-v1"]
    assert "luck alone" in left["textarena/kuhn-poker-v1"]
    assert "one fixed move sequence" in left["textarena/colonel-blotto-v1"]
    assert "textarena/pig-dice-v1" in left["textarena/pig-dice-100-v1"]
    assert "only ever rolls" in left["textarena/pig-dice-50-v1"]
    assert "first legal move" in left["textarena/othello-big-v1"]
    assert "regret" in left["textarena/bandit-v1"]
    assert "OpenRouter" in left["textarena/twenty-questions-v1"]
    assert "left_out" not in rows["textarena/sudoku-v1"]


def test_plain_rlhub_list_shows_no_left_out_rows():
    out = subprocess.run([sys.executable, "-m", "rlhub", "list", "--json", "--plugin",
                          "textarena"], capture_output=True, text=True, check=True)
    assert all("left_out" not in r for r in json.loads(out.stdout))


def test_bandit_is_left_out_because_textarena_pays_a_worse_final_choice_more():
    """The reason in the catalog, shown with TextArena itself."""
    import textarena as ta

    paid = {}
    for button in ("best", "middle", "worst"):
        env = ta.make("Bandit-v0-raw")
        env.reset(num_players=1, seed=0)
        means = env.state.game_state["ground_truth"]
        ranked = sorted(means, key=means.get, reverse=True)
        choice = {"best": ranked[1], "middle": ranked[2], "worst": ranked[-1]}[button]
        env.state.turn = env.num_turns  # jump to the final choice
        env.step(f"[{choice}]")
        paid[button] = env.close()[0][0]
    assert paid["worst"] > paid["middle"] > paid["best"] > 0


def test_the_lock_record_names_the_textarena_version_and_its_hash_follows_it():
    manifest = REG.manifest("textarena/sudoku-v1")
    record = REG.services.provenance(manifest)
    assert record["source_versions"] == {"textarena": catalog.load()["textarena"]}
    assert manifest.data["requires"] == {"textarena": f"=={catalog.load()['textarena']}"}
    before = verifier_code_hash(manifest, REG.services.verifier_refs())
    other = verifier_code_hash(manifest, REG.services.verifier_refs(),
                               lambda name: "9.9.9" if name == "textarena" else "1.0.0")
    assert other != before


def test_the_catalog_was_made_from_the_installed_textarena():
    from importlib import metadata

    assert catalog.load()["textarena"] == metadata.version("textarena")


def test_every_registered_textarena_environment_is_a_domain_or_left_out():
    from textarena.envs.registration import ENV_REGISTRY

    table = catalog.load()
    base = {i for i in ENV_REGISTRY if not i.endswith(("-raw", "-train")) and "-raw-" not in i
            and "-train-" not in i}
    assert {r["env_id"] for r in table["domains"]} | set(table["left_out"]) == base


def test_rebuilding_one_row_of_each_game_gives_the_shipped_row():
    """One level per game: rebuilding all 43 rows means generating every puzzle thrice (minutes)."""
    from textarena.envs.registration import ENV_REGISTRY

    first = {}
    for row in catalog.load()["domains"]:
        first.setdefault(row["game"], row)
    rows = list(first.values())
    assert [catalog.probe(r["env_id"], set(ENV_REGISTRY)) for r in rows] == rows


@pytest.mark.parametrize("domain_id", ["textarena/countdown-v1", "textarena/cryptarithm-v1",
                                       "textarena/slitherlink-v1", "textarena/three-card-monte-v1"])
def test_a_game_lost_to_invalid_moves_is_a_scored_loss_even_where_textarena_pays_a_string(
        domain_id):
    domain = REG.get(domain_id)
    episode = domain.start(domain.task("train", 0, 0))
    first, second = episode.step("no move here"), episode.step("still no move")
    assert not first.done and second.done
    assert second.score.reward == 0.0 and second.score.error is None
    assert second.score.feedback.startswith("Invalid Move: ")
    assert second.score.components["invalid_moves"] == 2.0


@pytest.mark.parametrize("attack", ["[1" + " " * 40_000 + "x]", "[1 " + " \t" * 20_000 + "2]"])
def test_a_long_whitespace_run_cannot_stall_a_regex_with_adjacent_stars(attack):
    """PegJump parses with ``\\s*\\s*``: quadratic, ~50 s on this input if handed over whole."""
    import time

    domain = REG.get("textarena/peg-jump-v1")
    task = domain.task("train", 0, 0)
    started = time.perf_counter()
    score = domain.verify(task, attack)
    assert time.perf_counter() - started < 5 and score.reward == 0.0
    assert score.components["invalid_moves"] == 1.0


def test_the_fast_sample_keeps_one_variant_of_each_game_the_base_where_there_is_one():
    from rlhub_textarena.catalog import base_variants

    env_ids = {"t/sudoku-hard-v1": "Sudoku-v0-hard", "t/sudoku-v1": "Sudoku-v0",
               "t/2048-very-easy-v1": "2048-v0-very-easy", "t/2048-mega-easy-v1": "2048-v0-mega-easy"}
    assert base_variants(env_ids) == {"t/sudoku-v1", "t/2048-mega-easy-v1"}
