"""The contract kit over every ``code/*`` domain (gold, bad inputs, determinism, hacking probes)."""

import pytest

import rlhub
from rlhub.testing import assert_domain_ok

IDS = [d for d in rlhub.registry().ids() if d.startswith("code/")]


def test_the_plugin_declares_at_least_25_domains_all_tagged_code():
    assert len(IDS) >= 25
    assert all("code" in rlhub.registry().manifest(d).tags for d in IDS)


@pytest.mark.parametrize("domain_id", IDS)
def test_domain_meets_the_contract(domain_id):
    assert_domain_ok(domain_id)
