"""One helper speaks the sandboxed-verdict protocol, for the core and for plugins alike."""

from __future__ import annotations

import json

import rlhub
from rlhub.verifiers.pytests import parse_verdict


def line(tag: str, payload: object, nonce: str) -> str:
    return json.dumps({tag: payload, "nonce": nonce})


def test_the_last_line_with_the_jobs_nonce_wins_and_a_forged_or_broken_one_is_skipped():
    nonce = rlhub.fresh_nonce()
    stdout = "\n".join([line("rlhub_sql", [1], nonce), line("rlhub_sql", [2], "guess"),
                        '{"rlhub_sql": [3], "nonce": ', "print output"])
    assert rlhub.tagged_line(stdout, "rlhub_sql", nonce) == [1]
    assert rlhub.tagged_line(stdout, "rlhub_regex", nonce) is None


def test_python_tests_reads_its_verdict_through_the_same_helper():
    nonce = rlhub.fresh_nonce()
    good, forged = line("rlhub_verdict", {"passed": 1}, nonce), line("rlhub_verdict", {}, "x")
    assert parse_verdict(f"{good}\n{forged}\n", nonce) == {"passed": 1}
    assert parse_verdict(f"{forged}\n", nonce) is None


def test_fresh_nonces_are_long_and_never_repeat():
    nonces = {rlhub.fresh_nonce() for _ in range(1000)}
    assert len(nonces) == 1000 and all(len(n) == 32 for n in nonces)


def test_the_verify_deadline_is_three_times_the_domains_verify_timeout():
    raw = {"id": "x/y-v1", "version": "1", "summary": "s", "license": "MIT", "tags": [],
           "reward": {"range": [0, 1], "components": {"c": {"weight": 1.0}}}, "factory": "m:f"}
    assert rlhub.Manifest.parse({**raw, "verify_timeout_s": 4}, plugin="x").verify_deadline_s == 12
    assert rlhub.Manifest.parse(raw, plugin="x").verify_deadline_s == 30
