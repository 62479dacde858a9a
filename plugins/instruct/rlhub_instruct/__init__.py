"""rlhub-instruct: verifiable instruction-following domains in IFEval-style constraint families.

``plugin.py`` declares the manifests; ``domain.py`` builds the domains; ``constraints.py`` holds
one small checker per constraint family; ``draft.py`` builds gold completions from the
constraint parameters; ``words.py`` holds the word lists requests are generated from.
"""

__version__ = "1.0.0"
