"""Named reusable verifiers, looked up by name through the ``rlhub_verifiers`` hook.

Each registry's services hold their own :class:`Verifiers` (``services.verifier(name, options)``).

A verifier class is built as ``cls(options)`` and judges with ``check(task, completion) ->
Verdict``. The built-ins are those in :data:`BUILTIN` (``exact``, ``regex``, ``json-schema``,
``math``, ``python-tests``, ``judge``, ``reward-model``, ``composite``); plugins may add more, and a
plugin's verifier of the same name takes precedence.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlhub.errors import VerifierError, boundary, did_you_mean
from rlhub.refs import load_object

if TYPE_CHECKING:
    from rlhub.protocols import ServicesLike

BUILTIN = {
    "exact": "rlhub.verifiers.basic:Exact",
    "regex": "rlhub.verifiers.basic:Regex",
    "json-schema": "rlhub.verifiers.basic:JsonSchema",
    "math": "rlhub.verifiers.mathv:Math",
    "python-tests": "rlhub.verifiers.pytests:PythonTests",
    "judge": "rlhub.verifiers.judge:Judge",
    "reward-model": "rlhub.verifiers.reward_model:RewardModel",
    "composite": "rlhub.verifiers.compose:Composite",
}


class Verifiers:
    """The named verifiers of one registry's services: ``refs`` maps a name to its class, and each
    ``(name, options)`` is built once (the last 1024 kept).

    A class is called as ``cls(options)``, or ``cls(options, services=services)`` when it takes
    ``services`` (a verifier that runs code in the sandbox, asks a judge or builds other
    verifiers; :class:`rlhub.services.Services`).
    """

    def __init__(self, refs: Callable[[], dict[str, str]], services: ServicesLike):
        self._refs, self.services = refs, services
        self._make = functools.lru_cache(maxsize=1024)(self._build)

    def get(self, name: str, options: dict[str, Any] | None = None) -> Any:
        """The verifier ``name`` built with ``options``; unknown names get a did-you-mean."""
        return self._make(name, json.dumps(options or {}, sort_keys=True))

    def _build(self, name: str, options_json: str) -> Any:
        refs = self._refs()
        if name not in refs:
            raise VerifierError(did_you_mean(name, refs, what="verifier",
                                             listing="rlhub verifiers"))
        with boundary(VerifierError, f"verifier {name!r}"):
            cls = load_object(refs[name])
            options = json.loads(options_json)
            if "services" in inspect.signature(cls).parameters:
                return cls(options, services=self.services)
            return cls(options)


# The reward a data-only domain gets when its file declares none, per built-in verifier.
DEFAULT_REWARDS: dict[str, dict[str, Any]] = {
    "exact": {"range": [0, 1], "components": {"correct": {"weight": 1.0}}},
    "regex": {"range": [0, 1], "components": {"match": {"weight": 1.0}}},
    "json-schema": {"range": [0, 1], "components": {"valid_json": {"weight": 0.0},
                                                   "schema_ok": {"weight": 1.0}}},
    "math": {"range": [0, 1], "components": {"correct": {"weight": 1.0},
                                            "format": {"weight": 0.0}}},
    "python-tests": {"range": [0, 1], "components": {"pass_frac": {"weight": 0.0},
                                                    "all_pass": {"weight": 1.0}}},
    "judge": {"range": [0, 1], "components": {"judge": {"weight": 1.0}}},
    "reward-model": {"range": [0, 1], "components": {"reward_model": {"weight": 1.0}}},
}
