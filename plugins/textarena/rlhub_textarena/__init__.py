"""rlhub-textarena: TextArena's offline games as multi-turn rlhub domains.

:mod:`rlhub_textarena.catalog` holds the static table the plugin lists from (no TextArena import
at discovery) and its generator; :mod:`rlhub_textarena.domain` plays a game move by move, and
:mod:`rlhub_textarena.opponents` holds the built-in opponents of the two-player games.
"""

__version__ = "1.0.0"
