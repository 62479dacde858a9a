"""Sandbox languages: specs registered through the ``rlhub_sandbox_languages`` hook, never listed.

A :class:`Language` says how a job in that language runs: the file its code is written to, the
command that compiles it (a compile step is a job phase with its own budget, see ``zygote.py``),
the command that runs it, the Debian packages (and extra host paths) its toolchain is made of,
the environment it needs, how its runtime behaves under a memory cap, and a version probe.
rlhub's own languages answer through the hook like any plugin's (``languages.toml``); a plugin
adds a language with one hook implementation returning such a dict.

:class:`Languages` is the registry's set of them: backends, the command line, verifiers and
domains ask it for names, fences and file suffixes. :meth:`Language.plan` turns a request into
what the worker executes: every placeholder filled in, so the worker needs no table of its own.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from importlib import resources
from typing import Any

from rlhub.errors import SandboxError, did_you_mean

NAME = re.compile(r"^[a-z][a-z0-9]*$")
PLACEHOLDERS = ("source", "entry", "heap_mb", "memory_mb")


@dataclass(frozen=True)
class Entry:
    """How the entry class is found (Java, Scala, C#): the last class ``declares`` matches before
    the first ``marker`` (``main``), else ``default``."""

    declares: str
    marker: str
    default: str = "Main"

    def of(self, code: str) -> str:
        first = re.search(self.marker, code)
        end = first.start() if first else len(code)
        names = re.findall(self.declares, code[:end])
        return names[-1] if names and first else self.default


@dataclass(frozen=True)
class Language:
    """One registered language; see the module docstring and ``languages.toml`` for examples.

    ``run`` and ``compile`` are argv templates (placeholders: ``{source}``, ``{entry}``,
    ``{heap_mb}``, ``{memory_mb}``); ``artefacts`` are what the compile step writes (request files
    may not take those names); ``support`` files are written beside the source; ``packages`` and
    ``paths`` are what a job sees of the host (local backend) and what the image holds (docker);
    ``address_space_mb`` is added to the address-space rlimit of runtimes that reserve memory
    they never touch (their heap cap, ``{heap_mb}``, and the job's memory cgroup bound them);
    ``memory_words`` in a failed job's stderr mean it ran out of memory; ``in_process`` runs the
    code in the worker's own interpreter (Python only)."""

    name: str
    source: str
    run: tuple[str, ...]
    compile: tuple[str, ...] = ()
    artefacts: tuple[str, ...] = ()
    support: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    packages: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    address_space_mb: int = 0
    compile_address_space_mb: int = 0
    version: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    fences: tuple[str, ...] = ()
    memory_words: tuple[str, ...] = ()
    entry: Entry | None = None
    in_process: bool = False

    @classmethod
    def parse(cls, name: str, data: Mapping[str, Any], origin: str = "") -> Language:
        """A spec from its dict, with every problem named (expected, found)."""
        where = f"sandbox language {name!r}{f' from {origin}' if origin else ''}"
        if not NAME.match(name):
            raise SandboxError(f"{where}: expected a lower-case word as its name (cpp, csharp)")
        known = {f.name for f in fields(cls)} - {"name"}
        unknown = set(data) - known
        if unknown:
            raise SandboxError(f"{where}: expected keys among {sorted(known)}, found "
                               f"unknown {sorted(unknown)}")
        for key in ("source", "run"):
            if not data.get(key):
                raise SandboxError(f"{where}: expected a non-empty {key!r}")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        if isinstance(values.get("entry"), Mapping):
            values["entry"] = Entry(**values["entry"])
        values["support"] = dict(values.get("support", {}))
        values["env"] = {str(k): str(v) for k, v in dict(values.get("env", {})).items()}
        return cls(name=name, **values)

    @property
    def compiled(self) -> bool:
        return bool(self.compile)

    @property
    def tools(self) -> tuple[str, ...]:
        """The programs the job starts by name (first word of each command), for availability."""
        return tuple(dict.fromkeys(c[0] for c in (self.compile, self.run)
                                   if c and not c[0].startswith(".")))

    def own_files(self) -> tuple[str, ...]:
        """File names a request may not use: the source, support files, named artefacts."""
        return (self.source, *self.support, *(a for a in self.artefacts if "*" not in a))

    def plan(self, code: str, memory_mb: int) -> dict[str, Any]:
        """What the worker's child does for a job of ``code``: everything filled in."""
        entry = self.entry.of(code) if self.entry else "Main"
        values = {"entry": entry, "heap_mb": max(16, memory_mb * 3 // 4), "memory_mb": memory_mb}
        values["source"] = self.source.format(**values)

        def fill(template: str) -> str:
            return template.format(**values)

        return {
            "source": values["source"],
            "support": dict(self.support),
            "compile": [fill(a) for a in self.compile],
            "run": [fill(a) for a in self.run],
            "env": {k: fill(v) for k, v in self.env.items()},
            "address_space_mb": self.address_space_mb,
            "compile_address_space_mb": self.compile_address_space_mb,
            "in_process": self.in_process,
        }

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["entry"] = self.entry and vars(self.entry)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}


class Languages:
    """The registered languages, by name (see the module docstring)."""

    def __init__(self, specs: Iterable[Language]):
        self.by_name = {spec.name: spec for spec in specs}

    def __iter__(self) -> Iterator[Language]:
        return iter(self.by_name.values())

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __len__(self) -> int:
        return len(self.by_name)

    def names(self) -> list[str]:
        return sorted(self.by_name)

    def get(self, name: str) -> Language:
        """The language ``name``; an unknown one names the choices and a near match."""
        if name not in self.by_name:
            raise SandboxError(f"language: expected one of {self.names()}; " + did_you_mean(
                name, self.names(), what="sandbox language", listing="rlhub sandbox info"))
        return self.by_name[name]

    def by_suffix(self, suffix: str) -> Language | None:
        return next((s for s in self if suffix in s.suffixes), None)

    def by_fence(self, tag: str) -> Language | None:
        tag = tag.strip().lower()
        return next((s for s in self if tag == s.name or tag in s.fences), None)

    def packages(self) -> list[str]:
        return sorted({p for spec in self for p in spec.packages})


def from_declarations(declared: Iterable[tuple[str, Mapping[str, Mapping[str, Any]]]]
                      ) -> Languages:
    """Languages from ``(origin, {name: spec dict})`` pairs, later origins overriding earlier."""
    specs: dict[str, Language] = {}
    for origin, table in declared:
        for name, data in table.items():
            specs[name] = Language.parse(name, data, origin)
    return Languages(specs.values())


def builtin_table() -> dict[str, dict[str, Any]]:
    """rlhub's own language specs (``languages.toml``), as the hook returns them."""
    text = resources.files("rlhub.sandbox").joinpath("languages.toml").read_text()
    return tomllib.loads(text)


def builtin() -> Languages:
    """rlhub's own languages: what a backend built without a registry knows."""
    return from_declarations([("rlhub", builtin_table())])
