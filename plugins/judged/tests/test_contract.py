import pytest
import rlhub
from rlhub.testing import assert_domain_ok

IDS = [d for d in rlhub.registry().ids() if d.startswith("judged/")]


@pytest.mark.parametrize("domain_id", IDS)
def test_domain_meets_the_contract(domain_id):
    assert_domain_ok(domain_id)
