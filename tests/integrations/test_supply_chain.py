"""Supply chain, round two (issue 23): a pull installs exactly what it was sealed with, and nothing
a stranger wrote reaches the host.

Each test is one route a hostile publisher, or the owner of a moved tag, tried: it publishes to a
real ``file://`` remote (or the Hub emulator) as they would, and pulls as the user would.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hub_helpers import ROWS, installed, write_data_domain

from rlhub import Registry
from rlhub.errors import ManifestError
from rlhub.integrations.hub.bundle import BuildOptions, Bundle, build_bundle
from rlhub.integrations.hub.errors import IntegrityError, PolicyRefused
from rlhub.integrations.hub.fetching import stream_to
from rlhub.integrations.hub.lock import dumps, seal
from rlhub.integrations.hub.pins import PinMismatch
from rlhub.integrations.hub.pull import PullOptions, pull
from rlhub.integrations.hub.remote import FsspecRemote

pytestmark = pytest.mark.usefixtures("project_folder")

SMALL = BuildOptions(test_size=3, train_size=2)


def home() -> Path:
    return Path(os.environ["RLHUB_HOME"])


def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, Any]) -> Path:
    path = tmp_path / "user-config.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("RLHUB_CONFIG", str(path))
    return path


def bundle_of(tmp_path: Path, folder: str = "bundle", **spec: Any) -> Bundle:
    """The bundle of a data-only environment ``mydata`` declaring ``spec``."""
    domain_file = write_data_domain(tmp_path / f"{folder}-src", dataset="rows.jsonl", **spec)
    registry = Registry(domain_files=[domain_file], autoload=False)
    return build_bundle("mydata", tmp_path / folder, registry=registry, options=SMALL)


def reseal(bundle: Bundle, written: dict[str, bytes], **lock: Any) -> Bundle:
    """``bundle`` with ``written`` files in it (and listed) and its lock sealed again, as a
    publisher can (``lock`` replaces fields of the lock)."""
    records = dict(bundle.lock["files"])
    for name, data in written.items():
        (bundle.root / name).parent.mkdir(parents=True, exist_ok=True)
        (bundle.root / name).write_bytes(data)
        records[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    sealed = seal({**bundle.lock, "files": records, **lock})
    (bundle.root / "rlhub.lock").write_text(dumps(sealed))
    return Bundle(bundle.root, sealed)


def hostile(tmp_path: Path, rows: list[dict[str, Any]] | None = None, **spec: Any) -> Bundle:
    """An honest bundle whose domain file then declares ``spec`` and whose dataset holds
    ``rows``, sealed again: what rlhub itself refuses to build, a publisher can still write."""
    bundle = bundle_of(tmp_path)
    path = bundle.root / "domains" / "double.yaml"
    written = {"domains/double.yaml": json.dumps({**json.loads(path.read_text()),
                                                  **spec}).encode()}
    if rows is not None:
        written["domains/rows.jsonl"] = "".join(json.dumps(r) + "\n" for r in rows).encode()
    return reseal(bundle, written)


def publish(tmp_path: Path, bundle: Bundle, folder: str = "remote", tag: str | None = None
            ) -> str:
    url = (tmp_path / folder).as_uri()
    FsspecRemote(url).push(bundle, tag)
    return url


def quick(ref: str, **options: Any) -> Any:
    """Pull ``ref`` with a registry of no installed plugins (faster; same checks)."""
    return pull(ref, PullOptions(**options), registry=Registry(autoload=False))


@pytest.fixture
def fetches() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on loopback serving a JSON Schema; ``(url, paths requested)``."""
    requested: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            requested.append(self.path)
            body = json.dumps({"type": "string"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/schema.json", requested
    server.shutdown()


# -- 1. nothing from data reaches the network ------------------------------------------------


def test_a_schema_option_referring_to_a_url_is_refused_at_pull_and_never_fetched(
    tmp_path, fetches
):
    url, requested = fetches
    bundle = hostile(tmp_path, verifier={"name": "json-schema",
                                         "options": {"schema": {"$ref": url}}})
    with pytest.raises(IntegrityError) as err:
        quick(publish(tmp_path, bundle))
    assert str(err.value).startswith(
        "bundle file domains/double.yaml, domain 'mydata/double-v1': field "
        "verifier.options.schema: expected a JSON Schema whose references all resolve inside it, "
        f"found '{url}'; rlhub never fetches a schema reference"
    )
    assert installed(home()) == [] and requested == []


def test_a_row_answer_referring_to_a_url_is_refused_at_pull_naming_the_row(tmp_path, fetches):
    url, requested = fetches
    bundle = hostile(tmp_path, [{**row, "ans": {"$ref": url}} for row in ROWS],
                     verifier="json-schema")
    with pytest.raises(IntegrityError, match=r"bundle file domains/double\.yaml, domain "
                       r"'mydata/double-v1', dataset row 1: answer: expected a JSON Schema whose "
                       "references all resolve inside it"):
        quick(publish(tmp_path, bundle))
    assert requested == []


def test_a_remote_schema_is_refused_at_load_and_verification_fetches_nothing(tmp_path, fetches):
    url, requested = fetches
    options_file = write_data_domain(tmp_path / "a", dataset="rows.jsonl", verifier={
        "name": "json-schema", "options": {"schema": {"properties": {"x": {"$ref": url}}}}})
    (error,) = Registry(domain_files=[options_file], autoload=False).errors
    assert error.cause.startswith(
        f"domain file {options_file}, domain 'mydata/double-v1': field verifier.options.schema: "
        f"expected a JSON Schema whose references all resolve inside it, found '{url}'")
    rows = [{**row, "ans": {"$ref": url}} for row in ROWS]
    rows_file = write_data_domain(tmp_path / "b", dataset="rows.jsonl", rows=rows,
                                  verifier="json-schema")
    domain = Registry(domain_files=[rows_file], autoload=False).get("mydata/double-v1")
    with pytest.raises(ManifestError, match=r"^domain 'mydata/double-v1', row q\d+: answer: "
                       "expected a JSON Schema whose references all resolve inside it"):
        domain.task("train", 0, 0)
    from rlhub import Task

    score = domain.verify(Task("t", "mydata/double-v1", "?", answer={"$ref": url}), '"text"')
    assert (score.reward, score.failure) == (0.0, "verifier")
    assert "domain mydata/double-v1, task t: expected a JSON Schema whose references" in score.error
    assert requested == []


# -- 2. a lock key is a plain path; no link is followed; no file grows past its size -----------


def test_a_lock_key_walking_through_a_link_is_refused_before_anything_is_read(tmp_path):
    secret = tmp_path / "user" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    (secret.parent / "inside").mkdir()
    secret.write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    decoy = b"a decoy of the same size.............."[: len(secret.read_bytes())]
    honest = reseal(bundle_of(tmp_path), {"id_ed25519": decoy})
    url = publish(tmp_path, honest)
    records = dict(honest.lock["files"])
    records["L/../id_ed25519"] = records.pop("id_ed25519")
    lock = seal({**honest.lock, "files": records})
    remote_bundle = tmp_path / "remote" / "bundles" / lock["lock_hash"]
    (tmp_path / "remote" / "bundles" / honest.id).rename(remote_bundle)
    (remote_bundle / "rlhub.lock").write_text(dumps(lock))
    (tmp_path / "remote" / "refs" / "main").write_text(lock["lock_hash"] + "\n")
    (remote_bundle / "L").symlink_to(secret.parent / "inside")
    with pytest.raises(IntegrityError) as err:
        quick(url)
    assert str(err.value) == (
        f"bundle at {url}@main: bundle path 'L/../id_ed25519': expected a plain relative path "
        "inside the bundle, found an empty, '.' or '..' part. The bundle was refused and nothing "
        "was installed.")
    assert hashlib.sha256(secret.read_bytes()).hexdigest() not in str(err.value)
    copied = [p for p in home().rglob("*") if p.is_file() and p.read_bytes() == secret.read_bytes()]
    assert copied == [] and installed(home()) == []


def test_a_plain_key_under_a_linked_folder_is_refused_and_a_large_file_never_copied(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    with open(outside / "big.bin", "wb") as fh:
        fh.truncate(300 << 20)  # 300 MiB (sparse) where the lock says 10 bytes
    bundle = bundle_of(tmp_path)
    hostile = reseal(bundle, {"L/big.bin": b"0123456789"})
    url = publish(tmp_path, hostile)
    remote_bundle = tmp_path / "remote" / "bundles" / hostile.id
    (remote_bundle / "L" / "big.bin").unlink()
    (remote_bundle / "L").rmdir()
    (remote_bundle / "L").symlink_to(outside)
    with pytest.raises(IntegrityError, match=r"file L/big\.bin is a symbolic link \(or lies under "
                       r"one\) or not a regular file; a bundle holds regular files only"):
        quick(url)
    written = sum(p.stat().st_size for p in home().rglob("*") if p.is_file())
    assert written < 1 << 20


def test_a_file_that_streams_past_its_lock_size_is_cut_off_and_removed(tmp_path):
    dest = tmp_path / "file.bin"
    chunks = (b"x" * 1024 for _ in range(1 << 20))  # a gigabyte, were it all read
    with pytest.raises(IntegrityError, match=r"^bundle at here: file big has the wrong size: "
                       r"expected 10 bytes, found more\."):
        stream_to(chunks, dest, 10, "big", "here")
    assert not dest.exists()


# -- 3. a Hub lock key ending in '/' (the Hub client would expand it to any depth) ------------


def test_a_hub_lock_entry_ending_in_a_slash_is_refused_before_any_file_is_downloaded(
    hub, repo, data_registry, tmp_path
):
    from huggingface_hub import CommitOperationAdd
    from hub_helpers import api

    from rlhub.integrations.hub.push import push

    push("mydata", f"hf://{repo}", registry=data_registry, options=SMALL)
    bundle = build_bundle("mydata", tmp_path / "evil", registry=data_registry, options=SMALL)
    lock = seal({**bundle.lock, "files": {**bundle.lock["files"],
                                          "extra/": {"sha256": "0" * 64, "size": 0}}})
    (bundle.root / "rlhub.lock").write_text(dumps(lock))
    api().create_commit(repo, repo_type="dataset", commit_message="more", operations=[
        CommitOperationAdd(path_in_repo="rlhub.lock", path_or_fileobj=str(bundle.root /
                                                                          "rlhub.lock")),
        *[CommitOperationAdd(path_in_repo=f"extra/{d}/blob.bin", path_or_fileobj=os.urandom(
            1 << 16)) for d in ("a", "a/b", "a/b/c")]])
    hub.state.requests.clear()
    with pytest.raises(IntegrityError) as err:
        quick(f"hf://{repo}")
    assert str(err.value) == (
        f"bundle at hf://{repo}@main: bundle path 'extra/': expected a plain relative path inside "
        "the bundle, found a leading or trailing '/'. The bundle was refused and nothing was "
        "installed.")
    fetched = [path for method, path in hub.state.requests if "/resolve/" in path]
    assert all(path.endswith("/rlhub.lock") for path in fetched), fetched
    assert installed(home()) == []


# -- 4. a dataset past the caps is refused at pull, before any domain is enabled --------------


def test_a_dataset_past_the_users_caps_is_refused_at_pull(tmp_path, monkeypatch):
    url = publish(tmp_path, bundle_of(tmp_path))
    config = configure(tmp_path, monkeypatch, {"datasets": {"max_rows": 10}})
    with pytest.raises(IntegrityError) as err:
        quick(url)
    assert str(err.value) == (
        "bundle file domains/double.yaml, domain 'mydata/double-v1': dataset "
        f"domains/rows.jsonl: expected at most 10 rows (max_rows, datasets: in {config}), found "
        "more; split it into several domains or raise the cap The bundle was refused and nothing "
        "was installed.")
    assert installed(home()) == [] and Registry(autoload=False).ids() == []


# -- 5. installs are content-addressed; a pin selects its bundle ------------------------------


def move_tag(tmp_path: Path, url: str, tag: str) -> str:
    """What the owner of the remote can do: seal a bundle with every answer changed and point
    ``tag`` at it by hand (a push refuses to move a tag)."""
    wrong = [{**row, "ans": "999"} for row in ROWS]
    bundle = bundle_of(tmp_path, "moved", rows=wrong)
    remote = FsspecRemote(url)
    remote._upload(bundle)
    (tmp_path / "remote" / "refs" / tag).write_text(bundle.id + "\n")
    return bundle.id


def answers(project: Path) -> set[str]:
    domain = Registry(autoload=False, project_lock=project / "rlhub-pulls.lock").get(
        "mydata/double-v1")
    return {str(domain.task("train", 0, i).answer) for i in range(5)}


def test_a_tag_moved_and_pulled_by_another_project_leaves_the_pinned_project_on_its_bundle(
    tmp_path, monkeypatch
):
    url = publish(tmp_path, bundle_of(tmp_path), tag="v1")
    project_a, project_b = tmp_path / "a", tmp_path / "b"
    project_a.mkdir()
    project_b.mkdir()
    monkeypatch.chdir(project_a)
    first = quick(f"{url}@v1").bundle
    honest = answers(project_a)
    moved = move_tag(tmp_path, url, "v1")
    monkeypatch.chdir(project_b)
    assert quick(f"{url}@v1").bundle == moved and answers(project_b) == {"999"}
    monkeypatch.chdir(project_a)
    assert answers(project_a) == honest != {"999"}
    respelled = f"file://localhost{(tmp_path / 'x' / '..' / 'remote').as_posix()}/@v1"
    for ref in (f"{url}@v1", respelled):
        with pytest.raises(PinMismatch, match=f"pins it to bundle {first} .*, but it now resolves "
                           f"to bundle {moved}"):
            quick(ref)
    assert answers(project_a) == honest
    assert installed(home()) == sorted(home() / "envs" / "mydata" / b for b in (first, moved))


def test_a_pinned_bundle_whose_installed_content_differs_is_refused_naming_both(tmp_path):
    url = publish(tmp_path, bundle_of(tmp_path), tag="v1")
    first = quick(f"{url}@v1").bundle
    lock = home() / "envs" / "mydata" / first / "rlhub.lock"
    edited = json.loads(lock.read_text())
    edited["name"] = "changed in place"
    lock.write_text(json.dumps(edited))
    now = hashlib.sha256(json.dumps({k: v for k, v in edited.items() if k != "lock_hash"},
                                    sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    registry = Registry(autoload=False)
    assert "mydata/double-v1" not in registry.ids()
    (error,) = registry.errors
    assert error.cause == (
        f"environment 'mydata': {Path('rlhub-pulls.lock').absolute()} pins bundle {first}, but "
        f"the installed content is bundle {now}; none of its domains is used. Pull the pinned "
        "bundle again (`rlhub pull URL@BUNDLE_ID`), or accept another with `rlhub pull --update`")


def test_a_project_that_pinned_a_bundle_untrusted_keeps_it_untrusted(tmp_path, monkeypatch):
    limits = {"network": True}
    url = publish(tmp_path, bundle_of(tmp_path, verifier={"name": "python-tests",
                                                          "options": {"limits": limits}}))
    project_a, project_b = tmp_path / "a", tmp_path / "b"
    project_a.mkdir()
    project_b.mkdir()
    monkeypatch.chdir(project_b)
    assert quick(url, trust_remote_code=True).registered == ["mydata/double-v1"]
    (project_a / "rlhub-pulls.lock").write_text(json.dumps({
        "kind": "pulls", "rlhub_lock": 1, "pulls": {f"{url}@main": {
            "bundle": installed(home())[0].name, "name": "mydata", "trusted": False}}}))
    registry = Registry(autoload=False, project_lock=project_a / "rlhub-pulls.lock")
    assert "mydata/double-v1" not in registry.ids()
    assert "asks for network access, which your policy does not allow" in registry.errors[0].cause


# -- 6. identity comes from content -----------------------------------------------------------


def test_a_lock_naming_other_domains_than_its_files_is_refused_and_the_honest_one_stays(tmp_path):
    honest = quick(publish(tmp_path, bundle_of(tmp_path), "honest"))
    bundle = bundle_of(tmp_path, "liar", rows=[{**r, "ans": "999"} for r in ROWS])
    entry = bundle.lock["domains"]["mydata/double-v1"]
    liar = reseal(bundle, {}, name="evil", domains={"evil/x-v1": entry})
    url = publish(tmp_path, liar, "liar-remote")
    with pytest.raises(IntegrityError) as err:
        quick(url)
    assert str(err.value) == (
        "bundle evil: expected the ids its lock declares to be the ids its files declare, found: "
        "the lock names domain evil/x-v1 with the file domains/double.yaml, which declares "
        "mydata/double-v1; the lock names domain evil/x-v1 with the manifest "
        "manifests/mydata--double-v1.json, which declares mydata/double-v1; the domain file "
        "domains/double.yaml declares mydata/double-v1, which the lock does not name. The bundle "
        "was refused and nothing was installed.")
    assert installed(home()) == [Path(honest.path)]
    assert Registry(autoload=False).ids() == ["mydata/double-v1"]


# -- 8. pull runs the checks it can -----------------------------------------------------------

LAUGHS = "\n".join(["a: &a [x, x, x, x, x, x, x, x, x]"]
                   + [f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]"
                      for p, c in zip("abcdefgh", "bcdefghi")] + ["tags: *i"])


@pytest.mark.parametrize(("text", "expected"), [
    ("id: !!python/object/apply:os.system ['touch /tmp/pwned']\n",
     "expected plain YAML data, found a tag that is not plain data (could not determine a "
     "constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system', line 1)"),
    (None, "domain 'mydata/double-v1': field (top level): Additional properties are not allowed "
           "('factory' was unexpected)"),
    (LAUGHS, "expected at most 1000000 values once its aliases are expanded, found more"),
])
def test_a_domain_file_that_is_not_plain_schema_valid_data_is_refused_clearly(
    tmp_path, text, expected
):
    bundle = bundle_of(tmp_path)
    if text is None:
        spec = json.loads((bundle.root / "domains" / "double.yaml").read_text())
        text = json.dumps({**spec, "factory": "os:system"})
    url = publish(tmp_path, reseal(bundle, {"domains/double.yaml": text.encode()}))
    with pytest.raises(IntegrityError) as err:
        quick(url)
    assert str(err.value).startswith(f"bundle file domains/double.yaml: {expected}")
    assert installed(home()) == []


@pytest.mark.parametrize(("cap", "value", "found"), [
    ("max_files", 3, "expected at most 3 files (max_files, pull: in {config}), found 6"),
    ("max_depth", 1, "expected at most 1 folders deep (max_depth, pull: in {config}), found 2 "
                     "(data/mydata--double-v1/test.parquet)"),
    ("max_bytes", 1000, "expected at most 1000 bytes (max_bytes, pull: in {config}), found"),
])
def test_a_bundle_past_the_users_caps_is_refused_before_any_file_is_downloaded(
    tmp_path, monkeypatch, cap, value, found
):
    config = configure(tmp_path, monkeypatch, {"pull": {cap: value}})
    url = publish(tmp_path, bundle_of(tmp_path))
    with pytest.raises(IntegrityError) as err:
        quick(url)
    assert str(err.value).startswith(f"bundle at {url}@main: " + found.format(config=config))
    assert not any(p.is_file() for p in (home() / "tmp").rglob("*"))


@pytest.mark.parametrize(("rows", "spec", "where"), [
    (None, {"verifier": {"name": "regex", "options": {"pattern": "(?<=a)b"}}},
     "field verifier.options.pattern: pattern '(?<=a)b' is not accepted by RE2"),
    (None, {"verifier": {"name": "regex", "options": {"pattern": "a b", "flags": "x"}}},
     "field verifier.options.pattern: expected flags among ims, found ['x']"),
    ([{**r, "ans": "a{2000}"} for r in ROWS], {"verifier": "regex"},
     "dataset row 1: answer: pattern 'a{2000}' is not accepted by RE2"),
    ([{**r, "ans": "(a)\\1"} for r in ROWS], {"verifier": "regex"},
     "dataset row 1: answer: pattern '(a)\\\\1' is not accepted by RE2"),
    ([{**r, "ans": {"type": "string", "pattern": "(?=x)y"}} for r in ROWS],
     {"verifier": "json-schema"}, "dataset row 1: answer, a schema pattern: pattern '(?=x)y'"),
    ([{**r, "ans": {"patternProperties": {"x": {}}, "unevaluatedProperties": False}}
      for r in ROWS], {"verifier": "json-schema"},
     "dataset row 1: answer: a schema may not combine unevaluatedProperties with patternProperties"),
])
def test_a_pattern_the_linear_time_engine_refuses_is_refused_at_pull(tmp_path, rows, spec, where):
    with pytest.raises(IntegrityError) as err:
        quick(publish(tmp_path, hostile(tmp_path, rows, **spec)))
    assert where in str(err.value)
    assert installed(home()) == []


def test_a_domain_that_pays_a_probe_is_refused_or_installed_marked_as_the_policy_says(
    tmp_path, monkeypatch, cli
):
    url = publish(tmp_path, bundle_of(tmp_path, verifier={
        "name": "regex", "options": {"pattern": "(?s).*"}}))  # anything passes
    with pytest.raises(PolicyRefused) as err:
        quick(url)
    assert str(err.value).startswith("bundle mydata: domain mydata/double-v1 pays the probe "
                                     "classes ['constant', 'oversized', 'template'] "
                                     "(mydata/double-v1: the constant probe ")
    assert installed(home()) == []
    config = configure(tmp_path, monkeypatch, {"pull": {"hackable": "mark"}})
    result = cli("pull", url, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [c["check"] for c in report["checks"]] == [
        "lock keys and caps", "hashes", "domain files", "identity", "pin", "policy",
        "grading data", "datasets", "shadowing", "probes"]
    assert all(c["ok"] for c in report["checks"])
    assert report["hackable"] == {"mydata/double-v1": ["constant", "oversized", "template"]}
    listed = {r["id"]: r for r in json.loads(cli("list", "--json").stdout)}
    assert listed["mydata/double-v1"]["hackable"] == report["hackable"]["mydata/double-v1"]
    assert "(hackable: refuse, pull: in " in str(err.value) and config.is_file()


def test_a_refused_pull_reports_every_check_that_ran_in_json(tmp_path, cli):
    bundle = bundle_of(tmp_path)
    url = publish(tmp_path, reseal(bundle, {"domains/double.yaml": b"id: [unclosed\n"}))
    result = cli("pull", url, "--json")
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["error"].startswith("bundle file domains/double.yaml")
    assert [(c["check"], c["ok"]) for c in report["checks"]] == [
        ("lock keys and caps", True), ("hashes", True), ("domain files", False)]


# -- found while red-teaming this change ------------------------------------------------------


def test_a_lock_that_lists_a_second_lock_among_its_files_is_refused(tmp_path):
    bundle = bundle_of(tmp_path)
    second = seal({**bundle.lock, "name": "other"})
    url = publish(tmp_path, reseal(bundle, {"rlhub.lock": dumps(second).encode()}))
    with pytest.raises(IntegrityError, match="the lock lists rlhub.lock among its files"):
        quick(url)


def test_a_ref_that_is_a_fifo_on_the_remote_is_refused_instead_of_hanging_the_pull(tmp_path):
    url = publish(tmp_path, bundle_of(tmp_path))
    ref = tmp_path / "remote" / "refs" / "main"
    ref.unlink()
    os.mkfifo(ref)  # opening it for reading would wait for a writer forever
    with pytest.raises(IntegrityError, match=r"file refs/main is a symbolic link \(or lies "
                       r"under one\) or not a regular file"):
        quick(url)


def test_an_installed_domain_file_changed_in_place_is_refused_at_discovery(tmp_path):
    url = publish(tmp_path, bundle_of(tmp_path), tag="v1")
    first = quick(f"{url}@v1").bundle
    domain_file = home() / "envs" / "mydata" / first / "domains" / "double.yaml"
    domain_file.write_text(domain_file.read_text().replace('"exact"', '"math"'))
    registry = Registry(autoload=False)
    assert registry.ids() == []
    assert registry.errors[0].cause.startswith(
        f"environment 'mydata': {Path('rlhub-pulls.lock').absolute()} pins bundle {first}, but "
        f"the installed content is bundle {first} with domains/double.yaml changed since it was "
        "installed; none of its domains is used.")
