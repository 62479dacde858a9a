"""The domain commands of the CLI, run as a user runs them: as subprocesses (on the fixture
plugins only, so that the installed plugins do not change the messages)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def rlhub(*args, **env):
    full = {**os.environ, "RLHUB_PLUGINS": "toyplug", "RLHUB_DISABLE_AUTOLOAD": "1", **env}
    return subprocess.run([sys.executable, "-m", "rlhub", *args], capture_output=True, text=True,
                          env=full, timeout=120)


def test_list_json_prints_only_json_with_the_promised_keys():
    out = rlhub("list", "--json")
    rows = {r["id"]: r for r in json.loads(out.stdout)}
    assert set(rows["toy/reverse-v1"]) >= {"id", "plugin", "distribution", "version", "tags"}
    assert rows["toy/reverse-v1"]["plugin"] == "toy"


def test_show_prints_the_manifest_and_unknown_ids_get_a_did_you_mean():
    shown = json.loads(rlhub("show", "toy/reverse-v1", "--json").stdout)
    assert shown["factory"] == "toyplug:Reverse" and shown["turns"]["max_turns"] == 1
    bad = rlhub("show", "toy/revers-v1", "--json")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "did you mean 'toy/reverse-v1'?" in bad.stderr


def test_sample_is_the_same_in_every_process():
    a = rlhub("sample", "toy/reverse-v1", "-n", "3", "--seed", "5", "--split", "test",
              "--json").stdout
    b = rlhub("sample", "toy/reverse-v1", "-n", "3", "--seed", "5", "--split", "test", "--json",
              PYTHONHASHSEED="123").stdout
    tasks = [json.loads(line) for line in a.splitlines()]
    assert a == b and len(tasks) == 3 and tasks[0]["id"] == "toy/reverse-v1:test:5:0"


def test_sample_refuses_an_unknown_split():
    out = rlhub("sample", "toy/reverse-v1", "--split", "dev")
    assert out.returncode == 2
    assert "expected a split in ['train', 'test'], found 'dev'" in out.stderr


def test_verify_scores_lines_and_records_bad_lines_without_stopping(tmp_path):
    task = json.loads(rlhub("sample", "toy/reverse-v1", "--json").stdout)
    lines = [json.dumps({"task": task, "completion": task["gold"]}), "{not json",
             json.dumps({"task": task}), json.dumps({"task": task, "completion": "nah"})]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = [json.loads(x) for x in rlhub("verify", "toy/reverse-v1", "--input", str(path),
                                        "--json").stdout.splitlines()]
    assert [o["line"] for o in out] == [1, 2, 3, 4]
    assert out[0]["reward"] == 1.0 and out[0]["task_id"] == task["id"]
    assert out[1]["error"].startswith("line 2: Expecting property name")
    assert out[2]["error"] == 'line 3: expected {"task": {...}, "completion": "..."}'
    assert out[3]["reward"] == 0.0 and out[3]["error"] is None


def test_check_passes_good_domains_and_fails_broken_ones():
    good = rlhub("check", "toy/*", "--json")
    assert good.returncode == 0 and json.loads(good.stdout)["failed"] == 0
    bad = rlhub("check", "broken/wrong-gold-v1", "--json", RLHUB_PLUGINS="toyplug,brokenplug")
    report = json.loads(bad.stdout)
    assert bad.returncode == 1 and report["failed"] == 1
    assert "gold completion of task t1 scored 0" in report["results"][0]["problems"][0]


def test_check_of_one_domain_samples_no_other_domain_in_its_fresh_interpreter(tmp_path):
    """The determinism check's fresh interpreter sampled every domain of the checked one's
    plugin: `rlhub check rcore/<one>` generated all 38 Reasoning Core tasks there."""
    log = tmp_path / "children"  # lost-in-child writes here when sampled outside pid 1
    out = rlhub("check", "broken/wrong-gold-v1", "--json", RLHUB_PLUGINS="toyplug,brokenplug",
                BROKEN_PARENT_PID="1", BROKEN_CHILD_LOG=str(log))
    assert json.loads(out.stdout)["results"][0]["id"] == "broken/wrong-gold-v1"
    assert not log.exists()


def test_check_json_reports_every_probe_class_and_the_highest_reward_a_probe_got():
    out = rlhub("check", "broken/closeness-v1", "toy/reverse-v1", "broken/hedge-known-v1",
                "--json", RLHUB_PLUGINS="toyplug,brokenplug")
    report = json.loads(out.stdout)
    results = {r["id"]: r for r in report["results"]}
    assert out.returncode == 1 and report["failed"] == 1
    good, close = results["toy/reverse-v1"], results["broken/closeness-v1"]
    assert set(good["probes"]) == {"degenerate", "constant", "hedge", "template", "players",
                                   "oversized", "forged-label"}
    assert good["ok"] and good["max_probe_reward"] == 0.0
    assert set(good["probes"]["hedge"]) == {"ran", "reason", "probes", "passed", "max_reward",
                                            "problems", "hackable", "seconds"}
    assert good["probes"]["players"]["ran"] is False and good["probes"]["players"]["reason"]
    assert not close["ok"] and 0 < close["probes"]["constant"]["max_reward"] < 1
    known = results["broken/hedge-known-v1"]
    assert known["ok"] and known["known"] and known["probes"]["hedge"]["hackable"]
    assert report["max_probe_reward"] == 1.0  # the known hedge, never hidden


def test_list_shows_which_domains_are_marked_hackable():
    env = {"RLHUB_PLUGINS": "toyplug,brokenplug"}
    rows = {r["id"]: r for r in json.loads(rlhub("list", "--json", **env).stdout)}
    assert rows["broken/hedge-known-v1"]["hackable"] == ["hedge"]
    assert rows["toy/reverse-v1"]["hackable"] == [] and rows["toy/reverse-v1"]["scoring"] is None
    table = rlhub("list", **env, COLUMNS="200").stdout
    assert "hackable" in table and "hedge" in table


def test_check_without_ids_or_all_is_an_error():
    out = rlhub("check")
    assert out.returncode == 2 and "expected domain ids or --all" in out.stderr


def test_domains_file_option_registers_a_data_only_domain(tmp_path):
    (tmp_path / "rows.jsonl").write_text('{"q": "Capital of France?", "a": "Paris"}\n')
    spec = tmp_path / "caps.yaml"
    spec.write_text("id: caps/capital-v1\ndataset: rows.jsonl\nverifier: exact\n"
                    "fields: {prompt: q, answer: a}\n")
    out = rlhub("--domains-file", str(spec), "sample", "caps/capital-v1", "--json")
    assert json.loads(out.stdout)["answer"] == "Paris"


@pytest.mark.parametrize("command", [["list"], ["verifiers"]])
def test_human_output_is_readable(command):
    out = rlhub(*command)
    assert out.returncode == 0 and ("toy/reverse-v1" in out.stdout or "python-tests" in out.stdout)


def test_list_all_adds_the_left_out_environments_with_the_reason():
    plain = json.loads(rlhub("list", "--json", RLHUB_PLUGINS="leftplug").stdout)
    full = json.loads(rlhub("list", "--all", "--json", RLHUB_PLUGINS="leftplug").stdout)
    assert [r["id"] for r in plain] == ["left/kept-v1"]
    assert full[1:] == [{"id": "left/duel-v1", "plugin": "left", "reason": "its env has 2 agent "
                         "seats", "left_out": "its env has 2 agent seats",
                         "distribution": "RLHUB_PLUGINS module leftplug"}]
    table = rlhub("list", "--all", RLHUB_PLUGINS="leftplug", COLUMNS="200").stdout
    assert "its env has 2 agent seats" in table
    assert "1 domains from 1 plugins; 1 environments left out" in table


FLAWED = "plugin 'flawed', domain 'flawed/bad-v1': field license: 3 is not of type 'string'"


def test_a_listed_domain_whose_manifest_is_invalid_is_refused_by_use_and_failed_by_check():
    listed = json.loads(rlhub("list", "--json", RLHUB_PLUGINS="flawedplug").stdout)
    assert "flawed/bad-v1" in [r["id"] for r in listed]
    used = rlhub("sample", "flawed/bad-v1", RLHUB_PLUGINS="flawedplug")
    assert (used.returncode, used.stdout, used.stderr) == (2, "", f"error: {FLAWED}\n")
    checked = rlhub("check", "flawed/bad-v1", RLHUB_PLUGINS="flawedplug")
    assert checked.returncode == 1
    assert f"FAIL flawed/bad-v1: could not build the domain: {FLAWED}" in checked.stderr


def test_list_marks_deferred_domains_and_list_all_describes_them():
    rows = {r["id"]: r for r in json.loads(rlhub("list", "--json",
                                                 RLHUB_PLUGINS="flawedplug").stdout)}
    assert rows["flawed/later-v1"]["deferred"] and not rows["flawed/bad-v1"]["deferred"]
    table = rlhub("list", RLHUB_PLUGINS="flawedplug", COLUMNS="200").stdout
    assert "4 domains from 1 plugins; 3 described on first use (`rlhub list --all`" in table
    full = json.loads(rlhub("list", "--all", "--json", RLHUB_PLUGINS="flawedplug").stdout)
    assert [(r["id"], r.get("deferred"), r.get("left_out")) for r in full][:3] == [
        ("flawed/bad-v1", False, None), ("flawed/fine-v1", False, None),
        ("flawed/later-v1", None, "its env has 2 agent seats")]


def leaf_commands():
    import typer.main

    from rlhub.cli import app

    def walk(command, path):
        subs = getattr(command, "commands", None)
        if not subs:
            yield path, command
        for name, sub in (subs or {}).items():
            yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(app), []))


def test_every_command_takes_json():
    without = [" ".join(path) for path, command in leaf_commands()
               if "--json" not in {o for p in command.params for o in getattr(p, "opts", [])}]
    assert without == []


def test_sample_without_json_prints_each_task_readably():
    out = rlhub("sample", "toy/reverse-v1", "-n", "2", "--seed", "5", "--split", "test")
    assert out.returncode == 0 and not out.stdout.lstrip().startswith("{")
    task = json.loads(rlhub("sample", "toy/reverse-v1", "--seed", "5", "--split", "test",
                            "--json").stdout)
    assert f"── {task['id']}  (test seed 5 index 0)\n{task['prompt']}\n" in out.stdout
    assert f"answer: {task['answer']}" in out.stdout and out.stdout.count("── ") == 2


def test_verify_without_json_prints_one_readable_line_per_input(tmp_path):
    task = json.loads(rlhub("sample", "toy/reverse-v1", "--json").stdout)
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join([json.dumps({"task": task, "completion": task["gold"]}), "{bad",
                               json.dumps({"task": task, "completion": "nah"})]) + "\n")
    lines = rlhub("verify", "toy/reverse-v1", "--input", str(path)).stdout.splitlines()
    assert lines[0] == f"line 1: PASS reward 1 (none) {task['id']}"
    assert lines[1].startswith("line 2: error: line 2: Expecting property name")
    assert lines[2].startswith(f"line 3: fail reward 0 (answer) {task['id']}")


def test_check_on_a_judged_domain_without_a_judge_says_so_in_one_line():
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLHUB_JUDGE")}
    out = subprocess.run([sys.executable, "-m", "rlhub", "check", "judged/explain-v1"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        "SKIP judged/explain-v1: needs a judge: set RLHUB_JUDGE_URL, or `--judge scripted` to "
        "check the plumbing with the built-in scripted judge",
        "0 passed, 0 failed, 1 not checked, 0 with known (hackable) problems; highest reward of "
        "any probe: None; 0 probe classes could not run on their domain (--json says which and "
        "why)"]
