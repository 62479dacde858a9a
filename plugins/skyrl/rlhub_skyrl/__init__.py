"""rlhub-skyrl: SkyRL-gym's text environments as rlhub's ``skyrl`` verifier.

SkyRL-gym ships environments, not tasks: each scores a row of a dataset that SkyRL's example
scripts build from the Hugging Face Hub. :mod:`rlhub_skyrl.verifier` runs the registered
single-turn environments on a data-only domain's rows; :mod:`rlhub_skyrl.catalog` says which
environments are bridged and why the others are left out.
"""

__version__ = "1.0.0"
