"""The static table agrees with the installed reasoning-gym, and listing never imports it."""

import json
import re
import subprocess
import sys

from rlhub import Manifest
from rlhub_reasoning_gym import catalog

TABLE = catalog.load()
ROWS = {row["name"]: row for row in TABLE["datasets"]}


def test_the_table_names_every_installed_dataset_exactly_once():
    from reasoning_gym.factory import DATASETS

    listed = sorted([*ROWS, *TABLE["excluded"]])
    assert listed == sorted(DATASETS)
    assert not ROWS.keys() & TABLE["excluded"].keys()


def test_the_table_was_made_from_the_installed_reasoning_gym_version():
    from importlib import metadata

    assert TABLE["reasoning_gym"] == metadata.version("reasoning-gym")


def test_categories_are_the_packages_the_dataset_classes_live_in():
    from reasoning_gym.factory import DATASETS

    assert {name: catalog.category(DATASETS[name][0]) for name in ROWS} == {
        name: row["category"] for name, row in ROWS.items()}


def test_rebuilding_the_table_gives_the_shipped_table():
    """Gold flags, summaries and exclusions as the installed reasoning-gym has them now."""
    seeded = {name: row["seeded"] for name, row in ROWS.items()}
    assert catalog.differences(TABLE, catalog.build(seeded=seeded)) == []


def test_composite_and_the_scorer_that_accepts_anything_are_excluded_with_reasons():
    excluded = TABLE["excluded"]
    assert sorted(excluded) == ["composite", "game_of_life_halting"]
    assert "default config" in excluded["composite"]
    assert "cannot tell right from wrong" in excluded["game_of_life_halting"]


def test_the_datasets_without_gold_answers_are_marked_so():
    assert sorted(n for n, r in ROWS.items() if not r["gold"]) == [
        "boxnet", "graph_color", "propositional_logic", "rubiks_cube", "rush_hour"]


def test_every_manifest_is_valid_and_its_id_keeps_the_dataset_name():
    for raw in catalog.manifests():
        manifest = Manifest.parse(raw, plugin="rg")
        assert re.fullmatch(r"rg/[A-Za-z0-9][A-Za-z0-9_.+-]*-v3", manifest.id)
        assert manifest.id == f"rg/{raw['params']['dataset']}-v3"
        assert manifest.tags[1] == ROWS[raw["params"]["dataset"]]["category"]


def test_listing_the_domains_imports_neither_reasoning_gym_nor_sympy():
    code = ("import json, sys, rlhub; ids = [i for i in rlhub.registry().ids() if "
            "i.startswith('rg/')]; print(json.dumps([len(ids), sorted(m for m in "
            "('reasoning_gym', 'sympy', 'numpy') if m in sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    assert count == len(ROWS) and heavy == []


def test_the_check_command_reports_agreement():
    """The whole table, seeded flags included: `--check` measures them again in two fresh
    interpreters that differ in hash seed and generation order."""
    out = subprocess.run([sys.executable, "-m", "rlhub_reasoning_gym.catalog", "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    assert out.stdout.strip().endswith("catalog.json matches the installed reasoning-gym")


def test_the_excluded_datasets_are_listed_as_left_out_with_their_reason():
    import rlhub

    rows = {r["id"]: r for r in rlhub.registry().left_out if r["plugin"] == "rg"}
    assert sorted(rows) == ["rg/composite-v3", "rg/game_of_life_halting-v3"]
    assert "cannot tell right from wrong" in rows["rg/game_of_life_halting-v3"]["reason"]
