"""``rlhub-env``: the id verifiers resolves to rlhub's environment (``vf-eval rlhub-env ...``).

verifiers imports an environment as a top-level module named after its id, so this module only
re-exports :mod:`rlhub.hub.bridges.verifiers_env`, where the code and its documentation live.
"""

from rlhub.hub.bridges.verifiers_env import (
    RlhubEnv,
    RlhubHarness,
    RlhubTaskset,
    load_environment,
)

__all__ = ["RlhubEnv", "RlhubHarness", "RlhubTaskset", "load_environment"]
