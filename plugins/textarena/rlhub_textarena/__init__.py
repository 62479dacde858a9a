"""rlhub-textarena: TextArena's offline single-player games as multi-turn rlhub domains.

:mod:`rlhub_textarena.catalog` holds the static table the plugin lists from (no TextArena import
at discovery) and its generator; :mod:`rlhub_textarena.domain` plays a game move by move.
"""

__version__ = "1.0.0"
