"""The real Hub upload path: Parquet files and wheels go through the LFS batch API (basic
transfer) and come back through the storage redirect, with huggingface_hub's own client."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import httpx
import pytest
from hub_helpers import api

from rlhub.integrations.hub.errors import IntegrityError
from rlhub.integrations.hub.hf import HfRemote
from rlhub.integrations.hub.pull import pull

pytestmark = pytest.mark.usefixtures("project_folder")


def lfs_paths(hub, repo: str) -> set[str]:
    repo_state = hub.state.repos[repo]
    return set(repo_state.commits[repo_state.branches["main"]].lfs)


def test_parquet_and_wheels_go_through_the_lfs_batch_api_and_come_back_from_storage(
    hub, repo, plugin_bundle
):
    pushed = HfRemote(repo).push(plugin_bundle, "v1")
    binary = {p for p in plugin_bundle.lock["files"] if p.endswith((".parquet", ".whl"))}
    assert binary and lfs_paths(hub, repo) == binary  # README, manifests, lock: regular files
    git = f"/datasets/{repo}.git/info/lfs/objects"
    assert {("POST", f"{git}/batch"), ("POST", f"{git}/verify")} <= set(hub.state.requests)
    oids = {hashlib.sha256((plugin_bundle.root / p).read_bytes()).hexdigest() for p in binary}
    assert {p for m, p in hub.state.storage.requests if m == "PUT"} >= {
        f"/objects/{repo}/{oid}" for oid in oids}
    siblings = api().repo_info(repo, repo_type="dataset", files_metadata=True).siblings
    wheel = next(s for s in siblings if s.rfilename.endswith(".whl"))
    assert wheel.lfs is not None and wheel.lfs.sha256 == plugin_bundle.lock["files"][
        wheel.rfilename]["sha256"]
    result = pull(f"hf://{repo}@v1")
    assert (result.bundle, result.resolved) == (plugin_bundle.id, pushed["commit"])
    gets = {p for m, p in hub.state.storage.requests if m == "GET"}
    assert gets >= {f"/objects/{repo}/{oid}" for oid in oids}
    for rel in binary:
        assert (Path(result.path) / rel).read_bytes() == (plugin_bundle.root / rel).read_bytes()


def test_an_unchanged_lfs_file_is_not_uploaded_again(hub, repo, plugin_bundle):
    HfRemote(repo).push(plugin_bundle, None)
    puts = [r for r in hub.state.storage.requests if r[0] == "PUT"]
    api().upload_file(path_or_fileobj=b"a note\n", path_in_repo="NOTE.md", repo_id=repo,
                      repo_type="dataset")
    HfRemote(repo).push(plugin_bundle, None)  # puts the bundle back: deletes NOTE.md only
    assert [r for r in hub.state.storage.requests if r[0] == "PUT"] == puts


def test_a_large_text_file_goes_through_lfs_as_on_the_hub(hub, repo, tmp_path):
    api().create_repo(repo, repo_type="dataset")
    big = tmp_path / "rows.jsonl"
    line = json.dumps({"question": "What is 1 + 1?", "answer": "2"}) + "\n"
    big.write_text(line * (10 * 1024 * 1024 // len(line) + 1))
    api().upload_file(path_or_fileobj=str(big), path_in_repo="domains/rows.jsonl", repo_id=repo,
                      repo_type="dataset")
    assert lfs_paths(hub, repo) == {"domains/rows.jsonl"}
    back = api().hf_hub_download(repo, "domains/rows.jsonl", repo_type="dataset",
                                 local_dir=tmp_path / "back")
    assert Path(back).read_bytes() == big.read_bytes()


def test_binary_content_committed_as_a_regular_file_is_refused_as_the_hub_does(hub, repo):
    api().create_repo(repo, repo_type="dataset")
    lines = [{"key": "header", "value": {"summary": "sneak a binary in"}},
             {"key": "file", "value": {"path": "x.bin", "encoding": "base64",
                                       "content": base64.b64encode(b"\x00\x01\x02").decode()}}]
    response = httpx.post(f"{hub.url}/api/datasets/{repo}/commit/main",
                          content="\n".join(json.dumps(x) for x in lines),
                          headers={"Authorization": f"Bearer {os.environ['HF_TOKEN']}",
                                   "Content-Type": "application/x-ndjson"})
    assert response.status_code == 400
    assert "contains binary files" in response.headers["X-Error-Message"]


def test_an_lfs_object_swapped_in_storage_is_refused_by_name(hub, repo, plugin_bundle):
    HfRemote(repo).push(plugin_bundle, None)
    rel = next(p for p in sorted(plugin_bundle.lock["files"]) if p.endswith("test.parquet"))
    oid = plugin_bundle.lock["files"][rel]["sha256"]
    stored = hub.state.storage.objects[f"{repo}/{oid}"]
    lie = stored[:-1] + bytes([stored[-1] ^ 1])  # the CDN serves other bytes of the same size
    hub.state.storage.objects[f"{repo}/{oid}"] = lie
    with pytest.raises(IntegrityError, match=f"file {rel} was tampered with"):
        pull(f"hf://{repo}")


def test_a_pull_downloads_only_the_files_the_lock_lists(hub, repo, plugin_bundle):
    HfRemote(repo).push(plugin_bundle, None)
    junk = os.urandom(4096)  # binary: an LFS object the repo's writer added beside the bundle
    api().upload_file(path_or_fileobj=junk, path_in_repo="extra/huge.bin", repo_id=repo,
                      repo_type="dataset")
    before = len(hub.state.storage.requests)
    result = pull(f"hf://{repo}")
    fetched = {p for m, p in hub.state.storage.requests[before:] if m == "GET"}
    assert f"/objects/{repo}/{hashlib.sha256(junk).hexdigest()}" not in fetched
    assert not (Path(result.path) / "extra").exists()


def test_a_file_whose_size_on_the_hub_differs_from_the_lock_is_refused_before_download(
    hub, repo, plugin_bundle
):
    HfRemote(repo).push(plugin_bundle, None)
    rel = next(p for p in sorted(plugin_bundle.lock["files"]) if p.endswith(".whl"))
    bigger = (plugin_bundle.root / rel).read_bytes() + b"\x00" * 1024
    api().upload_file(path_or_fileobj=bigger, path_in_repo=rel, repo_id=repo, repo_type="dataset")
    before = len(hub.state.storage.requests)
    with pytest.raises(IntegrityError) as err:
        pull(f"hf://{repo}")
    size = plugin_bundle.lock["files"][rel]["size"]
    assert str(err.value) == (
        f"bundle at hf://{repo}@main: file {rel} has the wrong size: expected {size} bytes, found "
        f"{size + 1024}. The bundle was refused and nothing was installed."
    )
    assert [r for r in hub.state.storage.requests[before:] if r[0] == "GET"] == []
