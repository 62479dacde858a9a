r"""rlhub-math: procedural math domains (arithmetic to matrices) with exact answers in ``\\boxed{}``.

The plugin's listing lives in :mod:`rlhub_math.plugin` (manifests from :mod:`rlhub_math.catalog`);
the domain code in :mod:`rlhub_math.domain` is imported only when a domain is first used.
"""

__version__ = "1.0.0"
