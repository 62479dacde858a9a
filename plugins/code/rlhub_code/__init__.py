"""rlhub-code: code domains on the rlhub sandbox.

Python function synthesis with hidden unit tests (many procedural families), code repair, bash
scripts checked by their output, SQL queries over generated SQLite databases, and regex synthesis.
The domains are declared in :mod:`rlhub_code.plugin`; their code lives beside it.
"""

__version__ = "1.0.0"
