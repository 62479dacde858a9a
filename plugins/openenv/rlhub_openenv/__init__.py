"""rlhub-openenv: OpenEnv environment servers as rlhub domains, ``openenv/<name>-v1``."""
