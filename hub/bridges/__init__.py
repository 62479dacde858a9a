"""Bridges out: rlhub's domains for other ecosystems' clients and trainers.

``openenv_server``: OpenEnv's WebSocket protocol, mounted by ``rlhub serve --openenv``.
``verifiers_env``: a verifiers (0.4) taskset over any rlhub mixture, for ``vf-eval`` and prime-rl.
"""
