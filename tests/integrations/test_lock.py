"""Mixture locks: ``rlhub lock`` writes them, ``check_lock`` names every difference."""

from __future__ import annotations

import importlib
import json
import uuid
from importlib import metadata

import pytest
import yaml
from hub_helpers import ROWS, write_data_domain

from rlhub import Registry, sourcegraph
from rlhub.integrations.hub.lock import check_lock, lock_hash, mixture_lock, read_lock, seal, write_lock


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
    from rlhub.integrations.hub.lock import domain_record

    new = domain_record(now.manifest("mydata/double-v1"), now)["verifier_code_hash"]
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


def test_a_locked_eval_whose_mixture_gains_a_domain_outside_the_lock_refuses_before_running(
    tmp_path, mixture, registry, data_domain, cli
):
    lock_path = write_lock(mixture_lock(mixture, registry), tmp_path / "rlhub.lock")
    extra = write_data_domain(tmp_path / "extra", id="mydata/triple-v1")  # matches mydata/*
    assert check_lock(lock_path, Registry(domain_files=[data_domain, extra]), mixture) == [
        "mixture: domain mydata/triple-v1 is not in the lock; lock the mixture again with "
        "`rlhub lock --mixture FILE` to cover it"
    ]
    run = tmp_path / "run"
    result = cli("--domains-file", data_domain, "--domains-file", extra, "eval", "--mixture",
                 mixture, "--policy", "builtin:tiny", "-n", 1, "--out", run, "--locked",
                 lock_path)
    assert result.exit_code == 2
    assert "mixture: domain mydata/triple-v1 is not in the lock" in result.stderr
    assert not any(run.rglob("*.parquet"))


def test_a_changed_mixture_setting_is_named(tmp_path, mixture, registry):
    lock_path = write_lock(mixture_lock(mixture, registry), tmp_path / "rlhub.lock")
    changed = yaml.safe_load(mixture.read_text())
    changed["domains"]["structured/yaml-config-v2"] = 5.0
    changed["seed"] = 3
    assert check_lock(lock_path, registry, changed) == [
        "mixture: domains.structured/yaml-config-v2.weight changed from 2.0 to 5.0",
        "mixture: seed changed from 0 to 3",
    ]
    assert check_lock(lock_path, registry, mixture) == []


def test_a_lock_from_another_rlhub_version_is_refused(tmp_path, mixture, registry):
    lock = mixture_lock(mixture, registry)
    now = lock["rlhub_version"]
    lock["rlhub_version"] = "0.0.1"
    path = write_lock(seal(lock), tmp_path / "rlhub.lock")
    assert check_lock(path, registry, mixture) == [
        f"rlhub_version changed from '0.0.1' to '{now}'"
    ]


def test_scoring_library_versions_are_locked_and_a_different_one_is_named(tmp_path):
    reg = Registry()
    wanted = ["math/arithmetic-l1-v2", "rg/leg_counting-v3"]
    if not all(d in reg.manifests for d in wanted):
        pytest.fail("the first-party plugins rlhub-math and rlhub-reasoning-gym are not installed")
    lock = mixture_lock({"strategy": "uniform", "domains": wanted}, reg)
    math_libs = lock["domains"]["math/arithmetic-l1-v2"]["libraries"]
    gym_libs = lock["domains"]["rg/leg_counting-v3"]["libraries"]
    gym = next(d for d in gym_libs if d.replace("_", "-").lower() == "reasoning-gym")
    assert math_libs["math-verify"] == metadata.version("math-verify")
    assert gym_libs[gym] == metadata.version(gym)
    lock["domains"]["math/arithmetic-l1-v2"]["libraries"]["math-verify"] = "0.0.1"
    path = write_lock(seal(lock), tmp_path / "rlhub.lock")
    assert check_lock(path, reg) == [
        "domain math/arithmetic-l1-v2: library math-verify changed from '0.0.1' to "
        f"'{metadata.version('math-verify')}'"
    ]


PLUGIN = """
from rlhub import hookimpl

PLUGIN_NAME = "PKG"

@hookimpl
def rlhub_domains():
    return [{"id": "PKG/add-v1", "version": "1", "summary": "Add.", "license": "MIT",
             "tags": ["math"],
             "reward": {"range": [0, 1], "components": {"correct": {"weight": 1.0}}},
             "factory": "PKG.domains:make"}]
"""
DOMAINS = '''
from rlhub import Domain, Verdict
from PKG.scoring import score

class Add(Domain):
    def generate(self, rng, split, index):
        return {"prompt": "1 + 1?", "answer": "2", "gold": "2"}

    def check(self, task, completion):
        return Verdict({"correct": score(task.answer, completion)}, True)

def make(manifest):
    return Add(manifest)
'''


def test_the_verifier_code_hash_covers_the_modules_the_verifier_imports_from_its_plugin(
    tmp_path, monkeypatch
):
    name = f"lockprobe_{uuid.uuid4().hex[:8]}"
    package = tmp_path / "src" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plugin.py").write_text(PLUGIN.replace("PKG", name))
    (package / "domains.py").write_text(DOMAINS.replace("PKG", name))
    scoring = package / "scoring.py"
    scoring.write_text("def score(answer, completion):\n    return float(answer == completion)\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    plugin = importlib.import_module(f"{name}.plugin")
    reg = Registry(plugins=[plugin], autoload=False)
    mix = {"strategy": "uniform", "domains": [f"{name}/add-v1"]}
    path = write_lock(mixture_lock(mix, reg), tmp_path / "rlhub.lock")
    scoring.write_text("def score(answer, completion):\n    return 1.0  # pays for anything\n")
    sourcegraph.forget()
    (problem,) = check_lock(path, reg, mix)
    assert problem.startswith(f"domain {name}/add-v1: verifier_code_hash changed from ")


def test_a_locked_eval_reads_validates_and_expands_its_mixture_once(
    tmp_path, mixture, registry, data_domain, cli, monkeypatch
):
    import rlhub.mixture

    lock_path = write_lock(mixture_lock(mixture, registry), tmp_path / "rlhub.lock")
    loads, real = [], rlhub.mixture.load_mixture

    def counted(source, *args, **kw):
        loads.append(source)
        return real(source, *args, **kw)

    monkeypatch.setattr(rlhub.mixture, "load_mixture", counted)
    result = cli("--domains-file", data_domain, "eval", "--mixture", mixture, "--policy",
                 "builtin:tiny", "-n", 1, "--out", tmp_path / "run", "--locked", lock_path)
    assert result.exit_code == 0, result.stderr
    assert loads == [str(mixture)]  # the lock check, the domains and the judges share one load
