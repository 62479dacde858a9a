"""rlhub-structured: structured-output domains (JSON Schema, YAML, CSV, regex formats).

``plugin.py`` declares the manifests and the ``json-schema-values`` verifier; ``schemas.py``
generates JSON Schemas of five difficulty levels with matching instances; ``verifiers.py`` checks
them; ``documents.py`` holds the YAML and CSV domains; ``formats.py`` the regex-format domains;
``vocab.py`` the word lists everything is generated from.
"""

__version__ = "1.0.0"
