"""Manifests validate against the shipped schema, with errors naming plugin, domain and field."""

from __future__ import annotations

import pytest
import toyplug

from rlhub import Manifest, ManifestError
from rlhub.manifest import listing_problems, schema


def test_the_schema_is_draft_2020_12_and_ships_in_the_package():
    assert schema("manifest")["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_defaults_are_filled_in():
    m = Manifest.parse(toyplug.manifest("x"), plugin="toy")
    assert m.data["splits"] == ["train", "test"]
    assert m.max_turns == 1 and m.repair_discount == 1.0
    assert m.data["sandbox"] == {"kind": "none"}


def test_a_missing_field_names_plugin_domain_and_field():
    raw = toyplug.manifest("x")
    del raw["license"]
    with pytest.raises(ManifestError) as err:
        Manifest.parse(raw, plugin="toy")
    assert str(err.value) == ("plugin 'toy', domain 'toy/x-v1': field (top level): "
                              "'license' is a required property")


def test_a_wrong_type_names_the_nested_field():
    raw = toyplug.manifest("x", turns={"max_turns": "three"})
    with pytest.raises(ManifestError, match=r"field turns\.max_turns: 'three' is not of type"):
        Manifest.parse(raw, plugin="toy")


def test_an_id_outside_the_plugin_namespace_is_refused():
    with pytest.raises(ManifestError, match="expected the namespace 'other/' of plugin 'other'"):
        Manifest.parse(toyplug.manifest("x"), plugin="other")


def test_a_malformed_id_is_refused():
    raw = {**toyplug.manifest("x"), "id": "toy/NoVersion"}
    with pytest.raises(ManifestError, match="field id: 'toy/NoVersion' does not match"):
        Manifest.parse(raw, plugin="toy")


def test_an_inverted_reward_range_is_refused():
    raw = toyplug.manifest("x", reward={"range": [1, 0], "components": {"c": {"weight": 1}}})
    with pytest.raises(ManifestError, match=r"expected low < high, found \[1, 0\]"):
        Manifest.parse(raw, plugin="toy")


def test_a_non_mapping_manifest_is_refused_clearly():
    with pytest.raises(ManifestError, match="domain '<not a mapping>'"):
        Manifest.parse(["not", "a", "dict"], plugin="toy")


def test_listing_checks_only_the_listed_fields_and_names_what_it_expected_and_found():
    raw = toyplug.manifest("x", license=3, reward="anything")
    assert listing_problems(raw, "toy") == []  # the rest is checked when the domain is used
    assert listing_problems({**raw, "summary": None, "hackable": "hedge"}, "toy") == [
        "field summary: expected a string, found None",
        "field hackable: expected a list of strings, found 'hedge'"]
    assert listing_problems({**raw, "id": "toy/x"}, "toy") == [
        "field id: expected '<plugin>/<name>-v<N>', found 'toy/x'"]
    assert listing_problems({**raw, "scoring": "exact"}, "toy") == [
        "field scoring: expected a mapping with a 'kind', found 'exact'"]
