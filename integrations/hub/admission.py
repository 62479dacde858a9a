"""What a verified bundle must satisfy before ``rlhub pull`` installs it.

* **The user's policy**, unless pulled with trust (:func:`check_policy`): every data-only domain
  file declares only what :mod:`rlhub.trust` lets an untrusted environment declare.
* **No shadowing** (:func:`admit`): no domain id another source provides (an installed plugin, a
  file the user named, another pulled environment), no domain in an installed plugin's
  namespace, and no environment name already installed from another remote. The ids are those
  the bundle's files declare (:func:`rlhub.integrations.hub.checks.check_identity` made sure the lock
  says the same). Each refusal names both sources.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.integrations.hub.bundle import Bundle
from rlhub.integrations.hub.errors import HubError, PolicyRefused
from rlhub.integrations.hub.remote import Ref, remote_key
from rlhub.installs import installs

if TYPE_CHECKING:
    from rlhub.plugins import Registry
    from rlhub.userconfig import UserConfig


def admit(bundle: Bundle, files: dict[str, dict[str, Any]], ref: Ref, registry: Registry,
          home: Path) -> None:
    """Refuse, before installing, a bundle that takes over another source's domains or name.

    :param files: The bundle's parsed domain files (their ids are the bundle's data-only ids).
    :param registry: What is installed now.
    :param home: ``$RLHUB_HOME``, whose ``envs/`` holds the pulled environments.
    """
    problems = _conflicts(bundle, files, ref, registry, home)
    if problems:
        raise HubError(f"pull {ref}: refused: " + "; ".join(problems) + ". Nothing was installed.")


def check_policy(bundle: Bundle, files: dict[str, dict[str, Any]], config: UserConfig) -> None:
    """Every domain file must stay within what the user's policy lets an untrusted one declare."""
    from rlhub.datadomain import refuse_untrusted
    from rlhub.errors import ManifestError
    from rlhub.trust import TrustPolicy, UntrustedEnv

    env = UntrustedEnv(bundle.name, TrustPolicy.from_config(config))
    for rel, raw in files.items():
        try:
            refuse_untrusted(raw, env, f"bundle file {rel}")
        except ManifestError as exc:
            raise PolicyRefused(f"{exc} Nothing was installed.") from None


def _conflicts(bundle: Bundle, files: dict[str, dict[str, Any]], ref: Ref, registry: Registry,
               home: Path) -> list[str]:
    """One line per domain of the bundle that another installed source provides or owns."""
    mine = (home / "envs" / bundle.name).resolve()
    dists = {w["distribution"] for w in bundle.lock.get("wheels", [])}
    data_only = {raw["id"] for raw in files.values()}
    source = str(ref)
    problems = [p for p in [_other_install(mine, ref)] if p]
    for domain_id in sorted(set(bundle.lock["domains"]) | data_only):
        namespace = domain_id.split("/", 1)[0]
        plugin = registry.plugins.get(namespace)
        ours = domain_id in data_only
        other = registry.manifests.get(domain_id)
        if plugin is not None and (ours or plugin.distribution not in dists):
            problems.append(f"domain {domain_id} of bundle {bundle.name} from {source}: its "
                            f"namespace {namespace!r} belongs to the plugin {plugin.name} from "
                            f"{plugin.distribution}")
        elif other is not None and not _is_within(other.source, mine) and (
            ours or other.distribution not in dists
        ):
            problems.append(f"domain {domain_id} of bundle {bundle.name} from {source} is "
                            f"already provided by {other.distribution}; remove that source or "
                            "ask the publisher to rename the domain")
    return problems


def _other_install(env_dir: Path, ref: Ref) -> str | None:
    """A problem when ``env_dir`` holds an environment of the same name from another remote."""
    if not env_dir.is_dir():
        return None
    for install in installs(env_dir):
        installed_from = install.record.get("source")
        if not isinstance(installed_from, str) or remote_key(installed_from) != remote_key(ref.url):
            return (f"an environment named {env_dir.name!r} is already installed in "
                    f"{install.folder} from {installed_from}; remove it first (`rm -r "
                    f"{env_dir}`) to install the one from {ref}")
    return None


def _is_within(path: str, folder: Path) -> bool:
    return bool(path) and Path(path).resolve().is_relative_to(folder)
