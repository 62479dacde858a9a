"""rlhub-reasoning-core: Reasoning Core's seeded procedural tasks as rlhub domains.

:mod:`rlhub_reasoning_core.catalog` holds the static table the plugin lists from (no Reasoning Core
import at discovery) and its generator; :mod:`rlhub_reasoning_core.domain` is the domain, and
:mod:`rlhub_reasoning_core.work` the code that runs inside bounded worker processes.
"""

__version__ = "1.0.0"
