"""Pulls are pinned in the project lock: a moved tag or a re-sealed lock is refused unless
``--update``; ``--expect-lock`` pins a hash from the command line; a commit id pulls that commit.

The publisher's attacks go through huggingface_hub's own client against the emulated Hub.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import pytest
from hub_helpers import api, installed

from rlhub.integrations.hub.bundle import BuildOptions, build_bundle
from rlhub.integrations.hub.errors import IntegrityError
from rlhub.integrations.hub.lock import dumps, seal
from rlhub.integrations.hub.pins import PinMismatch
from rlhub.integrations.hub.pull import PullOptions, pull
from rlhub.integrations.hub.push import push

pytestmark = pytest.mark.usefixtures("project_folder")

SMALL = BuildOptions(test_size=4, train_size=3)


def home() -> Path:
    return Path(os.environ["RLHUB_HOME"])


def pins() -> dict:
    return json.loads(Path("rlhub-pulls.lock").read_text())["pulls"]


def reseal(tmp_path: Path, data_registry, rows: bytes, repo: str):
    """What a writer of the repo can do: change a file and seal a matching lock."""
    options = dataclasses.replace(SMALL, ref=f"hf://{repo}")
    bundle = build_bundle("mydata", tmp_path / "evil", registry=data_registry, options=options)
    (bundle.root / "domains/data/rows.jsonl").write_bytes(rows)
    lock = dict(bundle.lock)
    lock["files"] = {**lock["files"], "domains/data/rows.jsonl": {
        "sha256": hashlib.sha256(rows).hexdigest(), "size": len(rows)}}
    lock = seal(lock)
    (bundle.root / "rlhub.lock").write_text(dumps(lock))
    return bundle.root, lock["lock_hash"]


def test_a_pull_pins_the_resolved_commit_and_the_lock_hash_in_the_project_lock(
    hub, repo, data_registry
):
    pushed = push("mydata", f"hf://{repo}", revision="v1", registry=data_registry, options=SMALL)
    result = pull(f"hf://{repo}@v1")
    assert result.pinned == "rlhub-pulls.lock"
    assert pins() == {f"hf://{repo}@v1": {
        "url": f"hf://{repo}", "revision": "v1", "resolved": pushed["commit"],
        "bundle": pushed["bundle"], "name": "mydata", "trusted": False}}


def test_files_changed_and_the_lock_resealed_on_the_hub_are_refused_and_the_pin_still_pulls(
    hub, repo, data_registry, tmp_path
):
    pushed = push("mydata", f"hf://{repo}", registry=data_registry, options=SMALL)
    pull(f"hf://{repo}")
    from huggingface_hub import CommitOperationAdd

    rows = b"".join(b'{"qid": "q%d", "question": "1+1?", "ans": "3"}\n' % i for i in range(20))
    root, evil = reseal(tmp_path, data_registry, rows, repo)
    made = api().create_commit(repo, repo_type="dataset", commit_message="innocent", operations=[
        CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(root / p))
        for p in ("domains/data/rows.jsonl", "rlhub.lock")])
    with pytest.raises(PinMismatch) as err:
        pull(f"hf://{repo}")
    assert str(err.value) == (
        f"pull hf://{repo}@main: refused: rlhub-pulls.lock pins it to bundle {pushed['bundle']} "
        f"(resolved {pushed['commit']}), but it now resolves to bundle {evil} ({made.oid}): the "
        "tag moved or the files changed since this project pulled it. Pull the pinned bundle "
        f"with `rlhub pull hf://{repo}@{pushed['commit']}`, or accept the new one with --update. "
        "Nothing was installed."
    )
    by_commit = pull(f"hf://{repo}@{pushed['commit']}")  # pulling by commit id works
    assert (by_commit.bundle, by_commit.resolved) == (pushed["bundle"], pushed["commit"])
    updated = pull(f"hf://{repo}", PullOptions(update=True))
    assert updated.bundle == evil and pins()[f"hf://{repo}@main"]["bundle"] == evil


def test_a_tag_moved_on_the_hub_is_refused_unless_update(hub, repo, data_registry, cli):
    first = push("mydata", f"hf://{repo}", revision="v1", registry=data_registry, options=SMALL)
    assert cli("pull", f"hf://{repo}@v1").exit_code == 0
    second = push("mydata", f"hf://{repo}", registry=data_registry,
                  options=BuildOptions(test_size=5, train_size=3))
    api().delete_tag(repo, tag="v1", repo_type="dataset")
    api().create_tag(repo, tag="v1", revision=second["commit"], repo_type="dataset")
    refused = cli("pull", f"hf://{repo}@v1")
    assert refused.exit_code == 2
    assert (
        f"error: pull hf://{repo}@v1: refused: rlhub-pulls.lock pins it to bundle "
        f"{first['bundle']} (resolved {first['commit']}), but it now resolves to bundle "
        f"{second['bundle']} ({second['commit']}): the tag moved"
    ) in refused.stderr
    assert installed(home()) == [home() / "envs" / "mydata" / first["bundle"]]
    accepted = cli("pull", f"hf://{repo}@v1", "--update", "--json")
    assert accepted.exit_code == 0, accepted.output
    assert json.loads(accepted.stdout)["resolved"] == second["commit"]
    assert pins()[f"hf://{repo}@v1"]["resolved"] == second["commit"]


def test_expect_lock_pins_a_hash_from_the_command_line(tmp_path, data_registry, cli):
    url = (tmp_path / "remote").as_uri()
    bundle_id = push("mydata", url, registry=data_registry, options=SMALL)["bundle"]
    other = "0" * 64
    refused = cli("pull", url, "--expect-lock", other)
    assert refused.exit_code == 2 and refused.stderr == (
        f"error: bundle at {url}@main: expected the bundle {other} (--expect-lock), found a lock "
        f"hashing to {bundle_id}. The bundle was refused and nothing was installed.\n"
    )
    assert installed(home()) == [] and not Path("rlhub-pulls.lock").exists()
    bad = cli("pull", url, "--expect-lock", "abc")
    assert bad.stderr == ("error: --expect-lock: expected the 64 hex digits of a bundle id (the "
                          "sha256 of its rlhub.lock), found 'abc'\n")
    assert cli("pull", url, "--expect-lock", bundle_id).exit_code == 0


def test_the_project_lock_can_live_elsewhere_and_be_switched_off(tmp_path, data_registry):
    url = (tmp_path / "remote").as_uri()
    push("mydata", url, registry=data_registry, options=SMALL)
    pull(url, PullOptions(project_lock=tmp_path / "project" / "pins.lock"))
    assert list(json.loads((tmp_path / "project" / "pins.lock").read_text())["pulls"]) == [
        f"{url}@main"]
    assert pull(url, PullOptions(project_lock=None)).pinned is None
    with pytest.raises(IntegrityError):
        pull(url, PullOptions(expect_lock="1" * 64, project_lock=None))
