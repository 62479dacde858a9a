"""One error model for every boundary of rlhub.

Every error rlhub raises on purpose derives from :class:`RlhubError`; each boundary (plugins,
manifests, domains, verifiers, sandboxes, schedulers, trainers, stores) has its own subclass.
Messages follow one shape: what was expected, what was found, and what to do next.

:func:`boundary` wraps each call into plugin-provided code so that a foreign exception arrives as
the boundary's own error type, with the original kept as ``__cause__``.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterable, Iterator


class RlhubError(Exception):
    """Base of every error raised by rlhub on purpose.

    ``failure`` is the failure class (see :mod:`rlhub.failures`) a score gets when this error ends
    a verification: a subclass for an infrastructure boundary says so.
    """

    failure = "verifier"


class PluginError(RlhubError):
    """A plugin could not be loaded or misbehaved at a hook call."""


class ManifestError(RlhubError):
    """A domain manifest or data-only domain file does not match its schema."""


class DomainNotFound(RlhubError, KeyError):
    """A domain id is not registered."""

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return str(self.args[0]) if self.args else ""


class VerifierError(RlhubError):
    """A verifier is unknown, misconfigured, or crashed."""


class SandboxError(RlhubError):
    """A sandbox backend failed to start or to run a job."""

    failure = "sandbox"


class SchedulerError(RlhubError):
    """A mixture config or scheduler state is invalid."""


class StoreError(RlhubError):
    """The trajectory store could not read or write."""


class PolicyError(RlhubError):
    """A policy spec is unknown or its backend failed."""

    failure = "policy"


class LabelError(RlhubError):
    """A label (a task sent to be verified) is malformed, forged, or for a domain not served."""

    failure = "label"


class TrainerError(RlhubError):
    """A trainer is misconfigured or failed."""


@contextlib.contextmanager
def boundary(kind: type[RlhubError], what: str) -> Iterator[None]:
    """Re-raise any non-rlhub exception from the block as ``kind``, naming ``what`` was called."""
    try:
        yield
    except RlhubError:
        raise
    except Exception as exc:  # noqa: BLE001 - this is the one place foreign errors are translated
        raise kind(f"{what} raised {type(exc).__name__}: {exc}") from exc


def did_you_mean(name: str, known: Iterable[str], *, what: str, listing: str) -> str:
    """Format the "unknown X" message with near matches and the command that lists what exists."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    msg = f"unknown {what} {name!r}"
    msg += ("; did you mean " + " or ".join(repr(c) for c in close) + "?") if close else "."
    return msg + f" Run `{listing}` to see the {len(known)} available."
