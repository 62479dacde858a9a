"""The contract kit over every ``gem/`` domain (bad inputs, range, time, determinism).

The repository's own suite runs the kit over every installed domain (tests/test_contract_all.py)
and skips this file; it is here for the plugin's own CI.
"""

import pytest

import rlhub
from rlhub.testing import assert_domain_ok

IDS = [d for d in rlhub.registry().ids() if d.startswith("gem/")]


@pytest.mark.parametrize("domain_id", IDS)
def test_domain_meets_the_contract(domain_id):
    assert_domain_ok(domain_id, n=2)
