"""The GEM catalog agrees with the installed GEM, and its claims about duplicates hold."""

from __future__ import annotations

import logging

import pytest

from rlhub_gem import catalog


def test_rebuilding_the_table_gives_the_shipped_table():
    assert catalog.differences(catalog.load(), catalog.build()) == []


@pytest.mark.parametrize("gem_id", sorted(catalog.SAME_AS))
def test_a_gem_level_called_a_duplicate_has_the_textarena_levels_game_and_board(gem_id):
    from textarena.envs.registration import ENV_REGISTRY as TA

    from rlhub_gem.domain import _gem

    ta_id, params = catalog.SAME_AS[gem_id]
    gem_kwargs = _gem().envs.registration.ENV_REGISTRY[gem_id].kwargs
    ta_kwargs = TA[ta_id].kwargs
    assert {p: gem_kwargs[p] for p in params} == {p: ta_kwargs.get(q, _default(ta_id, q))
                                                 for p, q in params.items()}
    assert gem_id.split(":")[1].split("-v0")[0].lower().replace("game", "") in ta_id.lower()


def _default(ta_id: str, name: str) -> object:
    import inspect

    from textarena.envs.registration import ENV_REGISTRY as TA
    from rlhub.plugins import load_object

    cls = load_object(TA[ta_id].entry_point)
    return inspect.signature(cls).parameters[name].default


def test_every_domain_a_left_out_reason_points_to_is_registered():
    import re

    import rlhub

    reg = rlhub.registry()
    ids = set(reg.ids()) | {row["id"] for row in reg.left_out}
    named = {m for row in catalog.left_out()
             for m in re.findall(r"\b(?:rg|textarena)/[\w.-]+-v\d+", row["reason"])}
    assert named and sorted(named - ids) == []


def test_without_gem_llm_the_domains_are_listed_as_left_out_with_the_install_command():
    assert catalog.manifests(present=False) == [] and catalog.manifests(present=True)
    left = {row["id"]: row["reason"] for row in catalog.left_out(present=False)}
    assert left["gem/sudoku-easy-v1"] == ("gem-llm is not installed; install it with "
                                          "`pip install --no-deps gem-llm==0.1.0`")


def test_importing_gem_leaves_the_hosts_logging_configuration_alone():
    import subprocess
    import sys

    code = ("import logging; from rlhub_gem.domain import _gem; _gem(); "
            "print(len(logging.getLogger().handlers), logging.getLogger().level)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", str(logging.WARNING)]
