"""A pulled environment never takes over a domain id or a namespace another source provides."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hub_helpers import installed, write_data_domain

from rlhub import Registry
from rlhub.integrations.hub.bundle import BuildOptions, Bundle, build_bundle
from rlhub.integrations.hub.errors import HubError
from rlhub.integrations.hub.lock import dumps, seal
from rlhub.integrations.hub.pull import pull
from rlhub.integrations.hub.remote import FsspecRemote

pytestmark = pytest.mark.usefixtures("project_folder")

SMALL = BuildOptions(test_size=3, train_size=2)
WRONG = [{"qid": f"q{i}", "question": f"What is {i} + {i}?", "ans": "3"} for i in range(20)]


def home() -> Path:
    return Path(os.environ["RLHUB_HOME"])


def publish(tmp_path: Path, folder: str, *, name: str | None = None, **spec: object) -> str:
    """Push the data-only environment of ``spec`` to ``tmp_path/folder``, named ``name``."""
    domain_file = write_data_domain(tmp_path / f"{folder}-src", **spec)
    registry = Registry(domain_files=[domain_file], autoload=False)
    bundle = build_bundle(registry.ids()[0].split("/")[0], tmp_path / f"{folder}-bundle",
                          registry=registry, options=SMALL)
    if name is not None:  # the publisher picks any name it likes, and seals the lock again
        lock = seal({**bundle.lock, "name": name})
        (bundle.root / "rlhub.lock").write_text(dumps(lock))
        bundle = Bundle(bundle.root, lock)
    url = (tmp_path / folder).as_uri()
    FsspecRemote(url).push(bundle, None)
    return url


def test_a_bundle_whose_name_sorts_first_cannot_take_over_another_environments_domain(
    tmp_path, cli
):
    first = pull(publish(tmp_path, "honest"))
    source = Path(first.path) / "domains" / "double.yaml"
    hostile = publish(tmp_path, "hostile", name="aaa", rows=WRONG)
    result = cli("pull", hostile)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: pull {hostile}: refused: domain mydata/double-v1 of bundle aaa from {hostile} "
        f"is already provided by domain file {source}; remove that source or ask the publisher "
        "to rename the domain. Nothing was installed.\n"
    )
    assert "registered" not in result.stderr
    assert installed(home()) == [Path(first.path)]
    assert Registry(autoload=False).manifest("mydata/double-v1").source == str(source)


def test_two_pulled_environments_declaring_one_id_both_lose_it_and_the_error_names_both(tmp_path):
    pulled = Path(pull(publish(tmp_path, "honest")).path)
    copy = home() / "envs" / "aaa" / "v1"
    shutil.copytree(pulled, copy)  # as an older rlhub would have let it in
    registry = Registry(autoload=False)
    assert "mydata/double-v1" not in registry.ids()
    (error,) = registry.errors
    assert error.cause == (
        "domain 'mydata/double-v1' is declared by two pulled environments, domain file "
        f"{copy / 'domains' / 'double.yaml'} and domain file {pulled / 'domains' / 'double.yaml'}"
        ", so neither provides it; remove one of them from $RLHUB_HOME/envs"
    )


def test_a_pulled_environment_may_not_add_domains_to_an_installed_plugins_namespace(tmp_path):
    url = publish(tmp_path, "squatter", id="structured/json-object-extra-v2")
    registry = Registry()
    plugin = registry.plugins["structured"]
    with pytest.raises(HubError) as err:
        pull(url, registry=registry)
    assert str(err.value) == (
        f"pull {url}: refused: domain structured/json-object-extra-v2 of bundle structured from "
        f"{url}: its namespace 'structured' belongs to the plugin structured from "
        f"{plugin.distribution}. Nothing was installed."
    )
    assert installed(home()) == []


def test_a_namespace_squatter_copied_into_envs_by_hand_is_refused_at_discovery(tmp_path):
    domain_file = write_data_domain(tmp_path / "src", dataset="rows.jsonl",
                                    id="structured/json-object-extra-v2")
    target = home() / "envs" / "structured" / "v1"
    shutil.copytree(domain_file.parent, target / "domains")
    registry = Registry()
    assert "structured/json-object-extra-v2" not in registry.match(["structured/*"])
    assert any(e.cause.endswith("its namespace 'structured' belongs to the plugin structured from "
                                f"{registry.plugins['structured'].distribution}; a pulled "
                                "environment may not add domains to it") for e in registry.errors)


def test_an_environment_of_the_same_name_from_another_remote_is_not_replaced(tmp_path):
    first = Path(pull(publish(tmp_path, "honest")).path)
    other = publish(tmp_path, "other", rows=WRONG)
    with pytest.raises(HubError) as err:
        pull(other)
    installed_from = json.loads((first / ".rlhub-pull.json").read_text())["source"]
    assert str(err.value) == (
        f"pull {other}: refused: an environment named 'mydata' is already installed in {first} "
        f"from {installed_from}; remove it first (`rm -r {first.parent}`) to install the one from "
        f"{other}. Nothing was installed."
    )
    assert installed(home()) == [first]
