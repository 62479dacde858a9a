"""Publishing: environment bundles, their locks and the transports that carry them.

``bundle`` builds and verifies a bundle; ``lock`` writes and checks ``rlhub.lock``; ``remote``
parses references and holds the fsspec transport (``file://``, ``s3://``, ``memory://``); ``hf``
the Hugging Face Hub transport; ``push`` and ``pull`` move bundles; ``admission`` and ``pins``
decide what a pull may install; ``card``, ``wheel`` and ``scaffold`` (``rlhub new plugin``, with
its ``templates/``) make what gets published. Errors of this boundary are in ``errors``.
"""
