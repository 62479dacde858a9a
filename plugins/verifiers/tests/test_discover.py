"""Finding installed verifiers environments: listing describes nothing, stamps are cheap and right."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata


from rlhub_verifiers import discover

TEST_ENVS = ["arith", "duel", "fragile", "guess", "stall", "tools"]


def test_a_fresh_home_lists_every_environment_deferred_and_describes_none(vf_site, tmp_path):
    home = tmp_path / "home"
    out = subprocess.run([sys.executable, "-m", "rlhub", "list", "--plugin", "vf", "--json"],
                         capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "RLHUB_HOME": str(home)})
    rows = {r["id"]: r for r in json.loads(out.stdout) if r["id"].startswith("vf/rlhub-test-")}
    assert sorted(rows) == [f"vf/rlhub-test-{name}-v1" for name in TEST_ENVS]
    assert all(r["deferred"] and r["tags"] == ["verifiers", "bridged"] for r in rows.values())
    assert rows["vf/rlhub-test-arith-v1"]["summary"] == "test environment rlhub-test-arith"
    cached = json.loads((home / "cache" / "vf-envs.json").read_text())
    assert cached.get("described", {}) == {}  # no child interpreter was started


def install_with_record(site):
    """A verifiers environment of its own name (no other test imports it), with a RECORD."""
    site.mkdir()
    module = site / "rlhub_stamp_probe.py"
    module.write_text("TASKS = []\n")
    info = site / "rlhub_stamp_probe-1.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: rlhub-stamp-probe\n"
                                   "Version: 1.0.0\nRequires-Dist: verifiers>=0.4\n")
    (info / "RECORD").write_text("rlhub_stamp_probe.py,sha256=AAAA,10\n")
    return info, module


def test_a_regular_install_is_stamped_by_its_record_without_reading_its_files(tmp_path,
                                                                              monkeypatch):
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(str(site))
    info, module = install_with_record(site)
    source = discover._source(metadata.Distribution.at(info))
    before = discover.stamp(source)
    os.utime(module, ns=(1, 1))  # pip never changes an installed file in place
    assert discover.stamp(source) == before
    (info / "RECORD").write_text("rlhub_stamp_probe.py,sha256=BBBB,10\n")  # a reinstall
    assert discover.stamp(discover._source(metadata.Distribution.at(info))) != before


def test_an_editable_install_is_stamped_by_its_module_files(tmp_path, monkeypatch):
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(str(site))
    info, module = install_with_record(site)
    (info / "direct_url.json").write_text(json.dumps(
        {"url": f"file://{site}", "dir_info": {"editable": True}}))
    source = discover._source(metadata.Distribution.at(info))
    assert source.record == ""
    before = discover.stamp(source)
    module.write_text("TASKS = [1]\n")  # an edit of its code
    assert discover.stamp(source) != before
