"""rlhub-verifiers: installed verifiers (0.4) environments as rlhub domains, ``vf/<name>-v1``."""
