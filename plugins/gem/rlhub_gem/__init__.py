"""rlhub-gem: GEM's offline games that reach rlhub through no other plugin.

:mod:`rlhub_gem.catalog` holds the static table (what is bridged, what is left out and why, which
GEM environment is the same task as a TextArena or reasoning-gym domain) and its generator;
:mod:`rlhub_gem.domain` plays a GEM game move by move.
"""

__version__ = "1.0.0"
