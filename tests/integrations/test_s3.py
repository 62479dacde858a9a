"""Push and pull through s3:// against a local S3-compatible server (moto in server mode).

s3fs reaches the server through the standard ``AWS_ENDPOINT_URL_S3`` variable, exactly as it
would reach MinIO or any other S3-compatible store; the credentials are dummies.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hub_helpers import installed

from rlhub import Registry
from rlhub.integrations.hub.bundle import BuildOptions
from rlhub.integrations.hub.errors import IntegrityError, RevisionNotFound
from rlhub.integrations.hub.pull import pull
from rlhub.integrations.hub.push import push
from rlhub.integrations.hub.remote import FsspecRemote

pytestmark = pytest.mark.usefixtures("project_folder")

SMALL = BuildOptions(test_size=4, train_size=3)
BUCKET = "rlhub-envs"


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    server_mod = pytest.importorskip("moto.server", reason="moto[server] is not installed")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket on the local server; returns the base URL ``s3://bucket/<test>``."""
    import boto3

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": s3_server,
        "AWS_ENDPOINT_URL": s3_server,
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    client = boto3.client("s3", endpoint_url=s3_server)
    if BUCKET not in [b["Name"] for b in client.list_buckets().get("Buckets", [])]:
        client.create_bucket(Bucket=BUCKET)
    return f"s3://{BUCKET}/{os.urandom(4).hex()}/envs"


def home() -> Path:
    return Path(os.environ["RLHUB_HOME"])


def test_push_then_pull_through_s3_registers_the_same_domain(s3, data_domain, data_registry):
    pushed = push("mydata", s3, revision="v1", registry=data_registry, options=SMALL)
    remote = FsspecRemote(s3)
    assert remote.refs() == {"main": pushed["bundle"], "v1": pushed["bundle"]}
    keys = remote.fs.find(remote._path("bundles", pushed["bundle"]))
    assert sorted(k.rsplit(f"{pushed['bundle']}/", 1)[1] for k in keys) == sorted(
        [
            "README.md",
            "rlhub.lock",
            "manifests/mydata--double-v1.json",
            "domains/double.yaml",
            "domains/data/rows.jsonl",
            "data/mydata--double-v1/test.parquet",
            "data/mydata--double-v1/train.parquet",
        ]
    )
    result = pull(f"{s3}@v1")
    assert (result.bundle, result.registered) == (pushed["bundle"], ["mydata/double-v1"])
    fresh = Registry(autoload=False)
    assert fresh.get("mydata/double-v1").sample(4, split="test") == data_registry.get(
        "mydata/double-v1"
    ).sample(4, split="test")


def test_a_tampered_object_on_s3_is_refused_by_name(s3, data_registry):
    bundle_id = push("mydata", s3, registry=data_registry, options=SMALL)["bundle"]
    remote = FsspecRemote(s3)
    path = remote._path("bundles", bundle_id, "manifests", "mydata--double-v1.json")
    original = remote.fs.cat_file(path)
    remote.fs.pipe_file(path, original.replace(b'"exact"', b'"regex"'))  # the same size
    with pytest.raises(
        IntegrityError,
        match="file manifests/mydata--double-v1.json was tampered with: expected sha256 ",
    ):
        pull(s3)
    assert installed(home()) == []


def test_a_missing_object_and_a_wrong_revision_on_s3_are_refused(s3, data_registry):
    bundle_id = push("mydata", s3, revision="v1", registry=data_registry, options=SMALL)["bundle"]
    with pytest.raises(
        RevisionNotFound,
        match=f"revision 'v2' not found at {s3}: expected a tag, "
        "'main' or a bundle id; the refs there are main, v1",
    ):
        pull(f"{s3}@v2")
    remote = FsspecRemote(s3)
    remote.fs.rm_file(remote._path("bundles", bundle_id, "domains", "double.yaml"))
    with pytest.raises(
        IntegrityError, match="file domains/double.yaml is listed in rlhub.lock but missing"
    ):
        pull(f"{s3}@v1")
    assert installed(home()) == []
