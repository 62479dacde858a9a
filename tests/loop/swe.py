"""The ``swe`` plugin under its own name, for subprocesses that load plugins by module
(``RLHUB_PLUGINS``; a plugin's namespace is its module's name)."""

from rlhub_swe.plugin import rlhub_domains

__all__ = ["rlhub_domains"]
