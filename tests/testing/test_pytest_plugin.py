"""The bundled pytest plugin's RLHUB_REQUIRE switch: in CI a missing component is a failure, on a
developer machine a skip that one summary line reports."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest

def test_needs_docker():
    pytest.skip("no Docker engine reachable (connection refused); run .ci/docker-setup.sh")

def test_needs_chromium():
    pytest.skip("headless Chromium is not installed (apt-get install -y chromium)")

def test_runs():
    assert True
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("RLHUB_REQUIRE", raising=False)
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def test_without_the_switch_skips_stay_skips_and_one_line_says_so(suite):
    result = suite.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=2)
    lines = [line for line in result.outlines if line.startswith("rlhub: ")]
    assert lines == ["rlhub: 2 skipped for what this machine lacks (1 x no Docker engine reachable "
                     "(connection refused), 1 x headless Chromium is not installed (apt-get "
                     "install -y chromium)); RLHUB_REQUIRE=all (as .ci/run sets) makes such skips "
                     "fail"]


def test_require_all_turns_every_skip_into_a_failure_naming_the_reason(suite, monkeypatch):
    monkeypatch.setenv("RLHUB_REQUIRE", "all")
    result = suite.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*RLHUB_REQUIRE=all requires what this test would have skipped "
                                 "for: no Docker engine reachable*"])
    assert result.ret == 1


def test_require_can_name_the_components_it_insists_on(suite, monkeypatch):
    monkeypatch.setenv("RLHUB_REQUIRE", "docker")
    result = suite.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1, skipped=1)


def test_a_module_skipped_at_import_fails_its_collection_under_require_all(pytester, monkeypatch):
    monkeypatch.setenv("RLHUB_REQUIRE", "all")
    pytester.makepyfile(test_mod="""
        import pytest
        pytest.importorskip("no_such_module_rlhub", reason="moto is not installed")

        def test_never():
            pass
    """)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*requires what this test would have skipped for: moto "
                                 "is not installed*"])
