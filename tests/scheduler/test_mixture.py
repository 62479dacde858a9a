"""Mixture configs: the minimal and full forms, glob and group expansion, clear schema errors."""

from __future__ import annotations

import json

import pytest

from rlhub import SchedulerError
from rlhub.mixture import DEFAULT_PARAMS, load_mixture


def test_the_minimal_static_form_is_normalised_with_every_field_present():
    config = load_mixture({"strategy": "static", "domains": {"a": {"weight": 2}, "b": {}}})
    assert list(config["domains"]) == ["a", "b"]
    assert config["domains"]["a"] == {"weight": 2.0, "size": None, "group": None,
                                      "reward_range": None, "normalize": "auto"}
    assert config["eval"] == {"items_per_domain": 200, "every": 50, "split": "test", "seed": 0}
    assert (config["seed"], config["split"], config["params"]) == (0, "train", {})


def test_the_strategy_defaults_to_adaptive_with_its_default_parameters():
    config = load_mixture({"domains": ["a", "b"], "params": {"tau": 0.5}})
    assert config["strategy"] == "adaptive"
    assert config["params"] == {**DEFAULT_PARAMS["adaptive"], "tau": 0.5}


def test_a_bare_number_is_a_weight():
    assert load_mixture({"domains": {"a": 3}})["domains"]["a"]["weight"] == 3.0


def test_load_mixture_is_idempotent():
    once = load_mixture({"strategy": "temperature", "domains": {"a": {"size": 9, "group": "g"},
                                                                "b": 2}})
    assert load_mixture(once) == once


def test_globs_without_a_registry_are_refused_with_the_reason():
    with pytest.raises(SchedulerError) as err:
        load_mixture({"domains": {"rg/*": 1}})
    assert str(err.value) == (
        "mixture config: field domains.rg/*: expected a domain id, found a glob, which needs a "
        "registry to expand; pass registry= or name the domains by id")


def test_globs_expand_against_the_registry_and_exact_ids_refine_them(registry):
    config = load_mixture({"domains": {"rg/b-v1": {"weight": 5}, "rg/*": {"weight": 2}}},
                          registry)
    assert list(config["domains"]) == [f"rg/{x}-v1" for x in "abcde"]
    assert config["domains"]["rg/b-v1"]["weight"] == 5.0
    assert config["domains"]["rg/a-v1"]["weight"] == 2.0


def test_sizes_and_reward_ranges_come_from_manifests_unless_the_config_sets_them(registry):
    config = load_mixture({"domains": {"rg/a-v1": {}, "rg/b-v1": {"size": 7}}}, registry)
    assert config["domains"]["rg/a-v1"]["size"] == 100
    assert config["domains"]["rg/b-v1"]["size"] == 7
    assert config["domains"]["rg/a-v1"]["reward_range"] == [0.0, 1.0]


def test_a_glob_with_a_group_puts_every_match_in_one_group(registry):
    config = load_mixture({"strategy": "static", "domains": {"toy/*": 1, "rg/*": {"group": "rg"}},
                           "groups": {"rg": {"weight": 3}}}, registry)
    assert config["groups"] == {"rg": {"weight": 3.0,
                                       "members": [f"rg/{x}-v1" for x in "abcde"]}}


def test_group_members_may_be_listed_in_the_group_itself(registry):
    config = load_mixture({"domains": ["toy/copy-v1"],
                           "groups": {"rg": {"members": ["rg/a-v1", "rg/b-v1"]}}}, registry)
    assert config["groups"]["rg"]["members"] == ["rg/a-v1", "rg/b-v1"]
    assert config["domains"]["rg/a-v1"]["group"] == "rg"


def test_a_group_without_members_is_an_error():
    with pytest.raises(SchedulerError, match=r"field groups.lonely: expected at least one member"):
        load_mixture({"domains": ["a"], "groups": {"lonely": {"weight": 1}}})


def test_an_unknown_domain_gets_a_did_you_mean(registry):
    with pytest.raises(SchedulerError, match=r"domains.rg/aa-v1: unknown domain 'rg/aa-v1'; "
                                             r"did you mean 'rg/a-v1'"):
        load_mixture({"domains": ["rg/aa-v1"]}, registry)


@pytest.mark.parametrize("raw, message", [
    ({"domains": {"a": {"weight": -1}}},
     "field domains.a.weight: expected a number > 0, found -1"),
    ({"domains": {"a": {"weight": "heavy"}}},
     "field domains.a.weight: expected a number, found string 'heavy'"),
    ({"domains": {"a": {"wieght": 1}}},
     "field domains.a: expected only the fields group, normalize, reward_range, size, weight, "
     "found unknown 'wieght' (did you mean 'weight'?)"),
    ({"strategy": "uniform"},
     "field (top level): expected the field(s) 'domains', found none"),
    ({"domains": ["a"], "normalize": "zscore"},
     "field normalize: expected one of 'auto', 'range', 'running', 'none', found 'zscore'"),
    ({"domains": ["a"], "eval": {"every": 0}},
     "field eval.every: expected a number >= 1, found 0"),
    ({"strategy": "adaptive", "domains": ["a"], "params": {"floor": 2}},
     "field params.floor: expected a number <= 1, found 2"),
    ({"strategy": "static", "domains": ["a"], "params": {"tau": 1}},
     "field params: expected no parameters for this strategy, found ['tau']"),
    ({"strategy": "temperature", "domains": ["a"], "params": {"tua": 1}},
     "field params: expected only the fields default_size, tau, found unknown 'tua' "
     "(did you mean 'tau'?)"),
    ({"domains": {}}, "field domains: expected minProperties 1, found {}"),
])
def test_schema_errors_name_the_field_what_was_expected_and_what_was_found(raw, message):
    with pytest.raises(SchedulerError) as err:
        load_mixture(raw)
    assert str(err.value) == f"mixture config: {message}"


def test_a_reversed_reward_range_is_an_error():
    with pytest.raises(SchedulerError, match=r"domains.a.reward_range: expected \[low, high\] "
                                             r"with low < high, found \[1, 0\]"):
        load_mixture({"domains": {"a": {"reward_range": [1, 0]}}})


def test_yaml_and_json_files_load_the_same_config(tmp_path):
    (tmp_path / "mix.yaml").write_text("strategy: static\ndomains:\n  a: {weight: 2}\n  b: 1\n")
    (tmp_path / "mix.json").write_text(json.dumps({"strategy": "static",
                                                   "domains": {"a": {"weight": 2}, "b": 1}}))
    assert load_mixture(tmp_path / "mix.yaml") == load_mixture(str(tmp_path / "mix.json"))


def test_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("domains: [a\n")
    with pytest.raises(SchedulerError, match=r"mixture file .*bad.yaml: expected YAML, found a "
                                             r"syntax error"):
        load_mixture(bad)
    with pytest.raises(SchedulerError, match=r"mixture file .*missing.yaml: expected a readable "
                                             r"file, found No such file"):
        load_mixture(tmp_path / "missing.yaml")
    (tmp_path / "typo.yaml").write_text("domains: {a: {weight: 0}}\n")
    with pytest.raises(SchedulerError, match=r"mixture file .*typo.yaml: field domains.a.weight"):
        load_mixture(tmp_path / "typo.yaml")
