"""Push and pull through file:// URLs: round trips, refs and tags, and every refusal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hub_helpers import installed

from rlhub import Registry
from rlhub.integrations.hub.bundle import BuildOptions, build_bundle
from rlhub.integrations.hub.errors import HubError, IntegrityError, RevisionNotFound
from rlhub.integrations.hub.lock import dumps, seal
from rlhub.integrations.hub.pull import pull
from rlhub.integrations.hub.push import push
from rlhub.integrations.hub.remote import FsspecRemote
from rlhub.plugins import reset

pytestmark = pytest.mark.usefixtures("project_folder")

SMALL = BuildOptions(test_size=4, train_size=3)


def home() -> Path:
    return Path(os.environ["RLHUB_HOME"])


def test_push_then_pull_through_a_file_url_registers_the_same_domain(tmp_path, data_domain, cli):
    remote = (tmp_path / "remote").as_uri()
    pushed = cli(
        "--domains-file",
        data_domain,
        "push",
        "mydata",
        "--to",
        remote,
        "--revision",
        "v1",
        "--test-size",
        4,
        "--json",
    )
    assert pushed.exit_code == 0, pushed.output
    info = json.loads(pushed.stdout)
    assert (info["revision"], info["domains"], info["pull"]) == (
        "v1",
        ["mydata/double-v1"],
        f"{remote}@v1",
    )
    reset()  # the push's registry, with the source domain file, stays in this process
    pulled = cli("pull", f"{remote}@v1")
    assert pulled.exit_code == 0, pulled.output
    assert "registered mydata/double-v1" in pulled.stderr
    target = home() / "envs" / "mydata" / info["bundle"]
    assert installed(home()) == [target]
    fresh, local = Registry(autoload=False), Registry(domain_files=[data_domain], autoload=False)
    assert fresh.manifest("mydata/double-v1").source == str(target / "domains" / "double.yaml")
    assert fresh.get("mydata/double-v1").sample(5, split="train", seed=3) == local.get(
        "mydata/double-v1"
    ).sample(5, split="train", seed=3)
    listed = cli("list", "--json")
    assert "mydata/double-v1" in [row["id"] for row in json.loads(listed.stdout)]


def test_main_follows_the_last_push_while_a_tag_never_moves(tmp_path, data_domain, data_registry):
    url = (tmp_path / "remote").as_uri()
    first = push("mydata", url, revision="v1", registry=data_registry, options=SMALL)
    second = push("mydata", url, registry=data_registry, options=BuildOptions(test_size=6))
    remote = FsspecRemote(url)
    assert remote.refs() == {"main": second["bundle"], "v1": first["bundle"]}
    with pytest.raises(HubError) as err:
        push(
            "mydata", url, revision="v1", registry=data_registry, options=BuildOptions(test_size=6)
        )
    assert str(err.value) == (
        f"{url}: tag 'v1' already points at bundle {first['bundle']}; tags "
        f"never move, so push bundle {second['bundle']} under a new tag"
    )
    again = push("mydata", url, revision="v1", registry=data_registry, options=SMALL)
    assert (again["bundle"], again["uploaded"]) == (first["bundle"], False)


def test_an_interrupted_push_leaves_every_ref_on_a_complete_bundle(tmp_path, data_registry):
    url = (tmp_path / "remote").as_uri()
    first = push("mydata", url, revision="v1", registry=data_registry, options=SMALL)
    bundle = build_bundle(
        "mydata", tmp_path / "next", registry=data_registry, options=BuildOptions(test_size=6)
    )
    blocker = tmp_path / "remote" / "bundles" / bundle.id / "data"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file where the upload needs a folder")  # the upload fails half-way
    with pytest.raises(OSError):
        FsspecRemote(url).push(bundle, "v2")
    assert (tmp_path / "remote" / "bundles" / bundle.id / "README.md").is_file()
    assert FsspecRemote(url).refs() == {"main": first["bundle"], "v1": first["bundle"]}
    assert pull(url).bundle == first["bundle"]


def test_a_tampered_file_is_refused_by_name_and_nothing_is_installed(tmp_path, data_registry):
    url = (tmp_path / "remote").as_uri()
    bundle_id = push("mydata", url, registry=data_registry, options=SMALL)["bundle"]
    tampered = tmp_path / "remote" / "bundles" / bundle_id / "domains" / "data" / "rows.jsonl"
    tampered.write_bytes(tampered.read_bytes().replace(b'"ans": "0"', b'"ans": "1"', 1))
    with pytest.raises(IntegrityError) as err:
        pull(url)
    assert (
        f"bundle at {url}@main failed verification: file domains/data/rows.jsonl was "
        "tampered with: expected sha256 " in str(err.value)
    )
    assert str(err.value).endswith("The bundle was refused and nothing was installed.")
    assert installed(home()) == []
    assert "mydata/double-v1" not in Registry(autoload=False).ids()


def test_a_missing_file_is_refused_by_name(tmp_path, data_registry):
    url = (tmp_path / "remote").as_uri()
    bundle_id = push("mydata", url, registry=data_registry, options=SMALL)["bundle"]
    (
        tmp_path / "remote" / "bundles" / bundle_id / "data" / "mydata--double-v1" / "test.parquet"
    ).unlink()
    with pytest.raises(
        IntegrityError,
        match="file data/mydata--double-v1/test.parquet is listed in rlhub.lock but missing",
    ):
        pull(url)
    assert installed(home()) == []


def test_a_rewritten_lock_does_not_match_the_bundle_id_the_ref_names(tmp_path, data_registry):
    url = (tmp_path / "remote").as_uri()
    bundle_id = push("mydata", url, registry=data_registry, options=SMALL)["bundle"]
    lock_path = tmp_path / "remote" / "bundles" / bundle_id / "rlhub.lock"
    lock = json.loads(lock_path.read_text())
    lock["name"] = "other"
    lock_path.write_text(dumps(seal(lock)))  # self-consistent, but not the bundle pushed
    with pytest.raises(
        IntegrityError,
        match=f"expected the bundle {bundle_id}, found a lock hashing to {lock['lock_hash']}",
    ):
        pull(url)


def test_an_unknown_revision_names_the_refs_that_exist(tmp_path, data_registry, cli):
    url = (tmp_path / "remote").as_uri()
    push("mydata", url, revision="v1", registry=data_registry, options=SMALL)
    with pytest.raises(RevisionNotFound) as err:
        pull(f"{url}@v9")
    assert str(err.value) == (
        f"revision 'v9' not found at {url}: expected a tag, 'main' or a "
        "bundle id; the refs there are main, v1"
    )
    result = cli("pull", f"{url}@v9")
    assert result.exit_code == 2 and result.stderr.startswith("error: revision 'v9' not found")
    with pytest.raises(RevisionNotFound, match="the refs there are none"):
        pull(f"{(tmp_path / 'empty').as_uri()}@v1")


def test_a_bundle_can_be_pulled_by_its_id_and_every_bundle_stays_installed_by_content(
    tmp_path, data_registry
):
    url = (tmp_path / "remote").as_uri()
    first = push("mydata", url, revision="v1", registry=data_registry, options=SMALL)["bundle"]
    second = push(
        "mydata", url, revision="v2", registry=data_registry, options=BuildOptions(test_size=6)
    )["bundle"]
    assert pull(f"{url}@v1").path == str(home() / "envs" / "mydata" / first)
    by_id = pull(f"{url}@{second}")
    assert by_id.bundle == second and first != second
    assert installed(home()) == sorted(home() / "envs" / "mydata" / b for b in (first, second))
    assert (home() / "envs" / "mydata" / "current").read_text() == f"{second}\n"
    source = Registry(autoload=False, project_lock=tmp_path / "none").manifest(
        "mydata/double-v1").source
    assert source == str(home() / "envs" / "mydata" / second / "domains" / "double.yaml")


def test_a_domain_file_reading_outside_its_bundle_is_refused(tmp_path, data_registry):
    bundle = build_bundle("mydata", tmp_path / "b", registry=data_registry, options=SMALL)
    yaml_path = bundle.root / "domains" / "double.yaml"
    yaml_path.write_text(yaml_path.read_text().replace("data/rows.jsonl", "/etc/passwd"))
    lock = dict(bundle.lock)
    lock["files"] = {
        **lock["files"],
        "domains/double.yaml": {
            "sha256": __import__("hashlib").sha256(yaml_path.read_bytes()).hexdigest(),
            "size": yaml_path.stat().st_size,
        },
    }
    (bundle.root / "rlhub.lock").write_text(dumps(seal(lock)))
    url = (tmp_path / "remote").as_uri()
    FsspecRemote(url).push(type(bundle)(bundle.root, lock), None)
    with pytest.raises(
        IntegrityError,
        match="bundle file domains/double.yaml: expected its "
        "dataset to be a file of the bundle under domains/, "
        "found '/etc/passwd'",
    ):
        pull(url)
    assert installed(home()) == []


def test_a_plugin_bundle_is_verified_but_its_wheel_is_installed_only_with_trust(
    tmp_path, plugin_bundle, cli
):
    url = (tmp_path / "remote").as_uri()
    FsspecRemote(url).push(plugin_bundle, "v1")
    result = cli("pull", f"{url}@v1")
    assert result.exit_code == 0, result.output
    (wheel,) = plugin_bundle.lock["wheels"]
    target = home() / "envs" / "structured" / plugin_bundle.id
    assert (target / wheel["path"]).is_file()
    assert (
        f"not installed: {Path(wheel['path']).name} holds plugin code. Install it with `"
        in result.stderr
        and "--trust-remote-code" in result.stderr
    )
    data = json.loads(cli("pull", f"{url}@v1", "--json").stdout)
    assert data["registered"] == [] and data["wheels"][0]["installed"] is False
    assert data["wheels"][0]["install_command"].endswith(
        f"-m pip install --no-deps {target / wheel['path']}"
    )


def test_a_link_on_a_local_remote_is_refused_before_it_is_copied(tmp_path, data_registry):
    """The copy would follow the link and bring the user's own file into the bundle; a publisher
    who knows that file's hash would pass verification and install it as a dataset."""
    url = (tmp_path / "remote").as_uri()
    bundle_id = push("mydata", url, registry=data_registry, options=SMALL)["bundle"]
    rows = tmp_path / "remote" / "bundles" / bundle_id / "domains" / "data" / "rows.jsonl"
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(rows.read_bytes())  # same bytes: the hash the lock records matches
    rows.unlink()
    rows.symlink_to(secret)
    with pytest.raises(IntegrityError) as err:
        pull(url)
    assert str(err.value) == (
        f"bundle at {url}@main: file domains/data/rows.jsonl is a symbolic link (or lies under "
        "one) or not a regular file; a bundle holds regular files only. The bundle was refused "
        "and nothing was installed."
    )
    assert installed(home()) == []


def test_a_remote_file_of_another_size_than_the_lock_says_is_refused_before_download(
    tmp_path, data_registry
):
    url = (tmp_path / "remote").as_uri()
    bundle_id = push("mydata", url, registry=data_registry, options=SMALL)["bundle"]
    readme = tmp_path / "remote" / "bundles" / bundle_id / "README.md"
    size = readme.stat().st_size
    readme.write_bytes(readme.read_bytes() + b"x" * 1000)
    with pytest.raises(IntegrityError) as err:
        pull(url)
    assert str(err.value) == (
        f"bundle at {url}@main: file README.md has the wrong size: expected {size} bytes, found "
        f"{size + 1000}. The bundle was refused and nothing was installed."
    )
