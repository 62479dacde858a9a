"""``rlhub new plugin NAME``: write a plugin package that installs and passes ``rlhub check``.

The package follows the layout of PLUGINS.md (STYLE.md section 7)::

    <dir>/<NAME>/pyproject.toml           distribution rlhub-<NAME>; its entry point
                                          <NAME> = "rlhub_<NAME>.plugin"
    <dir>/<NAME>/rlhub_<NAME>/__init__.py
    <dir>/<NAME>/rlhub_<NAME>/plugin.py   only the rlhub_domains() hookimpl
    <dir>/<NAME>/rlhub_<NAME>/domains.py  one working example domain, <NAME>/sum-v1
    <dir>/<NAME>/README.md                Overview, Task, Verifier, Config, Metrics, Quickstart
    <dir>/<NAME>/tests/test_contract.py   the contract kit over every domain of the plugin
    <dir>/<NAME>/tests/test_domains.py    focused tests of the example domain

The files are ``string.Template`` templates in ``rlhub/integrations/publish/templates/plugin`` (``$namespace``,
``$package``, ``$dist``), so what is generated can be read there as it is.
"""

from __future__ import annotations

import re
import string
from importlib import resources
from pathlib import Path

from rlhub.integrations.hub.errors import HubError

NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
# output path (with {package}) -> template path under templates/plugin
FILES = {
    "pyproject.toml": "pyproject.toml.tmpl",
    "README.md": "README.md.tmpl",
    "{package}/__init__.py": "package/__init__.py.tmpl",
    "{package}/plugin.py": "package/plugin.py.tmpl",
    "{package}/domains.py": "package/domains.py.tmpl",
    "tests/test_contract.py": "tests/test_contract.py.tmpl",
    "tests/test_domains.py": "tests/test_domains.py.tmpl",
}


def names(name: str) -> dict[str, str]:
    """The template variables for plugin ``name``: namespace, import package, distribution."""
    if not NAME_RE.match(name):
        raise HubError(
            f"plugin name {name!r}: expected lower-case letters, digits, '_' or '-', "
            "starting with a letter (at most 40), e.g. 'mymath'"
        )
    package = "rlhub_" + name.replace("-", "_")
    return {"namespace": name, "package": package, "dist": f"rlhub-{name}"}


def render(name: str) -> dict[str, str]:
    """Every generated file's relative path and text, without writing anything."""
    values = names(name)
    root = resources.files("rlhub.integrations.hub").joinpath("templates", "plugin")
    out = {}
    for target, template in FILES.items():
        text = root.joinpath(*template.split("/")).read_text()
        out[target.format(**values)] = string.Template(text).substitute(values)
    return out


def new_plugin(name: str, parent: str | Path = ".") -> Path:
    """Write the package of plugin ``name`` into ``parent/name``; return that folder."""
    files = render(name)
    dest = Path(parent) / name
    if dest.exists() and any(dest.iterdir()):
        raise HubError(
            f"new plugin {name}: expected {dest} to be absent or empty, found files "
            "in it; pick another --dir or name"
        )
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return dest
