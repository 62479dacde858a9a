"""Language runtimes of the ``local`` backend, made from the Debian packages their specs name.

A language's *view* is a directory tree holding exactly the files of its packages and of what
they depend on (``Depends`` and ``Pre-Depends``, read from dpkg's database), the alternatives
links (``/usr/bin/java``) that point into them, the spec's extra ``paths`` (files a package's
install script generated) and the few ``/etc`` files libc reads. Files are hard links to the
installed ones (copies across file systems). A job of that language is shut inside its view
(``zygote.enter_view``): a C job sees gcc, its headers and libraries, a shell, and nothing of
other toolchains or of the host.

Views are built once per content: the directory name hashes the language, every package's
version and the extra paths, so an upgrade makes a new view and a running worker keeps its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rlhub.errors import SandboxError
from rlhub.sandbox.languages import Language
from rlhub.sandbox.runtime import ETC_FILES

DPKG = Path("/var/lib/dpkg")
BUILDER = "1"  # bump when the layout of a view changes
# Every view has a POSIX shell (compilers and launchers run /bin/sh) and the core utilities.
BASE_PACKAGES = ("dash", "coreutils", "libc-bin")  # libc-bin: the C.UTF-8 locale
SKIPPED = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/lintian/")
TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
MOUNT_POINTS = ("tmp", "proc", "dev")
USERS = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"


def default_dir() -> Path:
    """Where views are kept: ``$RLHUB_SANDBOX_RUNTIMES``, else a system cache dir for root."""
    if os.environ.get("RLHUB_SANDBOX_RUNTIMES"):
        return Path(os.environ["RLHUB_SANDBOX_RUNTIMES"])
    if os.geteuid() == 0:
        return Path("/var/cache/rlhub-sandbox/runtimes")
    return Path.home() / ".cache" / "rlhub-sandbox" / "runtimes"


@dataclass
class Package:
    """One installed package: its version, what it depends on (groups of alternatives) and what
    it provides."""

    name: str
    version: str = ""
    depends: list[list[str]] = field(default_factory=list)
    provides: list[str] = field(default_factory=list)


def names_of(field_text: str) -> list[list[str]]:
    """``a (>= 1) | b:any, c`` -> ``[["a", "b"], ["c"]]``."""
    groups = []
    for group in field_text.split(","):
        alts = [re.split(r"[\s(:]", alt.strip(), maxsplit=1)[0] for alt in group.split("|")]
        groups.append([a for a in alts if a])
    return [g for g in groups if g]


def installed(status: Path = DPKG / "status") -> dict[str, Package]:
    """The installed packages of dpkg's database, by name."""
    packages = {}
    for stanza in status.read_text(errors="replace").split("\n\n"):
        fields = dict(re.findall(r"^([\w-]+): ?(.*(?:\n .*)*)", stanza, re.M))
        if "installed" not in fields.get("Status", "").split():
            continue
        pkg = Package(fields["Package"], fields.get("Version", ""))
        for key in ("Pre-Depends", "Depends"):
            pkg.depends += names_of(fields.get(key, ""))
        pkg.provides = [g[0] for g in names_of(fields.get("Provides", ""))]
        packages[pkg.name] = pkg
    return packages


def closure(names: Iterable[str], packages: dict[str, Package]) -> list[str]:
    """``names`` and everything they depend on, installed; a requested one that is not installed
    raises, naming the command that installs it."""
    providers: dict[str, str] = {}
    for pkg in packages.values():
        for virtual in pkg.provides:
            providers.setdefault(virtual, pkg.name)
    missing = [n for n in names if n not in packages and n not in providers]
    if missing:
        raise SandboxError(f"expected the Debian packages {missing} installed, found none; "
                           f"apt-get install {' '.join(missing)}")
    seen: set[str] = set()
    todo = [n if n in packages else providers[n] for n in names]
    while todo:
        name = todo.pop()
        if name in seen or name not in packages:
            continue
        seen.add(name)
        for group in packages[name].depends:
            found = next((a if a in packages else providers[a] for a in group
                          if a in packages or a in providers), None)
            if found:
                todo.append(found)
    return sorted(seen)


def package_files(name: str) -> list[str]:
    """The paths dpkg installed for ``name`` (its ``.list``, with or without the arch)."""
    for listing in (DPKG / "info" / f"{name}.list", *sorted((DPKG / "info").glob(f"{name}:*.list"))):
        if listing.exists():
            return [line for line in listing.read_text().splitlines() if line and line != "/."]
    return []


def alternative_links() -> list[tuple[str, str]]:
    """``(link, name)`` of every alternative (``/usr/bin/java``, ``java``), masters and slaves."""
    links = []
    folder = DPKG / "alternatives"
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        lines = path.read_text().splitlines()
        if len(lines) < 2:
            continue
        links.append((lines[1], path.name))
        rest = lines[2:]
        for i in range(0, len(rest) - 1, 2):
            if not rest[i]:
                break
            links.append((rest[i + 1], rest[i]))
    return links


def link_chain(path: str) -> list[str]:
    """``path`` and every symlink it goes through to its target (``/usr/bin/php`` ->
    ``/etc/alternatives/php`` -> ``/usr/bin/php.default`` -> ...), canonical."""
    chain: list[str] = []
    while os.path.islink(path) and len(chain) < 16:
        chain.append(canonical(path))
        path = os.path.join(os.path.dirname(canonical(path)), os.readlink(path))
    return chain


def canonical(path: str) -> str:
    """``path`` with its parent directories resolved (``/bin/bash`` -> ``/usr/bin/bash``)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


class ViewBuilder:
    """Builds (once) and finds the views of languages; see the module docstring."""

    def __init__(self, directory: Path | None = None):
        self.directory = directory or default_dir()
        self.packages = installed()

    def key(self, spec: Language) -> tuple[str, list[str]]:
        """The view's directory name and the packages it holds."""
        names = closure([*BASE_PACKAGES, *spec.packages], self.packages)
        data = [BUILDER, spec.name, [(n, self.packages[n].version) for n in names],
                list(spec.paths), [p for p in spec.paths if not os.path.exists(p)]]
        digest = hashlib.sha256(json.dumps(data).encode()).hexdigest()[:16]
        return f"{spec.name}-{digest}", names

    def view(self, spec: Language) -> Path:
        """The view of ``spec``, built now if this content has none yet."""
        name, packages = self.key(spec)
        final = self.directory / name
        if final.is_dir():
            return final
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o755)
        temp = self.directory / f".{name}.{os.getpid()}"
        shutil.rmtree(temp, ignore_errors=True)
        try:
            Tree(temp).fill(self.files(packages, spec.paths))
            os.rename(temp, final)
        except OSError as exc:
            shutil.rmtree(temp, ignore_errors=True)
            if not final.is_dir():  # another process may have built it meanwhile
                raise SandboxError(f"local sandbox: could not build the {spec.name} runtime "
                                   f"in {final}: {exc}") from exc
        return final

    def files(self, packages: list[str], paths: Iterable[str]) -> list[str]:
        """Every host path the view holds, canonical, in order (directories before contents)."""
        found = {canonical(p) for name in packages for p in package_files(name)
                 if not p.startswith(SKIPPED)}
        for extra in paths:
            for root, dirs, names in os.walk(extra) if os.path.isdir(extra) else [("", [], [])]:
                found.update(canonical(os.path.join(root, n)) for n in dirs + names)
            if os.path.lexists(extra):
                found.add(canonical(extra))
        for link, name in alternative_links():
            if os.path.realpath(f"/etc/alternatives/{name}") in found:
                found.update(link_chain(link))
        found.update(f"/etc/{name}" for name in ETC_FILES if os.path.exists(f"/etc/{name}"))
        return sorted(found)


class Tree:
    """A view's directory being filled: hard links (or copies) of host files under ``root``."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(mode=0o755)
        for link in TOP_LINKS:
            if os.path.islink(link):
                os.symlink(os.readlink(link), root / link.lstrip("/"))
        for name in MOUNT_POINTS:
            (root / name).mkdir(mode=0o755)
        (root / "etc").mkdir(mode=0o755)
        (root / "etc" / "passwd").write_text(USERS)
        (root / "etc" / "group").write_text("root:x:0:\nnogroup:x:65534:\n")

    def fill(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.add(path)

    def add(self, path: str) -> None:
        target = self.root / path.lstrip("/")
        if os.path.lexists(target) or not os.path.lexists(path):
            return
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        if os.path.islink(path):
            os.symlink(os.readlink(path), target)
        elif os.path.isdir(path):
            target.mkdir(mode=0o755)
        elif os.path.isfile(path):
            try:
                os.link(path, target)
            except OSError:  # another file system, or a file we may not link
                shutil.copy2(path, target)
