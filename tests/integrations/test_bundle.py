"""Bundles: what they hold, how they are hashed, and how verification refuses bad files."""

from __future__ import annotations

import json
import shutil
import zipfile

import pyarrow.parquet as pq
import pytest
import yaml
from hub_helpers import write_data_domain

from rlhub import Registry
from rlhub.integrations.hub.bundle import BuildOptions, build_bundle, verify_bundle
from rlhub.integrations.hub.errors import HubError, IntegrityError
from rlhub.integrations.hub.lock import domain_record, lock_hash, seal
from rlhub.integrations.hub.wheel import source_dir
from rlhub.provenance import sha256_file

SMALL = BuildOptions(test_size=4, train_size=3)


def test_a_data_only_bundle_holds_manifest_card_task_sets_domain_file_and_a_lock_of_every_file(
    tmp_path, data_registry
):
    bundle = build_bundle("mydata", tmp_path / "b", registry=data_registry, options=SMALL)
    files = set(bundle.lock["files"])
    assert files == {
        "README.md",
        "manifests/mydata--double-v1.json",
        "domains/double.yaml",
        "domains/data/rows.jsonl",
        "data/mydata--double-v1/test.parquet",
        "data/mydata--double-v1/train.parquet",
    }
    for rel, info in bundle.lock["files"].items():
        assert sha256_file(bundle.root / rel) == info["sha256"]
        assert (bundle.root / rel).stat().st_size == info["size"]
    test = pq.read_table(bundle.root / "data/mydata--double-v1/test.parquet").to_pylist()
    domain = data_registry.get("mydata/double-v1")
    assert [r["id"] for r in test] == [t.id for t in domain.sample(4, split="test", seed=0)]
    assert all(r["split"] == "test" and json.loads(r["answer"]) for r in test)
    entry = bundle.lock["domains"]["mydata/double-v1"]
    record = domain_record(data_registry.manifest("mydata/double-v1"), data_registry)
    assert entry["verifier_code_hash"] == record["verifier_code_hash"]
    assert (entry["code"], entry["dockerfile"], entry["image_digest"]) == (
        "domains/double.yaml",
        None,
        None,
    )


def test_a_dataset_outside_the_domain_folder_is_copied_in_and_the_path_rewritten(
    tmp_path, data_registry
):
    bundle = build_bundle("mydata", tmp_path / "b", registry=data_registry, options=SMALL)
    spec = yaml.safe_load((bundle.root / "domains/double.yaml").read_text())
    assert spec["dataset"] == "data/rows.jsonl"
    pulled = Registry(domain_files=[bundle.root / "domains/double.yaml"], autoload=False)
    assert pulled.get("mydata/double-v1").task("test", 0, 1) == data_registry.get(
        "mydata/double-v1"
    ).task("test", 0, 1)


def test_a_dataset_beside_the_domain_file_is_bundled_byte_for_byte(tmp_path):
    path = write_data_domain(tmp_path / "src", dataset="rows.jsonl")
    registry = Registry(domain_files=[path], autoload=False)
    bundle = build_bundle("mydata/double-v1", tmp_path / "b", registry=registry, options=SMALL)
    assert (bundle.root / "domains/double.yaml").read_bytes() == path.read_bytes()
    assert bundle.name == "mydata--double-v1"
    assert sorted(f for f in bundle.lock["files"] if f.startswith("domains/")) == [
        "domains/double.yaml",
        "domains/rows.jsonl",
    ]


def test_the_bundle_id_is_the_lock_hash_and_the_same_domains_give_the_same_id(
    tmp_path, data_registry
):
    first = build_bundle("mydata", tmp_path / "one", registry=data_registry, options=SMALL)
    again = build_bundle("mydata", tmp_path / "two", registry=data_registry, options=SMALL)
    assert first.id == lock_hash(first.lock) == again.id
    bigger = build_bundle(
        "mydata",
        tmp_path / "three",
        registry=data_registry,
        options=BuildOptions(test_size=5, train_size=3),
    )
    assert bigger.id != first.id


def test_the_card_is_tagged_rlhub_and_lists_license_domains_and_reward_components(
    tmp_path, data_registry
):
    bundle = build_bundle("mydata", tmp_path / "b", registry=data_registry, options=SMALL)
    text = (bundle.root / "README.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["tags"][0] == "rlhub" and "arithmetic" in meta["tags"]
    assert (meta["license"], meta["domains"]) == ("cc-by-4.0", ["mydata/double-v1"])
    assert meta["reward_components"] == {"mydata/double-v1": ["correct"]}
    assert meta["configs"][0]["data_files"][0] == {
        "split": "test",
        "path": "data/mydata--double-v1/test.parquet",
    }
    assert "## Usage" in text and "rlhub pull" in text


def test_a_sandbox_dockerfile_named_by_the_manifest_is_bundled_and_hashed_by_content(tmp_path):
    dockerfile = tmp_path / "img" / "Dockerfile"
    dockerfile.parent.mkdir()
    dockerfile.write_text("FROM python:3.11-slim\n")
    path = write_data_domain(
        tmp_path / "src", sandbox={"kind": "local", "dockerfile": str(dockerfile)}
    )
    registry = Registry(domain_files=[path], autoload=False)
    bundle = build_bundle("mydata", tmp_path / "b", registry=registry, options=SMALL)
    rel = bundle.lock["domains"]["mydata/double-v1"]["dockerfile"]
    assert rel == f"docker/{sha256_file(dockerfile)[:16]}/Dockerfile"
    assert (bundle.root / rel).read_bytes() == dockerfile.read_bytes()
    moved = tmp_path / "elsewhere" / "Dockerfile"
    moved.parent.mkdir()
    shutil.copy(dockerfile, moved)
    path2 = write_data_domain(
        tmp_path / "src2", sandbox={"kind": "local", "dockerfile": str(moved)}
    )
    moved_registry = Registry(domain_files=[path2], autoload=False)
    record = domain_record(moved_registry.manifest("mydata/double-v1"), moved_registry)
    assert record["manifest_hash"] == bundle.lock["domains"]["mydata/double-v1"]["manifest_hash"]


def test_a_plugin_bundle_carries_the_wheel_built_from_the_editable_source(plugin_bundle):
    (wheel,) = plugin_bundle.lock["wheels"]
    assert (wheel["distribution"], wheel["version"]) == ("rlhub-structured", "1.0.0")
    with zipfile.ZipFile(plugin_bundle.root / wheel["path"]) as zf:
        names = zf.namelist()
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "structured = rlhub_structured.plugin" in zf.read(entry_points).decode()
    assert "rlhub_structured/plugin.py" in names
    assert all(e["code"] == wheel["path"] for e in plugin_bundle.lock["domains"].values())
    assert len(plugin_bundle.lock["domains"]) >= 10


def test_a_distribution_installed_from_a_wheel_has_no_source_and_the_error_says_what_to_do():
    with pytest.raises(HubError) as err:
        source_dir("pyyaml")
    assert str(err.value) == (
        "cannot find the source of pyyaml to build its wheel: it was installed from an index or a "
        "wheel, not from a local source folder. Reinstall it with `pip install -e DIR` or pass "
        "--source DIR."
    )


def test_unknown_plugins_and_non_empty_output_folders_are_refused(tmp_path, data_registry):
    with pytest.raises(
        Exception, match=r"unknown plugin or domain id 'mydat'; did you mean 'mydata'\?"
    ):
        build_bundle("mydat", tmp_path / "a", registry=data_registry)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(HubError, match="expected an empty folder"):
        build_bundle("mydata", tmp_path / "full", registry=data_registry)


def test_verification_names_every_tampered_and_missing_file(tmp_path, data_registry):
    bundle = build_bundle("mydata", tmp_path / "b", registry=data_registry, options=SMALL)
    verify_bundle(bundle.root, bundle.id)
    rows = bundle.root / "domains/data/rows.jsonl"
    rows.write_bytes(rows.read_bytes().replace(b'"ans": "2"', b'"ans": "3"', 1))  # same size
    (bundle.root / "data/mydata--double-v1/train.parquet").unlink()
    with pytest.raises(IntegrityError) as err:
        verify_bundle(bundle.root, bundle.id, where="file:///x")
    expected = bundle.lock["files"]["domains/data/rows.jsonl"]["sha256"]
    found = sha256_file(bundle.root / "domains/data/rows.jsonl")
    assert str(err.value) == (
        "bundle at file:///x failed verification: "
        "file data/mydata--double-v1/train.parquet is listed in rlhub.lock but missing; "
        f"file domains/data/rows.jsonl was tampered with: expected sha256 {expected}, found {found}"
    )


def test_a_lock_edited_after_it_was_written_is_refused(tmp_path, data_registry):
    bundle = build_bundle("mydata", tmp_path / "b", registry=data_registry, options=SMALL)
    lock = json.loads((bundle.root / "rlhub.lock").read_text())
    lock["files"]["README.md"]["sha256"] = "0" * 64
    (bundle.root / "rlhub.lock").write_text(json.dumps(lock))
    with pytest.raises(IntegrityError, match="the lock was edited after it was written"):
        verify_bundle(bundle.root)


def test_a_file_whose_size_differs_from_the_lock_is_refused_even_when_its_hash_matches(
    tmp_path, data_registry
):
    bundle = build_bundle("mydata", tmp_path / "b", registry=data_registry, options=SMALL)
    lock = json.loads((bundle.root / "rlhub.lock").read_text())
    lock["files"]["README.md"]["size"] += 1
    (bundle.root / "rlhub.lock").write_text(json.dumps(seal(lock)))
    real = (bundle.root / "README.md").stat().st_size
    with pytest.raises(IntegrityError) as err:
        verify_bundle(bundle.root, where="file:///x")
    assert str(err.value) == (
        "bundle at file:///x failed verification: file README.md has the wrong size: "
        f"expected {real + 1} bytes, found {real}"
    )


def test_a_symbolic_link_in_a_bundle_is_refused_without_hashing_the_file_it_points_at(
    tmp_path, data_registry
):
    bundle = build_bundle("mydata", tmp_path / "b", registry=data_registry, options=SMALL)
    secret = tmp_path / "secret.txt"
    secret.write_text("the user's own file, outside the bundle\n")
    rows = bundle.root / "domains/data/rows.jsonl"
    rows.unlink()
    rows.symlink_to(secret)
    with pytest.raises(IntegrityError) as err:
        verify_bundle(bundle.root, bundle.id, where="file:///x")
    assert str(err.value) == (
        "bundle at file:///x failed verification: file domains/data/rows.jsonl is a symbolic "
        "link (domains/data/rows.jsonl); a bundle holds regular files only"
    )
    assert sha256_file(secret) not in str(err.value)


def test_a_folder_of_a_bundle_that_is_a_symbolic_link_is_refused(tmp_path, data_registry):
    bundle = build_bundle("mydata", tmp_path / "b", registry=data_registry, options=SMALL)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(bundle.root / "domains", elsewhere)
    (bundle.root / "domains").symlink_to(elsewhere)
    with pytest.raises(IntegrityError, match=r"domains/double.yaml is a symbolic link \(domains\)"):
        verify_bundle(bundle.root, bundle.id)
