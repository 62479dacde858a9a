"""rlhub-agentic: multi-turn domains in which the environment answers every turn.

The model acts with tagged actions (tool calls, SQL queries, guesses, questions), sees the
environment's ``<result>`` observations, and ends the episode with ``<answer>...</answer>``. The
shared machinery is in :mod:`rlhub_agentic.protocol` (parsing actions) and
:mod:`rlhub_agentic.episode` (the base domain and episode); each family has its own module.
"""

__version__ = "1.0.0"
