"""``rlhub-env``: the id verifiers resolves to rlhub's environment (``vf-eval rlhub-env ...``).

verifiers imports an environment as a top-level module named after its id, so this module only
re-exports :mod:`rlhub.integrations.exports.verifiers_env`, where the code and its documentation live.
"""

from rlhub.integrations.exports.verifiers_env import (
    RlhubEnv,
    RlhubHarness,
    RlhubTaskset,
    load_environment,
)

__all__ = ["RlhubEnv", "RlhubHarness", "RlhubTaskset", "load_environment"]
