"""What a verified bundle must satisfy before ``rlhub pull`` installs it.

* **The user's policy**, unless pulled with trust: every data-only domain file declares only what
  :mod:`rlhub.trust` lets an untrusted environment declare.
* **No shadowing**: no domain id another source provides (an installed plugin, a file the user
  named, another pulled environment), no domain in an installed plugin's namespace, and no
  environment name already installed from another remote. Each refusal names both sources.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rlhub.datadomain import INSTALL_RECORD
from rlhub.hub.publish.bundle import Bundle
from rlhub.hub.publish.errors import HubError, PolicyError
from rlhub.hub.publish.remote import Ref

if TYPE_CHECKING:
    from rlhub.plugins import Registry


def admit(bundle: Bundle, ref: Ref, trusted: bool, registry: Registry, home: Path) -> None:
    """Refuse, before installing, a bundle that asks too much or takes over another's domains.

    :param registry: What is installed now.
    :param home: ``$RLHUB_HOME``, whose ``envs/`` holds the pulled environments.
    """
    if not trusted:
        _check_policy(bundle)
    problems = _conflicts(bundle, ref, registry, home)
    if problems:
        raise HubError(f"pull {ref}: refused: " + "; ".join(problems) + ". Nothing was installed.")


def _check_policy(bundle: Bundle) -> None:
    """Every domain file must stay within what the user's policy lets an untrusted one declare."""
    import yaml

    from rlhub.datadomain import refuse_untrusted
    from rlhub.errors import ManifestError
    from rlhub.trust import Policy, UntrustedEnv
    from rlhub.userconfig import load_user_config

    env = UntrustedEnv(bundle.name, Policy.from_config(load_user_config()))
    for rel in domain_files(bundle):
        raw = yaml.safe_load((bundle.root / rel).read_text())
        try:
            refuse_untrusted(raw if isinstance(raw, dict) else {}, env, f"bundle file {rel}")
        except ManifestError as exc:
            raise PolicyError(f"{exc} Nothing was installed.") from None


def _conflicts(bundle: Bundle, ref: Ref, registry: Registry, home: Path) -> list[str]:
    """One line per domain of the bundle that another installed source provides or owns."""
    mine = (home / "envs" / bundle.name).resolve()
    dists = {w["distribution"] for w in bundle.lock.get("wheels", [])}
    source = str(ref)
    problems = [p for p in [_other_install(mine, ref)] if p]
    for domain_id, entry in sorted(bundle.lock["domains"].items()):
        namespace = domain_id.split("/", 1)[0]
        plugin = registry.plugins.get(namespace)
        data_only = str(entry.get("code") or "").startswith("domains/")
        other = registry.manifests.get(domain_id)
        if plugin is not None and (data_only or plugin.distribution not in dists):
            problems.append(f"domain {domain_id} of bundle {bundle.name} from {source}: its "
                            f"namespace {namespace!r} belongs to the plugin {plugin.name} from "
                            f"{plugin.distribution}")
        elif other is not None and not _is_within(other.source, mine) and (
            data_only or other.distribution not in dists
        ):
            problems.append(f"domain {domain_id} of bundle {bundle.name} from {source} is "
                            f"already provided by {other.distribution}; remove that source or "
                            "ask the publisher to rename the domain")
    return problems


def _other_install(env_dir: Path, ref: Ref) -> str | None:
    """A problem when ``env_dir`` holds an environment of the same name from another remote."""
    for record in sorted(env_dir.glob(f"*/{INSTALL_RECORD}")):
        try:
            installed_from = json.loads(record.read_text()).get("source")
        except (OSError, ValueError, AttributeError):
            installed_from = None
        if installed_from != ref.url:
            return (f"an environment named {env_dir.name!r} is already installed in "
                    f"{record.parent} from {installed_from}; remove it first (`rm -r "
                    f"{record.parent}`) to install the one from {ref}")
    return None


def _is_within(path: str, folder: Path) -> bool:
    return bool(path) and Path(path).resolve().is_relative_to(folder)


def domain_files(bundle: Bundle) -> list[str]:
    """The bundle's domain files discovery reads (``domains/*.yaml``, not deeper)."""
    return [rel for rel in sorted(bundle.lock["files"])
            if rel.startswith("domains/") and rel.endswith((".yaml", ".yml"))
            and rel.count("/") == 1]
