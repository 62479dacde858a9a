"""The contract kit's integrity probes, run by ``rlhub pull`` on the domains it is about to install.

A pulled domain is a stranger's verifier configuration: before it is enabled, each data-only
domain of the bundle runs the kit's probe classes (:func:`rlhub.testing.run_probes`: degenerate,
hedged, oversized answers and forged labels) on a few of its tasks (``pull.probe_tasks``, default
2), all domains within ``pull.probe_budget_s`` (default 120 s). A domain *pays* a probe class when
an answer that ignores the task earned more than the range minimum. What happens then is the
user's policy, ``pull.hackable``: ``refuse`` (the default) refuses the pull, ``mark`` installs it
marked hackable by those classes (``rlhub list`` shows the mark).

Domains whose verifier asks a judge or a reward model are not probed at pull (that would spend
the user's endpoints on a stranger's behalf); plugin domains are not either (their code is not
installed yet). Each is reported as skipped, with the reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from rlhub.userconfig import UserConfig

ENDPOINT_VERIFIERS = frozenset({"judge", "reward-model"})


@dataclass(frozen=True)
class ProbePolicy:
    """How many tasks each domain's probes use, the time for all of them, and what a domain
    that pays a probe gets (``refuse`` or ``mark``)."""

    tasks: int = 2
    budget_s: float = 120.0
    hackable: str = "refuse"
    where: str = "the pull: section of your rlhub config"

    @classmethod
    def from_config(cls, config: UserConfig) -> ProbePolicy:
        section = config.section("pull")
        return cls(int(section.get("probe_tasks", cls.tasks)),
                   float(section.get("probe_budget_s", cls.budget_s)),
                   str(section.get("hackable", cls.hackable)), f"pull: in {config.path}")


def probe_domains(files: list[Path], expected: set[str], policy: ProbePolicy
                  ) -> dict[str, dict[str, Any]]:
    """``{domain id: result}`` for the domains of ``files`` (which declare ``expected``):
    ``probes`` (each class's report), ``paid`` (the classes it pays), ``skipped`` (why it was
    not probed) or ``error`` (it could not be loaded or sampled)."""
    from rlhub.gradingdata import parts
    from rlhub.plugins import Registry

    registry = Registry(domain_files=files, autoload=False, installed=False)
    deadline = time.monotonic() + policy.budget_s
    results: dict[str, dict[str, Any]] = {
        domain_id: {"error": f"could not be loaded to probe it: {_load_errors(registry)}",
                    "paid": [], "probes": {}} for domain_id in expected - set(registry.ids())}
    try:
        for domain_id in registry.ids():
            names = {name for name, _, _ in parts(registry.manifest(domain_id).data["verifier"])}
            if policy.tasks <= 0:
                results[domain_id] = {"skipped": "pull.probe_tasks is 0"}
            elif names & ENDPOINT_VERIFIERS:
                results[domain_id] = {"skipped": "its verifier asks a judge or reward model, "
                                                 "which a pull does not spend"}
            elif time.monotonic() > deadline:
                results[domain_id] = {"skipped": f"the probe budget of {policy.budget_s:g} s "
                                                 f"was spent ({policy.where})"}
            else:
                results[domain_id] = _probe(registry.get(domain_id), policy.tasks)
    finally:
        registry.services.close()
    return results


def _load_errors(registry: Registry) -> str:
    return "; ".join(str(e) for e in registry.errors) or "no error was reported"


def _probe(domain: Any, n: int) -> dict[str, Any]:
    from rlhub.testing import run_probes, sample_tasks

    lo, _ = domain.manifest.reward_range
    try:
        reports = run_probes(domain, sample_tasks(domain, n))
    except Exception as exc:  # noqa: BLE001 - a domain that cannot be probed is reported
        return {"error": f"probing it raised {type(exc).__name__}: {exc}", "paid": [],
                "probes": {}}
    paid = sorted(name for name, r in reports.items()
                  if r.max_reward is not None and r.max_reward > lo)
    return {"paid": paid, "probes": {name: r.to_dict() for name, r in reports.items()}}


def paid_problem(domain_id: str, result: dict[str, Any]) -> str:
    """One line naming the classes ``domain_id`` pays and the first problem found."""
    first = next((p for name in result["paid"] for p in result["probes"][name]["problems"]), "")
    return f"domain {domain_id} pays the probe classes {result['paid']} ({first})"
