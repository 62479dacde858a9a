"""The public facade and the packaging stay consistent."""

from __future__ import annotations

import tomllib
from pathlib import Path

import rlhub

ROOT = Path(__file__).resolve().parents[1]


def test_all_is_sorted_and_every_name_resolves():
    assert rlhub.__all__ == sorted(rlhub.__all__)
    for name in rlhub.__all__:
        assert getattr(rlhub, name) is not None, name


def test_every_package_of_every_mapped_folder_is_listed_in_pyproject():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = set()
    for name, base in setuptools["package-dir"].items():
        for init in (ROOT / base).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / base)
            found.add(".".join([name, *rel.parts]))
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages"


def test_from_config_alone_uses_the_installed_plugins_and_samples():
    """A user's script passes nothing but the mixture (the README's example)."""
    sched = rlhub.Scheduler.from_config(ROOT / "examples" / "demo.yaml")
    batch = sched.sample(8)
    assert len(batch) == 8 and {t.domain for t in batch} <= set(sched.weights())
    assert all(spec["reward_range"] == [0.0, 1.0] for spec in sched.config["domains"].values())


def test_from_config_alone_expands_globs_against_the_installed_plugins():
    sched = rlhub.Scheduler.from_config({"strategy": "uniform", "domains": ["math/tiny-*"]})
    assert "math/tiny-count-v1" in sched.weights()
