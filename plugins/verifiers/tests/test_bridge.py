"""The verifiers bridge: discovery, manifests, scoring, episodes, and what it refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rlhub.testing import check_domain

ARITH, GUESS, TOOLS, FRAGILE = (f"vf/rlhub-test-{n}-v1" for n in ("arith", "guess", "tools",
                                                                   "fragile"))


def test_installed_environments_become_domains_and_a_two_seat_env_is_left_out(vf_registry):
    # Other installed distributions that require verifiers are scanned too (reasoning-core does,
    # and is left out: it exports no environment); the test environments are the ones known here.
    ids = [i for i in vf_registry.ids() if i.startswith("vf/rlhub-test-")]
    assert ids == [ARITH, FRAGILE, GUESS, "vf/rlhub-test-stall-v1", TOOLS]
    excluded = {e["id"]: e["reason"] for e in vf_registry.left_out if e["plugin"] == "vf"}
    assert {k: v for k, v in excluded.items() if k.startswith("vf/rlhub-test-")} == {
        "vf/rlhub-test-duel-v1": "its env has 2 agent seats (blue, red); an rlhub domain plays "
                                 "one policy"}
    assert all(excluded.values())


def test_version_license_and_bridge_come_from_the_source_distribution(vf_registry):
    manifest = vf_registry.manifest(ARITH)
    assert (manifest.version, manifest.data["license"]) == ("1.2.0", "MIT")
    assert manifest.data["params"]["bridge"] == {"plugin": "rlhub-verifiers",
                                                 "source": "rlhub-test-arith",
                                                 "source_version": "1.2.0"}
    assert vf_registry.manifest(GUESS).data["license"] == "Apache-2.0"


def test_rewards_become_weighted_components(vf_registry):
    manifest = vf_registry.manifest(ARITH)
    assert manifest.components == {
        "correct": {"weight": 1.0, "description": "verifiers reward 'correct'"},
        "short": {"weight": 0.0, "description": "verifiers reward 'short'"}}
    domain = vf_registry.get(ARITH)
    task = domain.task("train", 0, 0)
    right = domain.verify(task, f"so \\boxed{{{task.gold}}}")
    wrong = domain.verify(task, "\\boxed{-1}" + "x" * 300)
    assert (right.reward, right.passed, right.components) == (1.0, True,
                                                              {"correct": 1.0, "short": 1.0})
    assert (wrong.reward, wrong.passed, wrong.components) == (0.0, False,
                                                              {"correct": 0.0, "short": 0.0})
    assert wrong.feedback == "verifiers rewards: correct: 0; short: 0"


def test_every_bridged_domain_meets_the_contract(vf_registry):
    for domain_id in vf_registry.match(["vf/*"]):
        assert check_domain(domain_id, registry=vf_registry) == [], domain_id


def test_splits_partition_a_finite_taskset_and_seeds_permute_it(vf_registry):
    domain = vf_registry.get(ARITH)
    train = {domain.position("train", 0, i) for i in range(200)}
    test = {domain.position("test", 0, i) for i in range(200)}
    assert train.isdisjoint(test) and train | test == set(range(40))
    first = [domain.position("train", 0, i) for i in range(8)]
    assert first != [domain.position("train", 1, i) for i in range(8)]


def test_a_crashing_reward_function_is_a_verifier_error_not_a_wrong_answer(vf_registry):
    domain = vf_registry.get(FRAGILE)
    task = domain.task("train", 0, 0)
    score = domain.verify(task, "boom")
    assert (score.reward, score.failure, score.trainable) == (0.0, "verifier", False)
    assert score.error.startswith("VerifierError: the verifiers environment failed: TaskError")
    assert "divided by zero" in score.error
    assert domain.verify(task, "ok").reward == 1.0


def test_a_forged_task_cannot_choose_what_is_scored(vf_registry):
    domain = vf_registry.get(ARITH)
    task = domain.task("train", 0, 0)
    other = domain.task("train", 0, 1)
    forged = type(task)(**{**task.to_dict(), "prompt": other.prompt, "meta": other.meta})
    assert domain.verify(forged, other.gold).reward == (1.0 if other.gold == task.gold else 0.0)
    negative = type(task)(**{**task.to_dict(), "id": f"{ARITH}:train:0:-1"})
    assert domain.verify(negative, task.gold).failure == "label"
    stranger = type(task)(**{**task.to_dict(), "id": "math/x-v1:train:0:0"})
    score = domain.verify(stranger, task.gold)
    assert score.reward == 0.0
    assert score.failure == "label"
    assert score.error == ("LabelError: expected a task id 'vf/rlhub-test-arith-v1:SPLIT:SEED:"
                           "INDEX' of this domain, found 'math/x-v1:train:0:0'; tasks come from "
                           "`rlhub sample vf/rlhub-test-arith-v1`")


def test_listing_uses_the_cache_and_never_imports_verifiers(vf_registry):
    code = ("import sys, rlhub; reg = rlhub.registry(); "
            "print(json.dumps([sorted(i for i in reg.ids() if i.startswith('vf/')), "
            "'verifiers' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True,
                         text=True, env=os.environ, timeout=120, check=True)
    ids, imported = json.loads(out.stdout)
    assert ids == [ARITH, FRAGILE, GUESS, "vf/rlhub-test-stall-v1", TOOLS] and not imported


def test_a_new_version_of_an_environment_is_described_again(vf_site, tmp_path):
    import vfsite

    site = vfsite.install(tmp_path / "site", ["rlhub-test-arith"], version="2rc1")
    env = {**os.environ, "PYTHONPATH": str(site), "RLHUB_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", "from rlhub.cli import main; main()", "show",
                          ARITH, "--json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert (shown["version"], shown["params"]["bridge"]["source_version"]) == ("2-rc1",
                                                                              "2rc1")
