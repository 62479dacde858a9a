"""Shared fixtures for the rlhub-code tests."""

import pytest

import rlhub


@pytest.fixture(scope="session")
def domain():
    """Build a registered ``code/*`` domain by id."""
    return rlhub.registry().get
