"""Mixture locks: ``rlhub lock`` writes them, ``check_lock`` names every difference."""

from __future__ import annotations

import json

import pytest
import yaml
from hub_helpers import ROWS, write_data_domain

from rlhub import Registry
from rlhub.hub.lock import check_lock, lock_hash, mixture_lock, read_lock, write_lock


@pytest.fixture
def mixture(tmp_path):
    path = tmp_path / "mix.yaml"
    path.write_text(
        yaml.safe_dump(
            {"strategy": "static", "domains": {"mydata/*": 1.0, "structured/yaml-config-v2": 2.0}}
        )
    )
    return path


@pytest.fixture
def registry(data_domain):
    reg = Registry(domain_files=[data_domain])
    if "structured" not in reg.plugins:
        pytest.skip("the first-party plugin rlhub-structured is not installed in this venv")
    return reg


def test_rlhub_lock_pins_plugin_versions_domain_versions_and_hashes(
    tmp_path, mixture, data_domain, cli
):
    out = tmp_path / "rlhub.lock"
    result = cli(
        "--domains-file", data_domain, "lock", "--mixture", mixture, "--out", out, "--json"
    )
    assert result.exit_code == 0, result.output
    lock = read_lock(out)
    assert json.loads(result.stdout) == {
        "path": str(out),
        "lock_hash": lock["lock_hash"],
        "domains": ["mydata/double-v1", "structured/yaml-config-v2"],
    }
    assert lock["lock_hash"] == lock_hash(lock)
    assert lock["plugins"]["structured"] == {"distribution": "rlhub-structured", "version": "1.0.0"}
    record = lock["domains"]["structured/yaml-config-v2"]
    assert (record["domain_version"], record["distribution_version"]) == ("2.0.0", "1.0.0")
    assert len(record["verifier_code_hash"]) == len(record["manifest_hash"]) == 64
    assert lock["domains"]["mydata/double-v1"]["distribution"] == "domain file double.yaml"


def test_a_lock_checks_clean_and_its_hash_is_stable_while_nothing_changes(
    tmp_path, mixture, registry
):
    first, second = mixture_lock(mixture, registry), mixture_lock(mixture, registry)
    assert first["lock_hash"] == second["lock_hash"]
    path = write_lock(first, tmp_path / "rlhub.lock")
    assert check_lock(path, registry) == []


def test_the_same_data_domain_in_another_folder_checks_clean(tmp_path, mixture, registry):
    path = write_lock(mixture_lock(mixture, registry), tmp_path / "rlhub.lock")
    moved = write_data_domain(tmp_path / "elsewhere")
    assert check_lock(path, Registry(domain_files=[moved])) == []


def test_a_changed_dataset_is_named_with_the_hash_that_changed(
    tmp_path, mixture, registry, data_domain
):
    lock = mixture_lock(mixture, registry)
    path = write_lock(lock, tmp_path / "rlhub.lock")
    write_data_domain(data_domain.parent.parent, rows=ROWS[:-1])
    now = Registry(domain_files=[data_domain])
    was = lock["domains"]["mydata/double-v1"]["verifier_code_hash"]
    from rlhub.hub.lock import domain_record

    new = domain_record(now.manifest("mydata/double-v1"))["verifier_code_hash"]
    assert check_lock(path, now) == [
        f"domain mydata/double-v1: verifier_code_hash changed from {was[:12]}... to {new[:12]}..."
    ]


def test_a_missing_domain_and_a_hand_edited_lock_are_reported(tmp_path, mixture, registry):
    lock = mixture_lock(mixture, registry)
    path = write_lock(lock, tmp_path / "rlhub.lock")
    assert check_lock(path, Registry()) == [
        "domain mydata/double-v1: locked but not installed (expected it from domain file "
        "double.yaml; install that plugin or `rlhub pull` the environment)"
    ]
    lock["domains"]["structured/yaml-config-v2"]["domain_version"] = "0.9.0"
    path.write_text(json.dumps(lock))
    (problem,) = check_lock(path, registry)
    assert problem.startswith(
        f"lock {path}: expected the recorded lock_hash "
        f"'{lock['lock_hash']}', found content hashing to "
    )
    absent = tmp_path / "absent.lock"
    assert check_lock(absent, registry) == [
        f"lock {absent}: expected a readable file, found No such file or directory"
    ]
