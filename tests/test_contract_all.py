"""The contract kit over every installed domain (first-party plugins and any others)."""

from __future__ import annotations

import pytest

import rlhub
from rlhub.testing import assert_domain_ok

IDS = rlhub.registry().ids()


def test_discovery_reports_no_load_errors():
    assert [str(e) for e in rlhub.registry().errors] == []


@pytest.mark.parametrize("domain_id", IDS)
def test_every_installed_domain_meets_the_contract(domain_id):
    assert_domain_ok(domain_id, n=3)
