"""Plugin discovery: entry points, RLHUB_PLUGINS, domain files, autoload opt-out, blocking,
and failures reported by name while every other plugin keeps working."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import flawedplug
import pytest

from rlhub import DomainNotFound, ManifestError, Registry
from rlhub.testing import check_domain


def make_dist(root, name, entry_points, modules):
    """A real installed distribution on ``root``: a dist-info folder plus its modules."""
    info = root / f"{name.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2.3\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[rlhub.plugins]\n{lines}\n")
    for mod, src in modules.items():
        (root / f"{mod}.py").write_text(textwrap.dedent(src))


GOOD = """
    from rlhub import hookimpl
    import toyplug

    @hookimpl
    def rlhub_domains():
        return [{**toyplug.manifest("a"), "id": "good/a-v1"}]
"""


@pytest.fixture
def site(tmp_path, monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    make_dist(root, "rlhub-good", {"good": "goodplug"}, {"goodplug": GOOD})
    make_dist(root, "rlhub-bad", {"bad": "badplug"}, {"badplug": "raise ImportError('no numpy')"})
    make_dist(root, "rlhub-raises", {"raises": "raisesplug"}, {"raisesplug": """
        from rlhub import hookimpl

        @hookimpl
        def rlhub_domains():
            raise RuntimeError("manifest table missing")
    """})
    make_dist(root, "rlhub-malformed", {"malformed": "malformedplug"}, {"malformedplug": """
        from rlhub import hookimpl
        import toyplug

        @hookimpl
        def rlhub_domains():
            ok = {**toyplug.manifest("ok"), "id": "malformed/ok-v1"}
            bad = {**toyplug.manifest("bad"), "id": "malformed/bad-v1", "license": 3}
            return [ok, bad]
    """})
    return root


def test_entry_point_plugins_are_found_with_their_distribution(site):
    reg = Registry()
    assert "good/a-v1" in reg.ids()
    m = reg.manifest("good/a-v1")
    assert (m.plugin, m.distribution) == ("good", "rlhub-good")
    assert reg.plugins["good"].version == "1.2.3"


def test_a_plugin_that_fails_to_import_is_reported_and_the_rest_work(site, capsys):
    reg = Registry()
    errors = {e.name: str(e) for e in reg.errors}
    assert errors["bad"] == 'error loading plugin "bad" from rlhub-bad: ImportError: no numpy'
    assert 'error loading plugin "bad" from rlhub-bad' in capsys.readouterr().err
    assert "good/a-v1" in reg.ids()


def test_a_plugin_whose_hook_raises_is_reported_by_name(site):
    errors = {e.name: str(e) for e in Registry().errors}
    assert errors["raises"] == ('error loading plugin "raises" from rlhub-raises: '
                                "RuntimeError: manifest table missing")


def test_a_malformed_manifest_is_listed_but_refused_on_use_naming_plugin_domain_and_field(site):
    reg = Registry()
    assert {"malformed/ok-v1", "malformed/bad-v1"} <= set(reg.ids())
    message = ("plugin 'malformed', domain 'malformed/bad-v1': field license: "
               "3 is not of type 'string'")
    with pytest.raises(ManifestError) as err:
        reg.get("malformed/bad-v1")
    assert str(err.value) == message
    with pytest.raises(ManifestError, match="field license"):
        reg.manifest("malformed/bad-v1")  # refused again, not half-built
    assert reg.get("malformed/ok-v1").id == "malformed/ok-v1"
    assert check_domain("malformed/bad-v1", registry=reg) == [
        f"malformed/bad-v1: could not build the domain: {message}"]


def test_a_declaration_that_cannot_be_listed_is_reported_at_discovery(site):
    make_dist(site, "rlhub-unlisted", {"unlisted": "unlistedplug"}, {"unlistedplug": """
        from rlhub import hookimpl
        import toyplug

        @hookimpl
        def rlhub_domains():
            return [{**toyplug.manifest("a"), "id": "unlisted/a-v1", "tags": "toy"},
                    {**toyplug.manifest("b"), "id": "toy/b-v1"}, ["not", "a", "mapping"],
                    {**toyplug.manifest("c"), "id": "unlisted/c-v1"}]
    """})
    reg = Registry()
    assert [i for i in reg.ids() if i.startswith(("unlisted/", "toy/b"))] == ["unlisted/c-v1"]
    assert [e.cause for e in reg.errors if e.name == "unlisted"] == [
        "plugin 'unlisted', domain 'unlisted/a-v1': field tags: expected a list of strings, "
        "found 'toy'",
        "plugin 'unlisted', domain 'toy/b-v1': field id: expected the namespace 'unlisted/' of "
        "plugin 'unlisted'",
        "plugin 'unlisted', domain '<not a mapping>': field (top level): expected a mapping, "
        "found list"]


def test_a_deferred_domain_is_listed_without_being_described_and_described_once_on_use():
    flawedplug.DESCRIBED.clear()
    reg = Registry(plugins=[flawedplug], autoload=False)
    rows = {row["id"]: row for row in reg.rows()}
    assert rows["flawed/fine-v1"] == {
        "id": "flawed/fine-v1", "plugin": "flawed", "distribution": "(registered in code)",
        "version": "1.0.0", "tags": ["deferred"], "summary": "deferred fine", "scoring": None,
        "hackable": [], "deferred": True}
    assert not rows["flawed/bad-v1"]["deferred"] and flawedplug.DESCRIBED == []
    assert reg.manifest("flawed/fine-v1").tags == ["described"]
    assert reg.get("flawed/fine-v1").id == "flawed/fine-v1"
    assert flawedplug.DESCRIBED == ["flawed/fine-v1"]


def test_a_deferred_domain_its_plugin_refuses_is_refused_on_use_with_the_reason():
    reg = Registry(plugins=[flawedplug], autoload=False)
    with pytest.raises(ManifestError) as err:
        reg.get("flawed/later-v1")
    assert str(err.value) == ("plugin 'flawed', domain 'flawed/later-v1': its env has 2 agent "
                              "seats")


def test_a_deferred_description_cannot_claim_another_domains_id():
    reg = Registry(plugins=[flawedplug], autoload=False)
    with pytest.raises(ManifestError) as err:
        reg.manifest("flawed/thief-v1")
    assert str(err.value) == ("plugin 'flawed', domain 'flawed/thief-v1': field id: expected "
                              "'flawed/thief-v1' as declared, found 'flawed/fine-v1'")


def test_describing_every_deferred_domain_leaves_out_those_that_cannot_be_offered():
    reg = Registry(plugins=[flawedplug], autoload=False)
    reg.describe_all()
    assert reg.ids() == ["flawed/bad-v1", "flawed/fine-v1"]  # bad is not deferred: used, refused
    assert [(r["id"], r["reason"]) for r in reg.left_out] == [
        ("flawed/later-v1", "its env has 2 agent seats"),
        ("flawed/thief-v1", "plugin 'flawed', domain 'flawed/thief-v1': field id: expected "
                            "'flawed/thief-v1' as declared, found 'flawed/fine-v1'")]
    assert not any(row["deferred"] for row in reg.rows())


def test_blocked_plugins_are_not_loaded(site, monkeypatch):
    assert "good/a-v1" not in Registry(block=["good"]).ids()
    monkeypatch.setenv("RLHUB_BLOCK_PLUGINS", "good,bad")
    reg = Registry()
    assert "good/a-v1" not in reg.ids() and not [e for e in reg.errors if e.name == "bad"]


def test_autoload_can_be_disabled_but_rlhub_plugins_still_load(site, monkeypatch):
    monkeypatch.setenv("RLHUB_DISABLE_AUTOLOAD", "1")
    monkeypatch.setenv("RLHUB_PLUGINS", "toyplug")
    reg = Registry()
    assert reg.ids() == ["toy/copy-v1", "toy/reverse-v1"]
    assert reg.plugins["toy"].distribution == "RLHUB_PLUGINS module toyplug"


def test_an_rlhub_plugins_module_that_fails_is_reported(monkeypatch):
    monkeypatch.setenv("RLHUB_PLUGINS", "no_such_module_xyz")
    err = [e for e in Registry(autoload=False).errors if e.name == "no_such_module_xyz"][0]
    assert str(err) == ('error loading plugin "no_such_module_xyz" from RLHUB_PLUGINS module '
                        "no_such_module_xyz: ModuleNotFoundError: No module named "
                        "'no_such_module_xyz'")


def test_unknown_ids_suggest_near_matches(monkeypatch):
    monkeypatch.setenv("RLHUB_PLUGINS", "toyplug")
    reg = Registry(autoload=False)
    with pytest.raises(DomainNotFound) as err:
        reg.manifest("toy/revrse-v1")
    assert str(err.value) == ("unknown domain 'toy/revrse-v1'; did you mean 'toy/reverse-v1'? "
                              "Run `rlhub list` to see the 2 available.")


def test_globs_expand_and_an_empty_glob_is_an_error(monkeypatch):
    monkeypatch.setenv("RLHUB_PLUGINS", "toyplug")
    reg = Registry(autoload=False)
    assert reg.match(["toy/*", "toy/copy-v1"]) == ["toy/copy-v1", "toy/reverse-v1"]
    with pytest.raises(DomainNotFound, match="no domain matches the glob 'nope/\\*'"):
        reg.match(["nope/*"])


def test_domains_are_built_once_and_lazily(monkeypatch):
    monkeypatch.setenv("RLHUB_PLUGINS", "toyplug")
    reg = Registry(autoload=False)
    assert reg._domains == {}
    assert reg.get("toy/reverse-v1") is reg.get("toy/reverse-v1")


HEAVY = ["torch", "sympy", "math_verify", "reasoning_gym", "docker", "transformers", "ray",
         "verifiers", "pydantic", "jsonschema"]  # the last: listing validates no manifest


def test_listing_every_domain_imports_no_heavy_library_and_validates_no_manifest(monkeypatch):
    monkeypatch.setenv("RLHUB_PLUGINS", "toyplug")
    code = textwrap.dedent(f"""
        import json, sys
        sys.argv = ["rlhub", "list", "--json"]
        from rlhub.cli import main
        try:
            main()
        except SystemExit:
            pass
        print(json.dumps(sorted(set({HEAVY!r}) & set(sys.modules))), file=sys.stderr)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rows = json.loads(out.stdout)
    assert {"toy/copy-v1", "toy/reverse-v1"} <= {r["id"] for r in rows}
    assert json.loads(out.stderr.strip().splitlines()[-1]) == []


class _LeavesOut:
    """A plugin declaring one domain and one environment it leaves out."""

    PLUGIN_NAME = "bridgy"

    @staticmethod
    @__import__("rlhub").hookimpl
    def rlhub_domains():
        return [{"id": "bridgy/kept-v1", "version": "1.0.0", "summary": "kept", "license": "MIT",
                 "tags": [], "reward": {"range": [0, 1], "components": {"ok": {"weight": 1}}},
                 "factory": "x:y", "requires": {"somegame": "==1.2"}}]

    @staticmethod
    @__import__("rlhub").hookimpl
    def rlhub_left_out():
        return [{"id": "bridgy/dropped-v1", "reason": "needs the network", "source": "Dropped"}]


class _LeftOutRaises:
    PLUGIN_NAME = "broken_bridge"

    @staticmethod
    @__import__("rlhub").hookimpl
    def rlhub_left_out():
        raise RuntimeError("catalog missing")


def test_left_out_environments_are_collected_with_their_plugin_and_reason():
    reg = Registry(plugins=[_LeavesOut()], autoload=False)
    assert reg.ids() == ["bridgy/kept-v1"]
    assert reg.left_out == [{"id": "bridgy/dropped-v1", "reason": "needs the network",
                             "source": "Dropped", "plugin": "bridgy",
                             "distribution": "(registered in code)"}]


def test_a_left_out_hook_that_raises_is_reported_and_the_rest_still_list():
    reg = Registry(plugins=[_LeavesOut(), _LeftOutRaises()], autoload=False)
    assert reg.ids() == ["bridgy/kept-v1"]
    assert [str(e) for e in reg.errors] == [
        'error loading plugin "broken_bridge" from (registered in code): RuntimeError: '
        'catalog missing']


def test_a_manifest_may_name_the_source_packages_it_requires_and_provenance_records_them():

    reg = Registry(plugins=[_LeavesOut()], autoload=False)
    record = reg.services.provenance("bridgy/kept-v1")
    assert record["source_versions"] == {"somegame": ""}  # not installed: recorded as missing


def test_derived_files_live_in_rlhub_cache_and_serve_a_fresh_home(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("RLHUB_CACHE", str(cache))
    listing = [sys.executable, "-c", "import rlhub; print(len(rlhub.registry().ids()))"]

    def list_in(home):
        monkeypatch.setenv("RLHUB_HOME", str(home))
        subprocess.run(listing, check=True, capture_output=True, timeout=300)
        return {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}

    first = list_in(tmp_path / "one")
    assert "vf-envs.json" in first  # the verifiers bridge's scan of installed environments
    assert not (tmp_path / "one" / "cache").exists()
    # a second, empty home finds every environment scanned
    assert list_in(tmp_path / "two") == first


def test_a_domain_file_cannot_declare_itself_deferred_to_run_code(tmp_path):
    # a pulled environment is data: only an installed plugin's declaration may name a describe
    (tmp_path / "rows.jsonl").write_text('{"q": "Capital of France?", "a": "Paris"}\n')
    spec = tmp_path / "caps.yaml"
    spec.write_text("id: caps/capital-v1\ndataset: rows.jsonl\nverifier: exact\n"
                    "fields: {prompt: q, answer: a}\ndescribe: 'os:abort'\n")
    reg = Registry(domain_files=[spec], autoload=False)
    assert reg.ids() == [] and len(reg.errors) == 1
    assert "describe" in reg.errors[0].cause and "caps.yaml" in reg.errors[0].distribution


def test_a_misspelt_hook_implementation_is_a_plugin_error_naming_hook_and_plugin(capsys):
    import misspeltplug
    import toyplug

    reg = Registry(plugins=[toyplug, misspeltplug], autoload=False, installed=False)
    [err] = [e for e in reg.errors if e.name == "misspelt"]
    assert "rlhub_domainz" in str(err) and "misspeltplug" in str(err)
    assert str(err).startswith('error loading plugin "misspelt" from (registered in code): ')
    assert 'error loading plugin "misspelt"' in capsys.readouterr().err
    assert "misspelt" not in reg.plugins and reg.pm.get_plugin("misspelt") is None
    assert "toy" in reg.plugins and any(i.startswith("toy/") for i in reg.ids())


def test_an_optional_hook_of_a_newer_rlhub_loads_without_error():
    from rlhub import hookimpl

    class Newer:
        """A third-party plugin implementing a hook this rlhub does not specify yet."""

        PLUGIN_NAME = "newer"

        @hookimpl(optionalhook=True)
        def rlhub_from_the_future(self):
            return []

    reg = Registry(plugins=[Newer()], autoload=False, installed=False)
    assert [e for e in reg.errors if e.name == "newer"] == [] and "newer" in reg.plugins
