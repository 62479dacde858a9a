"""The plugin's manifests: cheap to list, complete, and guarded against unrecomputable rewards."""

import json
import subprocess
import sys

import pytest

import rlhub
from rlhub import Manifest, ManifestError
from rlhub_agentic.plugin import DOMAINS
from rlhub_agentic.sql import SqlDomain


def test_listing_the_domains_imports_no_domain_code_and_no_sandbox():
    code = ("import sys, json; from rlhub_agentic.plugin import rlhub_domains; rlhub_domains(); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('rlhub_agentic', "
            "'sqlite3', 'rlhub.sandbox', 'rlhub.verifiers', 'torch', 'numpy')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["rlhub_agentic", "rlhub_agentic.plugin"]


def test_the_plugin_registers_at_least_ten_multi_turn_domains():
    ids = [i for i in rlhub.registry().ids() if i.startswith("agentic/")]
    assert len(ids) >= 10 and len(ids) == len(DOMAINS)
    for domain_id in ids:
        manifest = rlhub.registry().manifest(domain_id)
        assert manifest.max_turns > 1 and 0 < manifest.repair_discount <= 1
        assert manifest.components["correct"]["weight"] == 1.0
        assert manifest.components["tool_calls"]["weight"] == 0.0


def test_an_episode_only_component_with_a_nonzero_weight_is_rejected():
    raw = json.loads(json.dumps(DOMAINS[0]))
    raw["reward"]["components"]["tool_calls"]["weight"] = 0.1
    manifest = Manifest.parse(raw, plugin="agentic")
    with pytest.raises(ManifestError, match="expected weight 0 for the episode-only component "
                                            "'tool_calls' \\(verify\\(\\) cannot recompute it\\), "
                                            "found 0.1"):
        SqlDomain(manifest)


def test_sampling_is_deterministic_and_tasks_survive_a_json_round_trip():
    domain = rlhub.registry().get("agentic/shop-api-v2")
    first, again = domain.task("train", 5, 11), domain.task("train", 5, 11)
    assert first == again
    assert rlhub.Task.from_dict(json.loads(json.dumps(first.to_dict()))) == first
    assert domain.task("train", 5, 12).answer != first.answer
