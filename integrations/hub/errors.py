"""Errors of the hub boundary: publishing, pulling, bundles and locks."""

from __future__ import annotations

from rlhub.errors import RlhubError


class HubError(RlhubError):
    """A bundle could not be built, pushed, pulled or installed, or a lock does not match."""


class IntegrityError(HubError):
    """A downloaded file does not hash to what the bundle's lock says; nothing is installed."""


class RevisionNotFound(HubError):
    """The requested revision (tag, branch or bundle hash) does not exist at the remote."""


class PolicyRefused(HubError):
    """The user's policy refuses the bundle (an untrusted environment declares what
    :mod:`rlhub.trust` does not allow, or a domain pays a probe); nothing is installed."""
