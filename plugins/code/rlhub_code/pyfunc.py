"""Python function synthesis: one procedural family per domain, judged by ``python-tests``.

The manifest names the family in ``params.family``; every task is one generated function spec
with its hidden tests in ``task.meta["tests"]`` and its name in ``task.meta["entry_point"]``.
"""

from __future__ import annotations

import random
from typing import Any

from rlhub import Domain, Manifest
from rlhub_code.families import family
from rlhub_code.spec import informative_spec, spec_task


class PyFuncDomain(Domain):
    """Write the function the prompt describes; see the module docstring."""

    def __init__(self, manifest: Manifest):
        super().__init__(manifest)
        self.family_name = self.params["family"]
        self.make_spec = family(self.family_name)

    def generate(self, rng: random.Random, split: str, index: int) -> dict[str, Any]:
        return spec_task(informative_spec(self.make_spec, rng), self.family_name)


def make(manifest: Manifest) -> PyFuncDomain:
    """Factory named by the manifests of the ``code/py-*`` domains."""
    return PyFuncDomain(manifest)
