"""The contract kit over every installed domain (first-party plugins and any others).

Domains tagged ``judge`` need an LLM judge; when ``RLHUB_JUDGE_URL`` names none, they are checked
against rlhub's scripted OpenAI-compatible judge (``rlhub.testing.judge_server``) on loopback.
"""

from __future__ import annotations

import contextlib
import os

import pytest

import rlhub
from rlhub.testing import assert_domain_ok

REG = rlhub.registry()
REG.describe_all()  # as `rlhub check --all`: a bridged environment that cannot be offered is left out
PLUGIN = {i: REG.catalog.declared(i).plugin for i in REG.ids()}
# A fast sample runs in `make test` and the rest are marked slow (`make test-slow`) where domains
# repeat their code at a higher cost:
# - repository domains grade with pytest in workspaces (seconds each), and a real project is
#   fetched and validated once per cache: a sample of each form and source runs;
# - TextArena's harder, longer and larger variants of a game: each game's base variant runs.
SWE_SAMPLE = ("swe/syn-fix-test-s-v1", "swe/syn-fix-test-s-agent-v1",
              "swe/real-inflection-fix-test-v1")


def textarena_variants() -> set[str]:
    games = {i: REG.manifest(i).data["params"]["env_id"] for i in REG.ids()
             if PLUGIN[i] == "textarena"}
    if not games:
        return set()
    from rlhub_textarena.catalog import base_variants

    return set(games) - base_variants(games)


SLOW = {i for i in REG.ids() if PLUGIN[i] == "swe" and i not in SWE_SAMPLE} | textarena_variants()


def run_of(domain_id: str) -> tuple[str, bool]:
    return PLUGIN[domain_id], domain_id in SLOW


# One worker checks a plugin's domains (swe's too, so the real project is prepared once), and the
# first of each run (fast or slow) fingerprints the run's domains of its plugin in one fresh
# interpreter, which every other worker would otherwise make again.
BATCH = {run: [i for i in REG.ids() if run_of(i) == run] for run in map(run_of, REG.ids())}
IDS = [pytest.param(i, marks=[pytest.mark.xdist_group(
    "swe" if PLUGIN[i] == "swe" else f"contract-{PLUGIN[i]}"),
    *([pytest.mark.slow] if i in SLOW else [])]) for i in REG.ids()]


def test_discovery_reports_no_load_errors():
    assert [str(e) for e in REG.errors] == []


@pytest.fixture(scope="module")
def judge():
    from rlhub.testing.judge_server import judge_env

    with judge_env() if not os.environ.get("RLHUB_JUDGE_URL") else contextlib.nullcontext():
        yield


@pytest.mark.parametrize("domain_id", IDS)
def test_every_installed_domain_meets_the_contract(domain_id, request):
    if "judge" in REG.manifest(domain_id).tags:
        request.getfixturevalue("judge")
    assert_domain_ok(domain_id, n=3, batch=BATCH[run_of(domain_id)])
