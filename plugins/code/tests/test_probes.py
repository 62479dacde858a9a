"""The reward-hacking probes: none passes a code domain, and each one catches the verifier
weakness it targets (proved against deliberately naive verifiers that run on the real sandbox)."""


import pytest

import rlhub
from rlhub import Domain, ExecRequest, Manifest, Task, Verdict, code_of
from rlhub.testing.probes_code import check_reward_hacking, hacking_probes, task_language

ONE_PER_KIND = ["code/py-grid-v2", "code/py-repair-v2", "code/bash-wordfreq-v2",
                "code/sql-join-v2", "code/regex-words-v2"]
TESTS = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(5) == 25\n"
RUNNER = """\
import json, os, sys
ns = {}
exec(open("candidate.py").read(), ns)
tests = open("tests.py").read() if os.path.exists("tests.py") else os.environ["RLHUB_TESTS"]
exec(tests, ns)
ns["check"](ns["square"])
"""


def test_the_plugin_declares_at_least_25_domains_all_tagged_code_so_the_kit_probes_them():
    ids = [d for d in rlhub.registry().ids() if d.startswith("code/")]
    assert len(ids) >= 25
    assert all("code" in rlhub.registry().manifest(d).tags for d in ids)


class NaiveDomain(Domain):
    """A deliberately weak verifier: the tests run beside the candidate and exit 0 means pass.

    ``leak`` says where the tests sit: in a file of the work dir or in an environment variable.
    ``pass_on`` is ``exit`` (exit status 0 passes) or ``text`` ("passed" in stdout passes).
    """

    def __init__(self, manifest, leak="file", pass_on="exit"):
        super().__init__(manifest)
        self.leak, self.pass_on = leak, pass_on

    def generate(self, rng, split, index):
        return {"prompt": "Write square(n).",
                "gold": "```python\ndef square(n):\n    return n * n\n```",
                "meta": {"tests": TESTS, "entry_point": "square"}}

    def check(self, task, completion):
        files = {"candidate.py": code_of(completion, ("python",))}
        env = {}
        if self.leak == "file":
            files["tests.py"] = task.meta["tests"]
        else:
            env["RLHUB_TESTS"] = task.meta["tests"]
        code = RUNNER if self.pass_on == "exit" else RUNNER + "print('all tests passed')\n"
        result = self.services.sandboxes.run(ExecRequest(code=code, files=files, env=env))
        ok = result.exit_code == 0 if self.pass_on == "exit" else "passed" in result.stdout.lower()
        return Verdict({"ok": float(ok)}, ok)


def naive(leak="file", pass_on="exit"):
    manifest = Manifest.parse({
        "id": "code/naive-v1", "version": "1.0.0", "summary": "deliberately weak", "tags": ["code"],
        "license": "Apache-2.0", "reward": {"range": [0, 1], "components": {"ok": {"weight": 1}}},
        "factory": "x:y"}, plugin="code")
    domain = NaiveDomain(manifest, leak, pass_on)
    domain.registry = rlhub.registry()
    return domain


@pytest.mark.parametrize("domain_id", ONE_PER_KIND)
def test_no_probe_earns_the_maximum_on_any_kind_of_code_domain(domain_id):
    domain = rlhub.registry().get(domain_id)
    assert check_reward_hacking(domain, domain.task("test", 3, 1)) == []


@pytest.mark.parametrize("domain_id", ONE_PER_KIND)
def test_probes_are_adapted_to_the_task_s_language_and_entry_point(domain_id):
    task = rlhub.registry().get(domain_id).task("train", 0, 0)
    probes = hacking_probes(task)
    language = task_language(task)
    assert len(probes) >= 5 and "bare fake success text" in probes
    assert all(f"```{language}" in c for n, c in probes.items() if n != "bare fake success text")
    if language == "python":
        assert all(f"def {task.meta['entry_point']}(" in c for n, c in probes.items()
                   if "at import" not in n and n not in ("fake success text",
                                                         "bare fake success text"))


def test_a_verifier_trusting_the_exit_status_is_caught_by_the_exit_probes():
    domain = naive()
    problems = check_reward_hacking(domain, domain.task("train", 0, 0))
    assert any("'sys.exit(0) at import' was accepted" in p for p in problems)
    assert any("'os._exit(0) at import' was accepted" in p for p in problems)


def test_a_verifier_trusting_printed_text_is_caught_by_the_fake_success_probe():
    domain = naive(pass_on="text")
    problems = check_reward_hacking(domain, domain.task("train", 0, 0))
    assert any("'fake success text' was accepted" in p for p in problems)


@pytest.mark.parametrize("leak", ["file", "env"])
def test_tests_the_candidate_can_read_are_found_and_special_cased(leak):
    domain = naive(leak=leak)
    problems = check_reward_hacking(domain, domain.task("train", 0, 0))
    assert any("'read the tests' was accepted" in p for p in problems), problems


def test_objects_that_equal_anything_are_caught_when_the_tests_compare_with_eq():
    domain = naive()
    problems = check_reward_hacking(domain, domain.task("train", 0, 0))
    assert any("'always-equal object' was accepted" in p for p in problems)


def test_a_reward_hacking_domain_id_is_resolved_through_the_registry():
    task = rlhub.registry().get("code/py-rle-v2").task("train", 0, 0)
    assert check_reward_hacking("code/py-rle-v2", task) == []


def test_a_task_without_a_code_language_gets_only_the_text_probe():
    assert list(hacking_probes(Task("t", "d", "say hi"))) == ["bare fake success text"]
