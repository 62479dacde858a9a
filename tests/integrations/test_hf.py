"""Push and pull through huggingface_hub against the local Hub emulator (tests/integrations/hf_emulator.py).

The emulator's docstring lists the Hub API calls it implements. huggingface_hub is pointed at it
with ``HF_ENDPOINT`` (the ``hub`` fixture of conftest.py); ``HF_HOME`` is a temporary folder and
Xet is disabled, so a test never touches a real cache or the network.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hub_helpers import ROWS, api, installed

from rlhub import Registry
from rlhub.integrations.hub.bundle import BuildOptions
from rlhub.integrations.hub.errors import HubError, IntegrityError, RevisionNotFound
from rlhub.integrations.hub.hf import HfRemote
from rlhub.integrations.hub.pull import pull
from rlhub.integrations.hub.push import push

pytestmark = pytest.mark.usefixtures("project_folder")

SMALL = BuildOptions(test_size=4, train_size=3)


def rows_bytes() -> bytes:
    """The bytes of the data domain's dataset, as bundled."""
    return "".join(json.dumps(r) + "\n" for r in ROWS).encode()


def home() -> Path:
    return Path(os.environ["RLHUB_HOME"])


def test_a_push_makes_a_dataset_repo_tagged_rlhub_and_a_pull_of_the_tag_round_trips(
    hub, repo, data_domain, cli
):
    result = cli(
        "--domains-file",
        data_domain,
        "push",
        "mydata",
        "--to",
        f"hf://{repo}",
        "--revision",
        "v1",
        "--test-size",
        4,
    )
    assert result.exit_code == 0, result.output
    info = api().repo_info(repo, repo_type="dataset")
    assert "rlhub" in info.card_data.tags and info.card_data.license == "cc-by-4.0"
    assert {s.rfilename for s in info.siblings} >= {
        "README.md",
        "rlhub.lock",
        "domains/double.yaml",
    }
    (tag,) = api().list_repo_refs(repo, repo_type="dataset").tags
    assert (tag.name, tag.target_commit) == ("v1", info.sha)
    pulled = pull(f"hf://{repo}@v1")
    assert (pulled.resolved, pulled.registered) == (info.sha, ["mydata/double-v1"])
    assert installed(home()) == [home() / "envs" / "mydata" / pulled.bundle]
    fresh, local = Registry(autoload=False), Registry(domain_files=[data_domain], autoload=False)
    assert fresh.get("mydata/double-v1").sample(4, split="test", seed=1) == local.get(
        "mydata/double-v1"
    ).sample(4, split="test", seed=1)
    api_path, sha = f"/api/datasets/{repo}", info.sha
    assert {
        ("POST", "/api/repos/create"),
        ("POST", f"{api_path}/preupload/main"),
        ("POST", f"{api_path}/commit/main"),
        ("POST", f"{api_path}/tag/{sha}"),
        ("GET", f"{api_path}/revision/v1"),
        ("GET", f"/datasets/{repo}/resolve/{sha}/rlhub.lock"),
        ("GET", f"/datasets/{repo}/resolve/{sha}/domains/double.yaml"),
    } <= set(hub.state.requests)


def test_pushing_unchanged_content_again_makes_no_new_commit(hub, repo, data_registry):
    first = push("mydata", f"hf://{repo}", registry=data_registry, options=SMALL)
    again = push("mydata", f"hf://{repo}", registry=data_registry, options=SMALL)
    assert (again["bundle"], again["commit"]) == (first["bundle"], first["commit"])
    assert len(hub.state.repos[repo].commits) == 2  # the repo's creation, and the one push


def test_a_tag_on_the_hub_never_moves_and_a_refused_push_commits_nothing(hub, repo, data_registry):
    first = push("mydata", f"hf://{repo}", revision="v1", registry=data_registry, options=SMALL)
    with pytest.raises(HubError) as err:
        push(
            "mydata",
            f"hf://{repo}",
            revision="v1",
            registry=data_registry,
            options=BuildOptions(test_size=6),
        )
    assert str(err.value).startswith(
        f"hf://{repo}: tag 'v1' already points at commit "
        f"{first['commit']} holding another bundle; tags never move"
    )
    assert api().repo_info(repo, repo_type="dataset").sha == first["commit"]


def test_a_file_changed_on_the_hub_after_the_push_is_refused_while_the_tag_still_pulls(
    hub, repo, data_registry
):
    push("mydata", f"hf://{repo}", revision="v1", registry=data_registry, options=SMALL)
    api().upload_file(
        path_or_fileobj=rows_bytes().replace(b'"ans": "2"', b'"ans": "3"', 1),  # same size
        path_in_repo="domains/data/rows.jsonl",
        repo_id=repo,
        repo_type="dataset",
    )
    with pytest.raises(
        IntegrityError,
        match=f"bundle at hf://{repo}@main failed verification: "
        "file domains/data/rows.jsonl was tampered with",
    ):
        pull(f"hf://{repo}")
    assert installed(home()) == []
    assert pull(f"hf://{repo}@v1").registered == ["mydata/double-v1"]  # pinned to the old commit


def test_a_file_deleted_on_the_hub_is_refused_by_name(hub, repo, data_registry):
    push("mydata", f"hf://{repo}", registry=data_registry, options=SMALL)
    api().delete_file("data/mydata--double-v1/train.parquet", repo_id=repo, repo_type="dataset")
    with pytest.raises(
        IntegrityError,
        match="file data/mydata--double-v1/train.parquet is listed in rlhub.lock but missing",
    ):
        pull(f"hf://{repo}")
    assert installed(home()) == []


def test_an_unknown_revision_or_repo_on_the_hub_gives_a_clear_error(hub, repo, data_registry):
    push("mydata", f"hf://{repo}", revision="v1", registry=data_registry, options=SMALL)
    with pytest.raises(RevisionNotFound) as err:
        pull(f"hf://{repo}@v9")
    assert str(err.value) == (
        f"revision 'v9' not found in hf://{repo} at {hub.url}; its refs are: branch main, tag v1"
    )
    with pytest.raises(HubError) as err:
        pull("hf://rlhub-test/nothing-here")
    assert str(err.value) == (
        "pull hf://rlhub-test/nothing-here: expected a dataset repo "
        f"rlhub-test/nothing-here at {hub.url}, found none (or no access: "
        "check HF_TOKEN)"
    )


def test_a_plugin_bundle_with_its_wheel_round_trips_through_the_hub(hub, repo, plugin_bundle):
    HfRemote(repo).push(plugin_bundle, "v1")
    result = pull(f"{repo}@v1")  # a bare org/name means the Hub
    (wheel,) = result.wheels
    assert (result.bundle, wheel["installed"]) == (plugin_bundle.id, False)
    assert Path(wheel["file"]).read_bytes() == (plugin_bundle.root / wheel["path"]).read_bytes()
