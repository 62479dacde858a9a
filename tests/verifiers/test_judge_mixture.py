"""A mixture's ``judges:`` (rlhub.judges, rlhub.verifiers.routes): the user's mixture says which
endpoint serves each kind of judge, ahead of RLHUB_JUDGE_URL and the user's default judge, through
every entry point that runs a mixture. Every judge here is a real HTTP server on loopback."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from rlhub import Registry
from rlhub.judges import mixture_judges
from rlhub.testing.judge_server import ScriptedJudge
from rlhub.userconfig import ConfigError
from rlhub.verifiers import endpoints

RUBRIC = {"criteria": {"correct": "The answer is right."}, "scale": [1, 10]}


def rows(name: str) -> str:
    """Eight JSONL rows of their own per domain (so no judgement is answered from the cache)."""
    return "".join(json.dumps({"qid": f"q{i}", "question": f"Name {name} fruit {i}.",
                               "ans": f"{name} apple number {i:03d}"}) + "\n" for i in range(8))
EXPLAIN, GRADED = "mine/explain-v1", "mine/graded-v1"


def domain_file(root: Path, name: str, **options: Any) -> Path:
    """A data-only judged domain ``mine/<name>-v1`` whose judge verifier has ``options``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{name}.jsonl").write_text(rows(name))
    path = root / f"{name}.yaml"
    path.write_text(json.dumps({
        "id": f"mine/{name}-v1", "dataset": f"{name}.jsonl", "license": "CC0-1.0",
        "fields": {"id": "qid", "prompt": "question", "answer": "ans"},
        "verifier": {"name": "judge", "options": {"reference": "answer", "rubric": RUBRIC,
                                                  "backoff_s": 0.01, **options}}}))
    return path


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    """``mine/explain-v1`` (a judge of the kind ``default``) and ``mine/graded-v1`` (``rubric``)."""
    root = tmp_path / "domains"
    return [domain_file(root, "explain"), domain_file(root, "graded", endpoint="rubric")]


@pytest.fixture
def reg(files: list[Path]) -> Registry:
    return Registry(domain_files=files, autoload=False)


@pytest.fixture
def judges(monkeypatch: pytest.MonkeyPatch):
    """Four scripted judges: the mixture's, the registry's named one, RLHUB_JUDGE_URL's and the
    registry's default; no judge variable set."""
    for name in ("RLHUB_JUDGE_URL", "RLHUB_JUDGE_MODEL", "RLHUB_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    servers = [ScriptedJudge().start() for _ in range(4)]  # each test's registry: own endpoints
    yield dict(zip(("mixture", "named", "env", "default"), servers, strict=True))
    for server in servers:
        server.stop()


def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judges: dict[str, Any],
              **extra: Any) -> Path:
    """The user's config: ``big`` (the mixture's), ``rubric`` and ``grader`` (the default)."""
    path = tmp_path / "user-config.yaml"
    path.write_text(yaml.safe_dump({"endpoints": {
        "big": {"kind": "judge", "url": judges["mixture"].url, "model": "big-model", **extra},
        "rubric": {"kind": "judge", "url": judges["named"].url, "model": "rubric-model"},
        "grader": {"kind": "judge", "url": judges["default"].url, "model": "grader-model"}},
        "defaults": {"judge": "grader"}}))
    monkeypatch.setenv("RLHUB_CONFIG", str(path))
    return path


def mixture(tmp_path: Path, judges: Any = None, name: str = "mix.yaml") -> Path:
    path = tmp_path / name
    data: dict[str, Any] = {"strategy": "uniform", "domains": [EXPLAIN, GRADED]}
    if judges is not None:
        data["judges"] = judges
    path.write_text(yaml.safe_dump(data))
    return path


def judge_once(reg: Registry, domain_id: str) -> float:
    domain = reg.get(domain_id)
    task = domain.task("test", 0, 0)
    score = domain.verify(task, str(task.answer))
    assert score.error is None, score.error
    return score.reward


def models(judge: ScriptedJudge) -> list[str]:
    return [r["model"] for r in judge.requests]


# -- precedence ------------------------------------------------------------------------------


def test_the_mixture_judge_wins_over_rlhub_judge_url_which_wins_over_the_default_judge(
    tmp_path, monkeypatch, reg, judges
):
    configure(tmp_path, monkeypatch, judges)
    monkeypatch.setenv("RLHUB_JUDGE_URL", judges["env"].url)
    monkeypatch.setenv("RLHUB_JUDGE_MODEL", "env-model")
    reg.services.use_judges(mixture_judges(mixture(tmp_path, {"default": "big"}), reg))
    assert judge_once(reg, EXPLAIN) == 1.0
    assert models(judges["mixture"]) == ["big-model"] and judges["env"].requests == []

    # a mixture that chooses no judges
    reg.services.use_judges(mixture_judges(mixture(tmp_path), reg))
    judge_once(reg, EXPLAIN)
    assert models(judges["env"]) == ["env-model"] and len(judges["mixture"].requests) == 1

    monkeypatch.delenv("RLHUB_JUDGE_URL")
    judge_once(reg, EXPLAIN)
    assert models(judges["default"]) == ["grader-model"]


def test_each_kind_goes_where_the_mixture_says_and_a_kind_it_leaves_out_to_the_registry(
    tmp_path, monkeypatch, reg, judges
):
    configure(tmp_path, monkeypatch, judges)
    monkeypatch.setenv("MIX_JUDGE_KEY", "key-of-the-inline-judge")
    inline = {"url": judges["env"].url, "model": "inline-model", "api_key_env": "MIX_JUDGE_KEY"}
    reg.services.use_judges(mixture_judges(mixture(tmp_path, {"rubric": inline}), reg))
    judge_once(reg, GRADED)
    judge_once(reg, EXPLAIN)
    assert models(judges["env"]) == ["inline-model"]
    assert judges["env"].authorizations == ["Bearer key-of-the-inline-judge"]
    assert models(judges["default"]) == ["grader-model"] and judges["named"].requests == []

    reg.services.use_judges(mixture_judges(mixture(tmp_path, {"default": "big"}), reg))
    judge_once(reg, GRADED)  # rubric: not in this mixture, so the registry's endpoint 'rubric'
    assert models(judges["named"]) == ["rubric-model"]


def test_a_judge_inside_a_composite_part_is_a_kind_the_mixture_can_route(tmp_path, monkeypatch,
                                                                        judges):
    configure(tmp_path, monkeypatch, judges)
    path = tmp_path / "hybrid.yaml"
    path.write_text(json.dumps({
        "id": "mine/hybrid-v1", "dataset": "rows.jsonl", "license": "CC0-1.0",
        "fields": {"id": "qid", "prompt": "question", "answer": "ans"},
        "reward": {"range": [0, 1], "components": {"judge": {"weight": 1.0}}},
        "verifier": {"name": "composite", "options": {"parts": [{"name": "judge", "options": {
            "endpoint": "explainer", "reference": "answer", "rubric": RUBRIC}}]}}}))
    (tmp_path / "rows.jsonl").write_text(rows("hybrid"))
    reg = Registry(domain_files=[path], autoload=False)
    mix = tmp_path / "mix.yaml"
    mix.write_text(yaml.safe_dump({"domains": ["mine/hybrid-v1"],
                                   "judges": {"explainer": "big"}}))
    reg.services.use_judges(mixture_judges(mix, reg))
    assert judge_once(reg, "mine/hybrid-v1") == 1.0
    assert models(judges["mixture"]) == ["big-model"]


# -- bad input -------------------------------------------------------------------------------


def test_an_unknown_judge_kind_names_the_kinds_the_mixture_declares_and_the_nearest(
    tmp_path, monkeypatch, reg, judges
):
    configure(tmp_path, monkeypatch, judges)
    mix = mixture(tmp_path, {"rubrik": "big"})
    with pytest.raises(ConfigError) as err:
        mixture_judges(mix, reg)
    assert str(err.value) == (
        f"mixture file {mix}: field judges.rubrik: expected a judge kind the mixture's domains "
        f"declare (default: {EXPLAIN}; rubric: {GRADED}), found 'rubrik' (did you mean 'rubric'?)"
    )


def test_an_endpoint_name_missing_from_the_registry_lists_the_judges_it_has(
    tmp_path, monkeypatch, reg, judges
):
    config = configure(tmp_path, monkeypatch, judges)
    mix = mixture(tmp_path, {"default": "bigg"})
    with pytest.raises(ConfigError) as err:
        mixture_judges(mix, reg)
    assert str(err.value) == (
        f"mixture file {mix}: field judges.default: judge endpoint 'bigg': expected it under "
        f"endpoints: in {config} (with kind: judge), found big, grader, rubric (did you mean "
        "'big'?)"
    )


def test_a_key_variable_that_is_not_set_is_refused_before_the_run(tmp_path, monkeypatch, reg,
                                                                  judges):
    config = configure(tmp_path, monkeypatch, judges, api_key_env="BIG_KEY")
    monkeypatch.delenv("BIG_KEY", raising=False)
    monkeypatch.delenv("MIX_JUDGE_KEY", raising=False)
    named = mixture(tmp_path, {"default": "big"})
    with pytest.raises(ConfigError) as err:
        mixture_judges(named, reg)
    assert str(err.value) == (
        f"mixture file {named}: field judges.default: endpoint 'big' of {config}: expected the "
        "environment variable BIG_KEY (its api_key_env) to hold the judge's API key, found it "
        "unset or empty; export BIG_KEY=... before the run"
    )
    inline = mixture(tmp_path, {"rubric": {"url": judges["env"].url, "model": "m",
                                           "api_key_env": "MIX_JUDGE_KEY"}})
    with pytest.raises(ConfigError, match=r"field judges\.rubric: expected the environment "
                       r"variable MIX_JUDGE_KEY \(its api_key_env\)"):
        mixture_judges(inline, reg)
    assert all(j.requests == [] for j in judges.values())


@pytest.mark.parametrize(("entry", "found"), [
    ({"url": "http://127.0.0.1:1/v1"}, "expected the field(s) 'model', found none"),
    ({"url": "file:///etc/passwd", "model": "m"}, "'file:///etc/passwd' does not match"),
    # credentials in the URL would reach the lock, logs and errors: the key has its variable
    ({"url": "http://me:sk-secret@127.0.0.1:1/v1", "model": "m"}, "does not match"),
    ({"url": "http://127.0.0.1:1/v1", "model": "m", "headers": {"x": "y"}},
     "found unknown 'headers'"),
])
def test_an_inline_judge_is_held_to_the_schema(tmp_path, reg, entry, found):
    mix = mixture(tmp_path, {"default": entry})
    with pytest.raises(Exception, match=r"field judges\.default") as err:
        mixture_judges(mix, reg)
    assert found in str(err.value)


# -- entry points ----------------------------------------------------------------------------


def test_rlhub_serve_with_a_mixture_asks_the_mixture_judge(tmp_path, monkeypatch, reg, judges):
    pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")
    from rlhub.integrations.server.app import ServerConfig, create_app
    from starlette.testclient import TestClient

    configure(tmp_path, monkeypatch, judges)
    monkeypatch.setenv("RLHUB_JUDGE_URL", judges["env"].url)
    mix = mixture(tmp_path, {"default": "big", "rubric": "big"})
    with TestClient(create_app(ServerConfig(workers=2, mixture=str(mix)), reg)) as client:
        for domain_id in (EXPLAIN, GRADED):  # labels the server signed: no forged task
            (label,) = client.post("/v1/sample", json={"domain": domain_id, "n": 1}).json()["labels"]
            answer = label["task"]["answer"]
            got = client.post("/v1/verify", json={"label": label, "completion": answer}).json()
            assert (got["reward"], got["failure"]) == (1.0, "none"), got
    assert models(judges["mixture"]) == ["big-model", "big-model"]
    assert judges["env"].requests == [] and judges["named"].requests == []


def test_rlhub_serve_refuses_a_mixture_naming_an_unknown_judge_before_serving(
    tmp_path, monkeypatch, reg, judges
):
    pytest.importorskip("fastapi", reason="fastapi is not installed (pip install 'rlhub[serve]')")
    from rlhub.integrations.server.app import ServerConfig, create_app

    configure(tmp_path, monkeypatch, judges)
    mix = mixture(tmp_path, {"default": "nobody"})
    with pytest.raises(ConfigError, match=r"field judges\.default: judge endpoint 'nobody'"):
        create_app(ServerConfig(workers=1, mixture=str(mix)), reg)


def test_rlhub_eval_scores_with_the_mixture_judge(tmp_path, monkeypatch, files, judges):
    config = configure(tmp_path, monkeypatch, judges)
    policy = judges["named"]  # answers the policy's requests too (not the judge's)
    mix = mixture(tmp_path, {"default": "big", "rubric": "big"})
    env = {**os.environ, "RLHUB_CONFIG": str(config),
           "RLHUB_DISABLE_AUTOLOAD": "1", "RLHUB_JUDGE_URL": judges["env"].url,
           "RLHUB_HOME": str(tmp_path / "home")}
    rlhub = str(Path(sys.executable).parent / "rlhub")
    args = [rlhub, "--domains-file", str(files[0]), "--domains-file", str(files[1]), "eval",
            "--mixture", str(mix), "--policy", f"openai:{policy.url}#policy", "-n", "1",
            "--out", str(tmp_path / "run"), "--json"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert models(judges["mixture"]) == ["big-model", "big-model"]
    assert models(policy) == ["policy", "policy"] and judges["env"].requests == []
    bad = mixture(tmp_path, {"default": "bigg"}, name="bad.yaml")
    args[args.index(str(mix))] = str(bad)
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: mixture file {bad}: field judges.default: judge "
                                  "endpoint 'bigg'")


def test_the_local_trainer_takes_its_judges_from_its_config(tmp_path, monkeypatch, reg, judges):
    pytest.importorskip("trl", reason="the local trainer needs rlhub[train]")
    from rlhub.integrations.trainer.local import make_local_trainer

    configure(tmp_path, monkeypatch, judges)
    config = {"strategy": "uniform", "domains": [EXPLAIN], "judges": {"default": "big"},
              "out": str(tmp_path / "run"), "config_path": str(tmp_path / "train.yaml")}
    make_local_trainer(config, reg)
    assert reg.services.judges.get("default") == "big"
    assert reg.services.judges.where == f"mixture file {tmp_path / 'train.yaml'}"
    judge_once(reg, EXPLAIN)
    assert models(judges["mixture"]) == ["big-model"]
    with pytest.raises(ConfigError, match=r"field judges\.rubric: expected a judge kind the "
                       r"mixture's domains declare \(default: mine/explain-v1\)"):
        make_local_trainer({**config, "judges": {"rubric": "big"}}, reg)


def test_a_registry_rebuilt_from_its_spec_keeps_the_mixture_judges(tmp_path, monkeypatch,
                                                                   reg, judges):
    configure(tmp_path, monkeypatch, judges)
    reg.services.use_judges(mixture_judges(mixture(tmp_path, {"default": "big"}), reg))
    spec = pickle.loads(pickle.dumps(reg.spec))  # what a Ray verifier actor is given
    rebuilt = Registry.from_spec(spec)
    assert rebuilt.spec == reg.spec and rebuilt.services is not reg.services
    judge_once(rebuilt, EXPLAIN)
    assert models(judges["mixture"]) == ["big-model"]


# -- attacks ---------------------------------------------------------------------------------


def test_a_lock_pins_the_mixtures_judges_so_a_locked_run_with_other_judges_is_refused(
    tmp_path, monkeypatch, reg, judges
):
    from rlhub.integrations.hub.lock import check_lock, mixture_lock, write_lock

    configure(tmp_path, monkeypatch, judges)
    locked = mixture(tmp_path, {"default": "big"})
    lock = write_lock(mixture_lock(locked, reg), tmp_path / "rlhub.lock")
    assert check_lock(lock, reg, locked) == []
    assert check_lock(lock, reg, mixture(tmp_path, {"default": "grader"}, "other.yaml")) == [
        "mixture: judges.default changed from 'big' to 'grader'"]
    assert check_lock(lock, reg, mixture(tmp_path, None, "none.yaml")) == [
        "mixture: judges.default changed from 'big' to None"]
    plain = write_lock(mixture_lock(mixture(tmp_path, None, "none.yaml"), reg),
                       tmp_path / "plain.lock")  # a lock of a mixture choosing no judges
    assert "judges" not in json.loads(plain.read_text())["mixture"]["config"]


def test_a_worker_process_gets_the_key_variable_of_every_judge_the_mixture_names(
    tmp_path, monkeypatch, reg, judges
):
    from rlhub.integrations.server.pool import RLHUB_ENV_VARS
    from rlhub.verifiers.routes import JudgeRoutes

    configure(tmp_path, monkeypatch, judges, api_key_env="BIG_KEY")
    monkeypatch.setenv("BIG_KEY", "sk-big")
    routes = JudgeRoutes({"default": "big", "rubric": {"url": judges["env"].url, "model": "m"}})
    assert routes.key_variables() == ["BIG_KEY", "RLHUB_JUDGE_API_KEY"]
    assert "RLHUB_CACHE" in RLHUB_ENV_VARS  # actors find the derived files the driver made


def test_no_key_value_is_kept_in_registry_spec_a_lock_or_a_judge_failure(
    tmp_path, monkeypatch, reg, judges
):
    from rlhub.integrations.hub.lock import dumps, mixture_lock

    secret = "sk-the-users-own-secret"
    configure(tmp_path, monkeypatch, judges, api_key_env="BIG_KEY")
    monkeypatch.setenv("BIG_KEY", secret)
    monkeypatch.setenv("MIX_KEY", secret)
    dead = {"url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "MIX_KEY",
            "retries": 0, "timeout_s": 1}
    mix = mixture(tmp_path, {"default": "big", "rubric": dead})
    reg.services.use_judges(mixture_judges(mix, reg))
    domain = reg.get(GRADED)
    task = domain.task("test", 0, 0)
    score = domain.verify(task, str(task.answer))
    assert score.failure == "judge" and score.error
    kept = [repr(reg.spec), dumps(mixture_lock(mix, reg)), score.error,
            json.dumps(endpoints.STATS.snapshot())]
    assert not [text for text in kept if secret in text]
    assert judges["mixture"].requests == []


@pytest.mark.parametrize("kind", ["../default", "default ", "a/b", "", "-x"])
def test_a_judge_kind_that_is_not_a_plain_name_is_refused_by_the_schema(tmp_path, reg, kind):
    with pytest.raises(Exception, match="judges") as err:
        mixture_judges(mixture(tmp_path, {kind: "big"}), reg)
    assert "does not match" in str(err.value)
