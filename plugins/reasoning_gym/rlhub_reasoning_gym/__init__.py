"""rlhub-reasoning-gym: every scorable reasoning-gym generator as an rlhub domain ``rg/<name>-v1``.

``plugin`` declares the domains from the static table in ``catalog.json`` (listing never imports
reasoning_gym); ``domain`` builds and scores them; ``catalog`` regenerates the table; ``codec`` and
``guards`` keep entries JSON-safe and answers harmless before reasoning-gym sees them.
"""
