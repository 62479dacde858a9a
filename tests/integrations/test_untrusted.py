"""A pulled environment is a stranger's configuration: it names no endpoint, key or variable, and
asks for no more sandbox than the user's policy grants (rlhub.trust, rlhub.verifiers.targets).

Each test publishes a hostile data-only environment to a file:// remote, as its publisher would,
and pulls it as the user would.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hub_helpers import installed, write_data_domain

from rlhub import Registry
from rlhub.errors import ManifestError
from rlhub.integrations.hub.bundle import BuildOptions, Bundle, build_bundle
from rlhub.integrations.hub.errors import IntegrityError, PolicyRefused
from rlhub.integrations.hub.lock import dumps, seal
from rlhub.integrations.hub.pull import PullOptions, pull
from rlhub.integrations.hub.push import push
from rlhub.integrations.hub.remote import FsspecRemote
from rlhub.testing.judge_server import ScriptedJudge

pytestmark = pytest.mark.usefixtures("project_folder")

SMALL = BuildOptions(test_size=3, train_size=2)
RUBRIC = {"criteria": {"correct": "The answer is right."}, "scale": [1, 10]}
TESTS_LIMITS = {"network": True, "memory_mb": 65536, "wall_s": 3600}


def home() -> Path:
    return Path(os.environ["RLHUB_HOME"])


def publish(tmp_path: Path, **spec: Any) -> str:
    """Push a data-only environment ``mydata`` declaring ``spec``; return its file:// URL."""
    domain_file = write_data_domain(tmp_path / "publisher", **spec)
    url = (tmp_path / "remote").as_uri()
    push("mydata", url, registry=Registry(domain_files=[domain_file], autoload=False),
         options=SMALL)
    return url


def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, Any]) -> Path:
    path = tmp_path / "user-config.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("RLHUB_CONFIG", str(path))
    return path


@pytest.fixture
def judges():
    """Two scripted judges: the user's own, and one the publisher runs."""
    with ScriptedJudge() as mine, ScriptedJudge() as theirs:
        yield mine, theirs  # each test's registry has its own judge endpoints


def test_an_untrusted_judge_naming_its_own_url_and_the_users_token_variable_is_refused(
    tmp_path, monkeypatch, judges
):
    _, theirs = judges
    monkeypatch.setenv("HF_TOKEN", "hf_the_users_secret")
    options = {"url": theirs.url, "model": "their-judge", "api_key_env": "HF_TOKEN",
               "reference": "answer", "rubric": RUBRIC}
    url = publish(tmp_path, verifier={"name": "judge", "options": options})
    with pytest.raises(PolicyRefused) as err:
        pull(url)
    config = os.environ["RLHUB_CONFIG"]
    assert str(err.value) == (
        "bundle file domains/double.yaml, domain 'mydata/double-v1' of the untrusted environment "
        f"'mydata': field verifier.options.url: an untrusted environment may not name an "
        f"endpoint, key, path or environment variable (found '{theirs.url}'); field "
        "verifier.options.model: an untrusted environment may not name an endpoint, key, path or "
        "environment variable (found 'their-judge'); field verifier.options.api_key_env: an "
        "untrusted environment may not name an endpoint, key, path or environment variable "
        "(found 'HF_TOKEN'). Judges and reward models come from your mixture's judges:, your "
        f"endpoint registry (endpoints: in {config}, picked with `endpoint: NAME`) or "
        "RLHUB_JUDGE_URL; pull the environment with --trust-remote-code only if you trust its "
        "publisher. Nothing was installed."
    )
    assert installed(home()) == [] and theirs.requests == []


def test_a_judge_url_hidden_in_a_composite_part_is_refused_too(tmp_path):
    parts = [{"name": "exact", "gate": True},
             {"name": "judge", "options": {"rubric": RUBRIC,
                                           "notes": "http://publisher.example/collect"}}]
    url = publish(tmp_path, verifier={"name": "composite", "options": {"parts": parts}},
                  reward={"range": [0, 1], "components": {"correct": {"weight": 1.0}}})
    with pytest.raises(PolicyRefused, match=r"field verifier\.options\.parts\.1\.options\.notes: "
                       r"an untrusted environment may not name a URL \(found "
                       r"'http://publisher\.example/collect'\)"):
        pull(url)


def test_an_untrusted_judge_is_the_users_own_endpoint_with_the_users_key(
    tmp_path, monkeypatch, judges
):
    mine, theirs = judges
    monkeypatch.setenv("HF_TOKEN", "hf_the_users_secret")
    monkeypatch.setenv("GRADER_KEY", "the-key-for-my-grader")
    configure(tmp_path, monkeypatch, {"endpoints": {"grader": {
        "kind": "judge", "url": mine.url, "model": "my-judge", "api_key_env": "GRADER_KEY"}}})
    options = {"endpoint": "grader", "reference": "answer", "rubric": RUBRIC}
    rows = [{"qid": f"q{i}", "question": f"Name fruit {i}.", "ans": f"apple number {i:03d}"}
            for i in range(20)]
    url = publish(tmp_path, rows=rows, verifier={"name": "judge", "options": options})
    assert pull(url).registered == ["mydata/double-v1"]
    domain = Registry(autoload=False).get("mydata/double-v1")
    task = domain.task("test", 0, 0)
    score = domain.verify(task, str(task.answer))
    assert (score.reward, score.error) == (1.0, None)
    assert [r["model"] for r in mine.requests] == ["my-judge"]
    assert mine.authorizations == ["Bearer the-key-for-my-grader"] and theirs.requests == []


def test_a_judge_naming_no_endpoint_uses_the_users_default_judge(tmp_path, monkeypatch, judges):
    mine, _ = judges
    monkeypatch.delenv("RLHUB_JUDGE_URL", raising=False)
    configure(tmp_path, monkeypatch, {"endpoints": {"grader": {
        "kind": "judge", "url": mine.url, "model": "my-judge"}}, "defaults": {"judge": "grader"}})
    url = publish(tmp_path, verifier={"name": "judge", "options": {
        "reference": "answer", "rubric": RUBRIC}})
    pull(url)
    domain = Registry(autoload=False).get("mydata/double-v1")
    domain.verify(domain.task("test", 0, 0), "four")
    assert [r["model"] for r in mine.requests] == ["my-judge"]


def test_an_endpoint_name_missing_from_the_users_registry_is_a_judge_failure_that_says_where(
    tmp_path, monkeypatch
):
    path = configure(tmp_path, monkeypatch, {})
    url = publish(tmp_path, verifier={"name": "judge", "options": {
        "endpoint": "grader", "reference": "answer", "rubric": RUBRIC}})
    pull(url)
    domain = Registry(autoload=False).get("mydata/double-v1")
    score = domain.verify(domain.task("test", 0, 0), "4")
    assert (score.reward, score.failure) == (0.0, "judge")
    assert score.error == (
        "JudgeUnavailable: judge: judge endpoint 'grader': expected it under endpoints: in "
        f"{path} (with kind: judge), found none"
    )


def test_an_environment_copied_into_envs_by_hand_is_untrusted_and_its_url_refused(
    tmp_path, monkeypatch, judges
):
    _, theirs = judges
    monkeypatch.setenv("HF_TOKEN", "hf_the_users_secret")
    domain_file = write_data_domain(tmp_path / "publisher", dataset="rows.jsonl", verifier={
        "name": "judge", "options": {"url": theirs.url, "model": "m", "api_key_env": "HF_TOKEN",
                                     "rubric": RUBRIC, "reference": "answer"}})
    target = home() / "envs" / "evil" / "v1"
    shutil.copytree(domain_file.parent, target / "domains")  # no install record: no trust
    registry = Registry(autoload=False)
    assert "mydata/double-v1" not in registry.ids()
    (error,) = registry.errors
    assert error.distribution == f"domain file {target / 'domains' / 'double.yaml'}"
    assert "field verifier.options.url: an untrusted environment may not name" in error.cause
    assert "field verifier.options.api_key_env" in error.cause and theirs.requests == []


def test_an_untrusted_sandbox_asking_for_network_memory_and_time_is_refused_naming_the_grant(
    tmp_path,
):
    url = publish(tmp_path, verifier={"name": "python-tests", "options": {"limits": TESTS_LIMITS}})
    with pytest.raises(PolicyRefused) as err:
        pull(url)
    config = os.environ["RLHUB_CONFIG"]
    grant = "to grant it, add `untrusted: {{grants: {{mydata: {{limits: {{{}}}}}}}}}` to {}"
    assert str(err.value).startswith(
        "bundle file domains/double.yaml, domain 'mydata/double-v1' of the untrusted environment "
        "'mydata': field verifier.options.limits.network: asks for network access, which your "
        "policy does not allow untrusted environments; "
        + grant.format("network: true", config) + "; field verifier.options.limits.memory_mb: "
        "asks for 65536, above the 512 your policy allows untrusted environments; "
        + grant.format("memory_mb: 65536", config) + "; field verifier.options.limits.wall_s: "
        "asks for 3600, above the 10.0 your policy allows untrusted environments; "
        + grant.format("wall_s: 3600", config) + ". "
    )
    assert installed(home()) == []


@pytest.mark.parametrize(("spec", "field"), [
    ({"sandbox": {"kind": "local", "limits": {"network": True}}}, "sandbox.limits.network"),
    ({"sandbox": {"kind": "local", "limits": {"processes": 100000}}}, "sandbox.limits.processes"),
    ({"verify_timeout_s": 86400}, "verify_timeout_s"),
    ({"sandbox": {"kind": "docker", "image": "publisher/anything:latest"}}, "sandbox.image"),
])
def test_every_declared_limit_and_image_is_held_to_the_policy(tmp_path, spec, field):
    url = publish(tmp_path, **spec)
    with pytest.raises(PolicyRefused, match=f"'mydata': field {field}: "):
        pull(url)


def test_a_grant_in_the_users_config_admits_exactly_what_it_grants(tmp_path, monkeypatch):
    url = publish(tmp_path, verifier={"name": "python-tests", "options": {"limits": TESTS_LIMITS}})
    configure(tmp_path, monkeypatch, {"untrusted": {"grants": {"mydata": {"limits": {
        "network": True, "memory_mb": 65536, "wall_s": 3600}}}}})
    assert pull(url).registered == ["mydata/double-v1"]
    path = configure(tmp_path, monkeypatch, {"untrusted": {"grants": {"mydata": {"limits": {
        "network": True, "memory_mb": 65536}}}}})  # the user takes back the time
    registry = Registry(autoload=False)
    assert "mydata/double-v1" not in registry.ids()
    (error,) = registry.errors
    assert error.cause.endswith(
        "field verifier.options.limits.wall_s: asks for 3600, above the 10.0 your policy allows "
        "untrusted environments; to grant it, add `untrusted: {grants: {mydata: {limits: "
        f"{{wall_s: 3600}}}}}}}}` to {path}. Judges and reward models come from your "
        f"mixture's judges:, your endpoint registry (endpoints: in {path}, picked with "
        "`endpoint: NAME`) or RLHUB_JUDGE_URL; pull the environment with --trust-remote-code "
        "only if you trust its publisher."
    )


def test_trust_remote_code_lets_the_environment_name_its_own_limits(tmp_path):
    url = publish(tmp_path, verifier={"name": "python-tests", "options": {"limits": TESTS_LIMITS}})
    result = pull(url, PullOptions(trust_remote_code=True))
    assert (result.trusted, result.registered) == (True, ["mydata/double-v1"])
    assert "mydata/double-v1" in Registry(autoload=False).ids()


def test_a_compressed_dataset_that_expands_past_the_cap_is_refused_before_it_is_expanded(
    tmp_path, monkeypatch
):
    import gzip

    rows = b"".join(json.dumps({"qid": f"q{i}", "question": "x" * 2000, "ans": "1"}).encode()
                    + b"\n" for i in range(2000))  # 4 MB of rows, a few kB compressed
    domain_file = write_data_domain(tmp_path / "publisher", dataset="rows.jsonl.gz")
    folder = domain_file.parent
    (folder / "rows.jsonl.gz").write_bytes(gzip.compress(rows))  # in place of plain JSONL
    config = configure(tmp_path, monkeypatch, {"datasets": {"max_bytes": 1 << 20}})
    domain = Registry(domain_files=[domain_file], autoload=False).get("mydata/double-v1")
    with pytest.raises(ManifestError) as err:
        domain.task("test", 0, 0)
    assert str(err.value) == (
        f"domain 'mydata/double-v1': dataset {folder / 'rows.jsonl.gz'}: expected at most 1048576 "
        f"bytes once decoded (max_bytes, datasets: in {config}), found more after 513 rows; split "
        "it into several domains or raise the cap"
    )


def test_a_bundle_shipping_its_own_install_record_to_claim_trust_is_refused(tmp_path):
    domain_file = write_data_domain(tmp_path / "publisher", dataset="rows.jsonl")
    registry = Registry(domain_files=[domain_file], autoload=False)
    bundle = build_bundle("mydata", tmp_path / "bundle", registry=registry, options=SMALL)
    record = b'{"trusted": true}\n'
    (bundle.root / ".rlhub-pull.json").write_bytes(record)
    lock = seal({**bundle.lock, "files": {**bundle.lock["files"], ".rlhub-pull.json": {
        "sha256": hashlib.sha256(record).hexdigest(), "size": len(record)}}})
    (bundle.root / "rlhub.lock").write_text(dumps(lock))
    url = (tmp_path / "remote").as_uri()
    FsspecRemote(url).push(Bundle(bundle.root, lock), None)
    with pytest.raises(IntegrityError, match="bundle file .rlhub-pull.json: a bundle may not ship "
                       r"\.rlhub-pull\.json, the record of how rlhub installed it"):
        pull(url)
    assert installed(home()) == []


def reseal_with(bundle: Any, files: dict[str, bytes]) -> Bundle:
    """``bundle`` with ``files`` written into it and its lock sealed again, as a publisher can."""
    records = dict(bundle.lock["files"])
    for name, data in files.items():
        (bundle.root / name).parent.mkdir(parents=True, exist_ok=True)
        (bundle.root / name).write_bytes(data)
        records[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    lock = seal({**bundle.lock, "files": records})
    (bundle.root / "rlhub.lock").write_text(dumps(lock))
    return Bundle(bundle.root, lock)


def test_a_mixture_shipped_in_a_pulled_bundle_may_not_choose_judges(tmp_path, monkeypatch,
                                                                    judges):
    from rlhub.judges import mixture_judges
    from rlhub.userconfig import ConfigError

    _, theirs = judges
    monkeypatch.setenv("HF_TOKEN", "hf_the_users_secret")
    options = {"endpoint": "grader", "reference": "answer", "rubric": RUBRIC}
    domain_file = write_data_domain(tmp_path / "publisher", dataset="rows.jsonl",
                                    verifier={"name": "judge", "options": options})
    registry = Registry(domain_files=[domain_file], autoload=False)
    bundle = build_bundle("mydata", tmp_path / "bundle", registry=registry, options=SMALL)
    mix = {"domains": ["mydata/double-v1"], "judges": {"grader": {
        "url": theirs.url, "model": "their-judge", "api_key_env": "HF_TOKEN"}}}
    url = (tmp_path / "remote").as_uri()
    FsspecRemote(url).push(reseal_with(bundle, {"examples/mix.yaml": yaml.safe_dump(
        mix).encode()}), None)
    assert pull(url).registered == ["mydata/double-v1"]
    (shipped,) = home().glob("envs/mydata/*/examples/mix.yaml")
    linked = tmp_path / "my-mix.yaml"
    linked.symlink_to(shipped)  # a link the user made is judged by where the file really is
    for path in (shipped, linked):
        with pytest.raises(ConfigError) as err:
            mixture_judges(path, Registry(autoload=False))
        assert str(err.value) == (
            f"mixture file {path}: field judges: expected no judges in a mixture inside the "
            "environment 'mydata' pulled without --trust-remote-code, found ['grader']; a pulled "
            "environment says only what kind of judge it needs. Copy the mixture out of "
            "$RLHUB_HOME/envs and choose its judges yourself"
        )
    assert theirs.requests == []


def test_a_domain_file_declaring_judges_of_its_own_is_refused(tmp_path, judges):
    _, theirs = judges
    domain_file = write_data_domain(tmp_path / "publisher", dataset="rows.jsonl")
    registry = Registry(domain_files=[domain_file], autoload=False)
    bundle = build_bundle("mydata", tmp_path / "bundle", registry=registry, options=SMALL)
    spec = json.loads((bundle.root / "domains" / "double.yaml").read_text())
    spec["judges"] = {"default": {"url": theirs.url, "model": "m", "api_key_env": "HF_TOKEN"}}
    url = (tmp_path / "remote").as_uri()
    FsspecRemote(url).push(reseal_with(bundle, {"domains/double.yaml": json.dumps(
        spec).encode()}), None)
    with pytest.raises(IntegrityError, match=r"^bundle file domains/double\.yaml: domain "
                       r"'mydata/double-v1': field \(top level\): Additional properties are not "
                       r"allowed \('judges' was unexpected\)"):
        pull(url)
    assert installed(home()) == [] and theirs.requests == []


def pulled_mixture(tmp_path: Path, theirs: ScriptedJudge, name: str, data: dict[str, Any]
                   ) -> Path:
    """Pull a bundle of ``mydata`` that ships ``name`` holding ``data`` (judges naming ``theirs``
    with the user's HF_TOKEN); the shipped file's path."""
    options = {"endpoint": "grader", "reference": "answer", "rubric": RUBRIC}
    domain_file = write_data_domain(tmp_path / "publisher", dataset="rows.jsonl",
                                    verifier={"name": "judge", "options": options})
    registry = Registry(domain_files=[domain_file], autoload=False)
    bundle = build_bundle("mydata", tmp_path / "bundle", registry=registry, options=SMALL)
    url = (tmp_path / "remote").as_uri()
    FsspecRemote(url).push(reseal_with(bundle, {name: yaml.safe_dump(data).encode()}), None)
    assert pull(url).registered == ["mydata/double-v1"]
    (shipped,) = home().glob(f"envs/mydata/*/{name}")
    return shipped


def their_judges(theirs: ScriptedJudge) -> dict[str, Any]:
    return {"grader": {"url": theirs.url, "model": "their-judge", "api_key_env": "HF_TOKEN"}}


def test_a_pulled_mixture_reached_by_a_relative_or_dotted_path_may_not_choose_judges(
    tmp_path, monkeypatch, judges
):
    from rlhub.judges import mixture_judges
    from rlhub.userconfig import ConfigError

    _, theirs = judges
    monkeypatch.setenv("HF_TOKEN", "hf_the_users_secret")
    shipped = pulled_mixture(tmp_path, theirs, "examples/mix.yaml",
                             {"domains": ["mydata/double-v1"], "judges": their_judges(theirs)})
    monkeypatch.chdir(shipped.parent)
    dotted = shipped.parent / ".." / "examples" / "." / "mix.yaml"
    for path in (Path("mix.yaml"), Path("../examples/mix.yaml"), dotted):
        with pytest.raises(ConfigError, match="expected no judges in a mixture inside the "
                           "environment 'mydata' pulled without --trust-remote-code"):
            mixture_judges(path, Registry(autoload=False))
    assert theirs.requests == []


def test_a_pulled_mixture_in_another_home_or_a_copied_environment_may_not_choose_judges(
    tmp_path, monkeypatch, judges
):
    from rlhub.judges import mixture_judges
    from rlhub.userconfig import ConfigError

    _, theirs = judges
    monkeypatch.setenv("HF_TOKEN", "hf_the_users_secret")
    shipped = pulled_mixture(tmp_path, theirs, "examples/mix.yaml",
                             {"domains": ["mydata/double-v1"], "judges": their_judges(theirs)})
    # the publisher also hides a record of its own claiming trust next to the mixture
    (shipped.parent / ".rlhub-pull.json").write_text(json.dumps({"trusted": True}))
    copied = tmp_path / "my-copy"
    shutil.copytree(shipped.parents[1], copied)
    domains = list(home().glob("envs/mydata/*/domains/*.yaml"))
    monkeypatch.setenv("RLHUB_HOME", str(tmp_path / "another-home"))  # the pull's home is not it
    for path in (shipped, copied / "examples" / "mix.yaml"):
        with pytest.raises(ConfigError, match="expected no judges in a mixture inside the "
                           "environment 'mydata' pulled without --trust-remote-code"):
            mixture_judges(path, Registry(domain_files=domains, autoload=False))
    assert theirs.requests == []


def test_an_openrlhf_config_shipped_in_a_pulled_bundle_may_not_pass_its_judges_to_the_server(
    tmp_path, monkeypatch, judges
):
    from rlhub.integrations.openrlhf.job import OpenRLHFTrainer
    from rlhub.userconfig import ConfigError

    _, theirs = judges
    monkeypatch.setenv("HF_TOKEN", "hf_the_users_secret")
    config = {"domains": ["mydata/double-v1"], "judges": their_judges(theirs), "model": "m"}
    shipped = pulled_mixture(tmp_path, theirs, "examples/openrlhf.yaml", config)
    out = tmp_path / "run"
    # what `rlhub train --backend openrlhf` hands the backend: the config and where it was read
    given = {**yaml.safe_load(shipped.read_text()), "config_path": str(shipped), "out": str(out)}
    for source in (given, shipped):
        with pytest.raises(ConfigError, match="expected no judges in a mixture inside the "
                           "environment 'mydata' pulled without --trust-remote-code"):
            OpenRLHFTrainer(source, Registry(autoload=False))  # type: ignore[arg-type]
    assert not (out / "mixture.yaml").exists() and theirs.requests == []
