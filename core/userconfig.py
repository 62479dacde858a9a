"""The user's own configuration: judge and reward-model endpoints, and the untrusted policy.

Everything that may carry a secret or widen a sandbox lives here, in a file the user writes,
never in an environment someone else published. The file is ``$RLHUB_CONFIG``, else
``$XDG_CONFIG_HOME/rlhub/config.yaml``, else ``~/.config/rlhub/config.yaml``; a missing file is an
empty configuration. It is validated against ``schemas/userconfig.schema.json``::

    endpoints:                       # judges and reward models, by name
      grader:
        kind: judge                  # an OpenAI-compatible chat endpoint
        url: http://127.0.0.1:8000/v1
        model: qwen2.5-7b-instruct
        api_key_env: GRADER_KEY      # the variable holding its key (default RLHUB_JUDGE_API_KEY)
        concurrency: 8               # also deadline_s, timeout_s, retries, backoff_s
      rm:
        kind: reward-model
        path: /models/my-rm          # also device, dtype, batch_size, max_length, label, ...
    defaults: {judge: grader, reward-model: rm}
    untrusted:                       # caps on environments pulled without --trust-remote-code
      limits: {memory_mb: 512, wall_s: 10, network: false}   # default: the standard limits
      verify_timeout_s: 60
      grants:                        # more for one environment, by name
        mydata: {limits: {memory_mb: 2048}}
    datasets:                        # the most one dataset may hold once read (any domain)
      max_rows: 1000000              # rows (default 1,000,000)
      max_bytes: 1073741824          # bytes once decoded (default 1 GiB)
    pull:                            # what `rlhub pull` accepts (trusted or not)
      max_files: 10000               # files in a bundle (default 10,000)
      max_bytes: 4294967296          # their total size (default 4 GiB)
      max_depth: 8                   # folders deep (default 8)
      probe_tasks: 2                 # tasks each domain's integrity probes run on (0: none)
      probe_budget_s: 120            # time for every domain's probes together
      hackable: refuse               # a domain that pays a probe: refuse, or mark (install it
                                     # marked hackable by that probe class)
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlhub.errors import RlhubError

ENDPOINT_KINDS = ("judge", "reward-model")


class ConfigError(RlhubError):
    """The user's configuration file is unreadable or invalid, or names an unknown endpoint."""


def config_path() -> Path:
    """Where the user's configuration lives (see the module docstring)."""
    explicit = os.environ.get("RLHUB_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "rlhub" / "config.yaml"


@dataclass(frozen=True)
class UserConfig:
    """A validated configuration and the file it came from (named in every message)."""

    data: dict[str, Any] = field(default_factory=dict)
    path: Path = field(default_factory=config_path)

    def endpoints(self, kind: str) -> dict[str, dict[str, Any]]:
        """Every endpoint of ``kind`` (``judge`` or ``reward-model``), by name."""
        found = self.data.get("endpoints", {})
        return {n: e for n, e in sorted(found.items()) if e["kind"] == kind}

    def endpoint(self, name: str, kind: str) -> dict[str, Any]:
        """The endpoint ``name``, which must be of ``kind``; errors list what exists."""
        known = self.endpoints(kind)
        if name not in known:
            listed = ", ".join(known) or "none"
            raise ConfigError(
                f"{kind} endpoint {name!r}: expected it under endpoints: in {self.path} (with "
                f"kind: {kind}), found {listed}"
            )
        return known[name]

    def default(self, kind: str) -> str | None:
        """The name of the default endpoint of ``kind``, if the user chose one."""
        return self.data.get("defaults", {}).get(kind)

    def untrusted(self) -> dict[str, Any]:
        """The ``untrusted:`` section (caps and grants), possibly empty."""
        return dict(self.data.get("untrusted", {}))

    def section(self, name: str) -> dict[str, Any]:
        """A section of settings (``datasets``, ``pull``), possibly empty."""
        return dict(self.data.get(name, {}))


_CACHE: dict[Path, tuple[tuple[int, int], UserConfig]] = {}
_CACHE_LOCK = threading.Lock()


def load_user_config(path: str | os.PathLike[str] | None = None) -> UserConfig:
    """Read and validate the configuration (re-read when the file changes)."""
    where = Path(path) if path is not None else config_path()
    try:
        stat = where.stat()
    except FileNotFoundError:
        return UserConfig({}, where)
    except OSError as exc:
        raise ConfigError(f"user config {where}: expected a readable file, found {exc}") from exc
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _CACHE_LOCK:
        cached = _CACHE.get(where)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    config = UserConfig(_parse(where), where)
    with _CACHE_LOCK:
        _CACHE[where] = (stamp, config)
    return config


def _parse(where: Path) -> dict[str, Any]:
    import yaml

    from rlhub.manifest import schema_errors

    try:
        data = yaml.safe_load(where.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"user config {where}: expected YAML, found {exc}") from exc
    errors = schema_errors("userconfig", data)
    if errors:
        raise ConfigError(f"user config {where}: " + "; ".join(errors))
    for kind in ENDPOINT_KINDS:
        name = data.get("defaults", {}).get(kind)
        if name is not None:
            UserConfig(data, where).endpoint(name, kind)  # a default must exist
    return data
