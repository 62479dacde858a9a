"""Human output of the CLI written to a pipe, and ``rlhub --version``, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

LONG_SUMMARY = ("A data-only domain whose summary runs far past eighty columns, so that a table "
                "cut to fit a terminal that is not there would lose its tail: END-OF-SUMMARY")


def rlhub(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "RLHUB_PLUGINS": "toyplug", "RLHUB_DISABLE_AUTOLOAD": "1", **env}
    full.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "rlhub", *args], capture_output=True, text=True,
                          env=full, timeout=120, stdin=subprocess.DEVNULL)


def test_a_table_piped_to_a_file_keeps_every_column_and_every_cell_whole(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text('{"q": "Capital of France?", "a": "Paris"}\n')
    spec = tmp_path / "caps.yaml"
    spec.write_text(f"id: caps/capital-of-a-country-with-a-long-name-v1\ndataset: rows.jsonl\n"
                    f"verifier: exact\nsummary: '{LONG_SUMMARY}'\n"
                    "tags: [geography, capitals, long-tag-list]\nfields: {prompt: q, answer: a}\n")
    out = rlhub("--domains-file", str(spec), "list")
    assert out.returncode == 0, out.stderr
    header = next(line for line in out.stdout.splitlines() if " id " in line)
    assert all(f" {col} " in header for col in ("id", "plugin", "version", "tags", "summary"))
    row = next(line for line in out.stdout.splitlines() if "caps/capital" in line)
    assert "caps/capital-of-a-country-with-a-long-name-v1" in row
    assert "geography,capitals,long-tag-list" in row and LONG_SUMMARY in row
    assert "…" not in out.stdout


def test_a_terminal_width_in_the_environment_does_not_cut_a_piped_table() -> None:
    out = rlhub("list", COLUMNS="40")
    rows = [line for line in out.stdout.splitlines() if "toy/" in line]
    assert rows and all("toy domain" in line for line in rows) and "…" not in out.stdout


def _entry_points() -> dict[str, tuple[str, str]]:
    return {ep.name: (ep.dist.name, ep.dist.version)
            for ep in metadata.entry_points(group="rlhub.plugins")}


def test_version_prints_rlhub_and_every_installed_plugins_distribution_and_version() -> None:
    import rlhub as package

    out = rlhub("--version")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"rlhub {package.__version__} (Python ")
    for name, (dist, version) in _entry_points().items():
        assert any(line.split() == [name, dist, version] for line in lines), (name, lines)
    as_json = json.loads(rlhub("--version", "--json").stdout)
    assert as_json["rlhub"] == package.__version__
    assert {p["name"]: (p["distribution"], p["version"]) for p in as_json["plugins"]} \
        == _entry_points()


def _broken_distribution(site: Path) -> None:
    """An installed distribution whose plugin module raises when imported, and leaves a mark."""
    info = site / "rlhub_brokenver-9.8.7.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rlhub-brokenver\n"
                                   "Version: 9.8.7\n")
    (info / "entry_points.txt").write_text("[rlhub.plugins]\nbrokenver = brokenver_plugin\n")
    (site / "brokenver_plugin.py").write_text(
        f"open({str(site / 'imported')!r}, 'w').close()\nraise RuntimeError('imported')\n")


def test_version_lists_a_plugin_without_importing_it_or_building_a_domain(tmp_path: Path) -> None:
    _broken_distribution(tmp_path)
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "RLHUB_DISABLE_AUTOLOAD": "0"}
    out = rlhub("--version", "--json", **env)
    assert out.returncode == 0, out.stderr
    mine = [p for p in json.loads(out.stdout)["plugins"] if p["name"] == "brokenver"]
    assert mine == [{"name": "brokenver", "distribution": "rlhub-brokenver", "version": "9.8.7",
                     "module": "brokenver_plugin"}]
    assert not (tmp_path / "imported").exists() and out.stderr == ""
    loaded = subprocess.run([sys.executable, "-c", "import brokenver_plugin"], env={
        **os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 1 and (tmp_path / "imported").exists()  # the mark works


def test_the_root_command_without_a_command_or_version_is_an_error() -> None:
    out = rlhub("--json")
    assert out.returncode == 2 and "expected a command (or --version), found none" in out.stderr
    assert out.stdout == ""
